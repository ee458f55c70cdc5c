"""Hints of lesson 6 (multiprocess): grader/public/multiprocess.py and
grader/hidden/multiprocess.py. The texts of the launcher that runs the processes are in
grader.messages (grader.launcher) and grader.lessons.texts (grader.lessons.cluster)."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_TOTAL_NOT_INT = (
    "Return the total as a Python int (int(...)), not as a NumPy or JAX array: the caller "
    "uses it as a plain number, the same in every process."
)
HINT_TOTAL_OWN_COUNT = (
    "Each process returned its own count: a process's count is only its part of the total. "
    "Every process must take part in combining them, for example with "
    "multihost_utils.process_allgather(np.asarray(count)), which gives every process the "
    "counts of all processes, one per process."
)
HINT_READS_TWICE = (
    "Some ranges are listed more than once: devices that hold the same block (along a mesh "
    "axis the rows are not split over) need it read once. Keep each [start, stop] once, "
    "sorted."
)
HINT_READS_OTHER_PROCESSES = (
    "The ranges include blocks that only other processes' devices hold: in one process every "
    "device is this process's, in two they are not. Ask the sharding about this process's "
    "own devices: sharding.addressable_devices_indices_map(shape), rather than "
    "devices_indices_map, which covers every device of every process."
)
HINT_MEAN_AXIS = (
    "The result must hold one mean per column: average over the rows, not over the columns "
    "or over every value."
)
HINT_UNEVEN_PADDING = (
    "The padding rows were counted as real rows: their zeros lower the mean. Build a mask "
    "that is 1 for the real rows and 0 for the padding, global like the rows, and divide "
    "the sum of the masked rows by the sum of the mask."
)
HINT_UNEVEN_MEAN_OF_MEANS = (
    "The result is the mean of the processes' means, which weighs a process of 5 rows as "
    "much as one of 8. Divide the sum of every real row by the number of real rows of all "
    "processes: both come from the global batch and its mask under one jax.jit."
)
HINT_MEAN_OF_LOCAL_ROWS = (
    "Each process returned the mean of its own rows only: with several processes, local_rows "
    "is only a part of the batch. Build global arrays from the parts "
    "(jax.make_array_from_process_local_data), take the mean under jax.jit with a replicated "
    "result (out_shardings=NamedSharding(mesh, P())), and read that result with np.asarray."
)

HINT_FETCH_NON_ADDRESSABLE = (
    "A process cannot read an array whose blocks live on other processes' devices "
    "(np.asarray, float(), printing its values). Compute what you need under jax.jit with a "
    "replicated result (out_shardings=NamedSharding(mesh, P())), which every process can read, "
    "or read only this process's blocks (x.addressable_shards)."
)
HINT_PROCESSES_DIVERGED = (
    "The processes waited for each other until they were stopped: they did not all run the "
    "same computations on the global arrays. Every process must call every jitted computation "
    "on a global array, with the same shapes; keep what differs per process (printing, "
    "saving) outside of them."
)
HINT_DEVICE_PUT_PER_PROCESS = (
    "jax.device_put takes the value of the whole global array, so every process must pass the "
    "same one; here each process passed its own rows. Build the global array from each "
    "process's part with jax.make_array_from_process_local_data(NamedSharding(mesh, "
    "P('data')), local_rows)."
)

#: The errors that are this lesson's, (pattern of the exception's text, hint); the last is
#: the launcher's own MSG_CLUSTER_TIMEOUT (grader.messages).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"spans non-addressable"), HINT_FETCH_NON_ADDRESSABLE),
    (re.compile(r"passed to device_put is not the same on each process"),
     HINT_DEVICE_PUT_PER_PROCESS),
    (re.compile(r"of \d+ did not finish within .* processes were stopped"),
     HINT_PROCESSES_DIVERGED),
)
