"""Hints of lesson 6 (multiprocess): grader/public/multiprocess.py and
grader/hidden/multiprocess.py. The texts of the launcher that runs the processes are in
grader.messages (grader.launcher) and grader.lessons.texts (grader.lessons.cluster)."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_GB_NOT_PLACED = (
    "The result is not split over a mesh: build a 1-D mesh named 'data' of every device, "
    "Mesh(jax.devices(), ('data',)), and the global array with "
    "jax.make_array_from_process_local_data(NamedSharding(mesh, P('data')), local_rows)."
)
HINT_GB_SPEC = (
    "The batch is on a mesh but not split by rows: each device must hold a block of rows, "
    "NamedSharding(mesh, P('data')) on a 1-D mesh of every device named 'data'."
)
HINT_MEAN_AXIS = (
    "The result must hold one mean per column: average over the rows, jnp.mean(batch, "
    "axis=0), not over the columns or over every value."
)
HINT_GB_LOCAL_ONLY = (
    "In each process the 'global' batch holds that process's rows only: its shape is the "
    "shape of local_rows. jax.device_put, like a mesh of jax.local_devices(), takes the rows "
    "for the whole array. Build the mesh from jax.devices(), which lists the devices of every "
    "process, and let jax.make_array_from_process_local_data(NamedSharding(mesh, P('data')), "
    "local_rows) put each process's rows in their place in the global array."
)
HINT_MEAN_OF_LOCAL_ROWS = (
    "Each process returned the mean of its own rows only: with several processes, local_rows "
    "is only a part of the batch. Build the global batch from them "
    "(jax.make_array_from_process_local_data), take the mean under jax.jit with a replicated "
    "result (out_shardings=NamedSharding(mesh, P())), and read that result with np.asarray."
)
HINT_SAME_KEY_EVERY_PROCESS = (
    "These are the numbers of the key itself, which every process holds, so every process "
    "draws the same rows. Draw from jax.random.fold_in(key, jax.process_index()) instead: a "
    "key of its own in each process."
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
