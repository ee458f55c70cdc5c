"""Every text the grader shows a student or an instructor, in one place.

Templates are named module-level strings; hints are matched to the likely mistake.
"""

from __future__ import annotations

import re

# --- status of an exercise or a test ---------------------------------------------------
PASSED = "passed"
FAILED = "failed"
PARTIAL = "partial"
ERROR = "error"
NOT_ATTEMPTED = "not attempted"
NOT_FOUND = "not found"
TIMEOUT = "timeout"
CRASHED = "crashed"

# --- messages ---------------------------------------------------------------------------
MSG_NOT_FOUND = "not found: no function named `{name}` is defined in the submission"
MSG_NOT_CALLABLE = "not found: `{name}` is defined but is a {kind}, not a function"
MSG_NOT_ATTEMPTED = "not attempted: `{name}` still raises NotImplementedError"
MSG_RAISED = "`{name}` raised {type}: {message}"
MSG_TIMEOUT = "stopped after {seconds:g} s on {devices} device(s): it took too long or hung"
MSG_CRASHED = "the process running `{name}` on {devices} device(s) ended: {how}"
MSG_BAD_DATA = "`{name}` returned something the grader cannot read: {problem}"
MSG_NOT_RUN = "not run: {reason}"
MSG_UNVERIFIED = ("the grader could not check how `{name}` computes from the program it "
                  "compiles to: {why}")
MSG_NOT_VERIFIED = ("what was measured of how `{name}` computes did not come from the program "
                    "it compiles to, so it does not count")
MSG_HOST_CALLBACK = ("jax.export cannot save a program that calls back into Python "
                     "(jax.debug.print, jax.debug.callback, jax.pure_callback), and how a "
                     "function computes is measured on its saved program: take such calls out "
                     "to have it measured")
MSG_HOW_NEEDS_VALUES = ("how `{name}` computes counts only once what it computes is right: "
                        "see its other tests")
MSG_DIFFERS = ("how `{name}` computes counts only for a program that computes what the exercise "
               "asks, and the program it compiles to does not: run on new inputs next to the "
               "reference solution's, {why}")
MSG_VERIFIER_FAILED = "the grader could not start a verifier on {devices} device(s): {why}"
MSG_VERIFIER_TIME_UP = ("compiling and running the programs of this exercise took over the "
                        "{seconds:g} s they may take in all")
MSG_VERIFIER_DIED = "compiling or running it failed: {how}"
MSG_REPLY_TOO_LARGE = "its reply is larger than any test needs ({what})"
MSG_REPLY_UNREADABLE = "its reply is not valid JSON"
MSG_REPLIES_TOO_LARGE = ("the replies of its tests on {devices} device(s) are larger than any "
                         "test needs (over {items:,} values in all)")
MSG_NO_EXPECTED = (
    "no expected values are stored for {devices} device(s); run the first cell of the "
    "notebook (it asks for {default} devices) and restart the kernel if needed"
)
WARN_NO_SANDBOX = (
    "warning: bubblewrap (bwrap) is not installed, so submissions run as plain processes that "
    "can read and write what you can; see the README"
)
WARN_SANDBOX_OFF = (
    "warning: --no-sandbox: submissions run as plain processes that can read and write what "
    "you can; see the README"
)
WARN_NO_CGROUPS = (
    "warning: no control group can be made here, so a submission's processes are capped in "
    "number{root} but not in their share of the CPU: busy ones slow down the other --jobs; "
    "see the README"
)
WARN_NOT_KEPT = (
    "warning: {student} was not graded to the end ({why}); the gradebook shows what was "
    "graded, but it is not kept: run the same command again to grade {student} anew"
)
INTERRUPTED = (
    "interrupted: the students graded to the end are kept in {out}; run the same command again "
    "to finish the batch"
)
MSG_GRADER_FAILED = "the grader failed on this submission ({error}); please report it"
MSG_WORKER_FAILED = "the grader could not start a worker on {devices} device(s): {why}"
MSG_RUN_TOO_LONG = ("the submission used up the {seconds:g} s it may take in all on "
                    "{devices} device(s), so the rest was not run")
MSG_RESTORED = ("the submission changed the grader's or JAX's own code ({what}); it was put "
                "back before each of its functions was measured")
MSG_TAMPERED = ("`{name}` changed the grader's or JAX's own code while it was measured "
                "({what}), so the measurement does not count")
MSG_THREADS = ("`{name}` was not measured: the submission left {count} thread(s) running, "
               "which could change the grader while it measures; join your threads (or shut "
               "your thread pools down) before your code finishes")
MSG_MORE_PROBLEMS = "and {count} more problem(s) not listed"
MSG_LOOKUP_FAILED = ("after the cells ran, looking their functions up {how}, so nothing "
                     "could be measured on {devices} device(s)")

MSG_SHAPE = "{where} has shape {got} but should have shape {want}"
MSG_KIND = "{where} holds {got} values but should hold {want} values"
MSG_VALUES = "{where} has the wrong values"
MSG_TYPE = "{where} is {got} but should be {want}"
MSG_KEYS = "{where} has keys {got} but should have keys {want}"
MSG_LENGTH = "{where} has {got} entries but should have {want}"

MSG_NOT_TRACED = "no {primitive} over axis {axis!r} was traced (found: {seen})"
MSG_NOT_COMPILED = "the compiled code has no {op}, so no data moved between devices"
MSG_MESH = "expected a shard_map over the mesh {want}, found {got}"
MSG_DEVICES = "expected a program on {want} device(s), as the exercise's mesh has; it runs on {got}"

MSG_CELL_RAISED = "{where} raised {type}: {message}"
MSG_CELL_TIMEOUT = "{where} did not finish within {seconds:g} s and was skipped"
MSG_CELL_CRASHED = "{where} ended the process ({how}) and was skipped"
MSG_FILE_UNREADABLE = "{file}: {why}; nothing in it was graded"

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_FORGOT_PSUM = (
    "The result equals what the first device computes on its own block: did you forget the "
    "psum that adds up the partial results of all devices?"
)
HINT_NOT_REPLICATED = (
    "out_specs=P() promises that every device holds the same value, but each device holds "
    "its own partial result: all-reduce it first with jax.lax.psum(..., axis_name)."
)
HINT_AXIS_NAME = (
    "A collective names an axis that is not in scope: the axis_name of the collective must "
    "match the mesh axis (shard_map) or the axis_name given to pmap."
)
HINT_RESHARD = (
    "On an Explicit mesh (jax.make_mesh makes Explicit axes unless told otherwise), shard_map "
    "does not move data for you: each input must already have the sharding its in_specs entry "
    "names. Place it first with jax.reshard(x, NamedSharding(mesh, P('data'))) or "
    "jax.device_put, or build the mesh with Auto axes: jax.sharding.Mesh(devices, names), or "
    "jax.make_mesh(..., axis_types=(AxisType.Auto,) * number_of_axes)."
)
HINT_DEVICES_SET_TOO_LATE = (
    "The number of CPU devices can only be set before JAX starts its backend, and something "
    "had already used JAX. In a notebook, restart the kernel and run the set-up cell "
    "(use_cpu_devices) before anything else; in an exercise function, do not set the device "
    "count at all: work with the devices there are, jax.devices() and jax.device_count()."
)
HINT_PMAP_INPUT = (
    "jax.pmap maps over the leading axis, one entry per device: it neither cuts a batch into "
    "per-device slices nor moves an input already placed on other devices. Reshape the batch "
    "to (jax.local_device_count(), rows_per_device, ...) yourself and pass an uncommitted "
    "array (NumPy, or jnp without device_put), or use jax.shard_map with in_specs=P('data'), "
    "which takes the whole batch and splits it."
)
HINT_PMAP_SQUEEZE = (
    "Axis 0 could not be squeezed away because its size is not 1. If this comes from "
    "jax.pmap, the leading axis was a multiple of the number of devices instead of equal to "
    "it. " + HINT_PMAP_INPUT
)
HINT_SPEC_TOO_LONG = (
    "A PartitionSpec has more entries than the array has dimensions: it takes at most one "
    "entry per dimension (entries left out at the end count as None). Drop the extra ones, "
    "e.g. P('x', 'y') for a 2-D array rather than P('x', None, 'y') from a 3-D example. On an "
    "Explicit mesh JAX only says (rank, spec), in a bare AssertionError."
)
HINT_DEVICE_COUNT = (
    "The function seems to assume a fixed number of devices: use jax.devices() or "
    "jax.device_count() so it works on however many there are."
)
HINT_DOES_NOT_DIVIDE = (
    "A dimension of the array does not split evenly over its mesh axis: check that the spec "
    "puts each mesh axis on the dimension you meant, and that the mesh is built from the "
    "devices there are (not from a fixed 8)."
)
HINT_MISSING_PSUM = "The value is right, but no psum is traced: the all-reduce must be there."
HINT_WRONG_DIRECTION = (
    "The blocks moved the wrong way round the ring: device i must send to device i + 1, "
    "so the permutation pairs are (i, (i + 1) % n)."
)
HINT_FORGOT_PMEAN = (
    "The new parameters match a step on one device's batch only: average the gradients "
    "across devices with jax.lax.pmean before updating."
)
HINT_PSUM_NOT_PMEAN = (
    "The step is n times too large: the gradients were summed over devices (psum) instead "
    "of averaged (pmean)."
)
HINT_NOT_PER_DEVICE = (
    "The result must have one row per device (the leading axis of a pmap result), not a "
    "single value."
)

# Errors JAX raises for the usual mistakes, matched on the exception's text.
ERROR_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"out_specs.*replicat", re.S), HINT_NOT_REPLICATED),
    (re.compile(r"unbound axis name|axis name.*not (found|bound)|must refer to an axis",
                re.I), HINT_AXIS_NAME),
    (re.compile(r"in_specs.*does not match the specs of the input", re.S), HINT_RESHARD),
    (re.compile(r"jax_num_cpu_devices config should be updated before backends|JAX has "
                r"already started with \d+ device\(s\), so it cannot be given"),
     HINT_DEVICES_SET_TOO_LATE),
    (re.compile(r"_internal_pmap_axis_name"), HINT_PMAP_INPUT),
    (re.compile(r"cannot select an axis to squeeze out .*dimensions=\(0,\)"), HINT_PMAP_SQUEEZE),
    (re.compile(r"only valid for values of rank at least|^\(\d+, P\(.*\)\)$|in_specs entry "
                r"which is too long"), HINT_SPEC_TOO_LONG),
    (re.compile(r"implies that array axis .* is partitioned|evenly divid", re.S),
     HINT_DOES_NOT_DIVIDE),
    (re.compile(r"devices? (available|but)|number of devices|more devices", re.I),
     HINT_DEVICE_COUNT),
)


def error_hint(message: str) -> str | None:
    """The hint for an exception's text, if it is one of the usual mistakes."""
    for pattern, hint in ERROR_HINTS:
        if pattern.search(message):
            return hint
    return None

# --- lesson 05_training: hints ---------------------------------------------------------------
HINT_DP_GRADS_SUMMED = (
    "The gradients are n times too large (n devices): they were summed over 'data' instead of "
    "averaged. Inside shard_map, jax.grad with respect to parameters that arrive replicated "
    "(in_specs P()) already sums their gradients over the devices, and a pmean of that sum "
    "changes nothing. Make the parameters device-varying first, with "
    "jax.lax.pcast(params, 'data', to='varying'), then pmean the gradients (and use pmean, "
    "not psum)."
)
HINT_DP_FORGOT_PMEAN = (
    "The gradients are those of the first device's rows alone: average the per-device "
    "gradients over 'data' with jax.lax.pmean before returning them with out_specs=P()."
)
HINT_DP_ONE_DEVICE = (
    "Everything ran on one device: the new parameters live on a single device and no "
    "all-reduce was compiled. Put the batch on the mesh split by rows (NamedSharding(mesh, "
    "P('data'))) and the parameters replicated (P()), for example with the in_shardings and "
    "out_shardings of jax.jit."
)
HINT_DP_NOT_REPLICATED = (
    "Every device must hold the whole of each new parameter: return them replicated, for "
    "example with out_shardings=NamedSharding(mesh, P()) in jax.jit."
)
HINT_TP_FORGOT_PSUM = (
    "The result is what the first 'model' block computes from its own hidden units: add up "
    "the partial outputs of all blocks with jax.lax.psum(..., 'model') after the second matmul."
)
HINT_TP_ONE_ALL_REDUCE = (
    "This tensor-parallel MLP needs exactly one all-reduce and no other communication: with w1 "
    "split by columns (P(None, 'model')) and w2 by rows (P('model', None)), each device applies "
    "relu to its own hidden units, and one psum over 'model' adds the partial outputs. Nothing "
    "needs to be gathered."
)
HINT_TP_PSUM_AXIS = (
    "The partial outputs differ along 'model', so the psum must be over 'model'; each 'data' "
    "block keeps its own rows."
)
HINT_FSDP_GATHER_WEIGHTS = (
    "FSDP moves weights, not activations: the compiled code should all-gather the row blocks "
    "of w1 and w2 (in_specs P('data', None)), with jax.lax.all_gather(w, 'data', axis=0, "
    "tiled=True) inside the shard_map, while x and the hidden activations stay where they are."
)
HINT_FSDP_GATHER_INSIDE = (
    "No all_gather over 'data' is traced. If the weights enter shard_map replicated (in_specs "
    "P()), jax.jit gathers them before the shard_map starts, out of your hands. Keep them "
    "split (P('data', None)) and all_gather them inside, right where they are used."
)

# --- lesson 04_prng: hints -------------------------------------------------------------------
HINT_SAME_KEY_EVERY_DEVICE = (
    "Every device drew the same numbers: they all used the same key. Give each device a key "
    "of its own inside shard_map: fold the device's jax.lax.axis_index('data') into the key "
    "with jax.random.fold_in, or, given one key per device, split the key array over 'data' "
    "(in_specs=P('data')) and draw from keys[0] of each block."
)
HINT_ONE_GLOBAL_DRAW = (
    "These are the numbers of one draw of the whole array from the key itself. Here every "
    "device must draw its own block, from jax.random.fold_in(key, jax.lax.axis_index('data')), "
    "inside jax.shard_map."
)
HINT_STACKED_LIKE_PMAP = (
    "The result has one row per device, stacked as pmap does. shard_map with "
    "out_specs=P('data') lays the blocks end to end: return a 1-D array of "
    "n_devices * n_per_device numbers."
)
HINT_NO_AXIS_INDEX = (
    "No jax.lax.axis_index('data') was traced: inside shard_map a device finds its position "
    "with axis_index, and fold_in mixes it into the key to give that device its own stream."
)
HINT_LEGACY_KEYS = (
    "The keys are raw uint32 pairs (the legacy jax.random.PRNGKey format). Return typed keys: "
    "jax.random.split of a typed key (jax.random.key) gives them; do not apply key_data."
)
HINT_KEYS_NOT_PLACED = (
    "Device i must hold key i: place the keys with jax.device_put(keys, NamedSharding(mesh, "
    "P('data'))) on a mesh of jax.devices() in order, one key per device."
)
HINT_KEY_BLOCK = (
    "Inside shard_map a device's block of a key array keeps its leading axis: it has shape "
    "(1,), not (), and samplers want a single key. pmap removed that axis; with shard_map, "
    "take the key out of the block with keys[0]."
)
HINT_MASK_PER_DEVICE = (
    "The mask depends on how x is split over devices: it was drawn per device. Draw one mask "
    "for the whole array, jax.random.bernoulli(key, 1 - rate, x.shape), under jax.jit: with "
    "jax_threefry_partitionable on, each device computes its own part of it, and the numbers "
    "are the same on any number of devices."
)
HINT_DROPOUT_UNSCALED = (
    "The kept values were not rescaled: divide them by (1 - rate), so that every entry keeps "
    "its expected value."
)
HINT_DROPOUT_KEEP_PROBABILITY = (
    "The mask keeps entries with probability rate instead of 1 - rate: the p of "
    "jax.random.bernoulli is the probability of True, here of keeping an entry."
)
HINT_DROPOUT_NOT_SPLIT = (
    "The result is not split over the devices like x: keep x as it comes (no gathering, no "
    "replicating); elementwise operations under jax.jit keep the sharding of x."
)
HINT_DROPOUT_COMMUNICATES = (
    "The compiled dropout moves data between devices, yet every device has what it needs: "
    "keep x split as it comes and draw the mask for x.shape under jax.jit, without gathering "
    "or replicating anything."
)

ERROR_HINTS += (
    (re.compile(r"accepts a single key, but was given a key array of shape \(1,"), HINT_KEY_BLOCK),
)

# --- lesson 02_jit_sharding: hints -------------------------------------------------------------
HINT_SPLIT_CONTRACTION = (
    "The contracted dimension (the columns of x, the rows of w) is split over a mesh axis, so "
    "each device computes partial sums of the output and XLA adds them up with an all-reduce. "
    "Split only dimensions that survive into the output: the rows of x and the columns of w."
)
HINT_SAME_AXIS_TWICE = (
    "The rows of x and the columns of w are split over the same mesh axis: one axis cannot "
    "split both dimensions of the output, so XLA gathers an operand first. Give them "
    "different mesh axes."
)
HINT_COUNTED_LOWERED = (
    "Every count is zero although XLA put collectives into this program: did you read the "
    "lowered StableHLO (.lower(...).as_text())? Collectives are inserted when XLA compiles: "
    "read jax.jit(f).lower(*args).compile().as_text()."
)
HINT_COUNTED_TWICE = (
    "A collective was counted more than once. Count instructions by their opcode, the word "
    "right before '(' after the result type: an instruction's name (%all-gather = ...) and "
    "the operands of later instructions (fusion(%all-gather)) repeat the word, and an async "
    "pair op-start / op-done is a single collective."
)
HINT_NORMS_FROM_ROWS = (
    "The norms were computed from row blocks (an all-reduce adds up partial sums of squares) "
    "and the result is still split by rows: reshard x to columns first, with "
    "jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P(None, 'data'))), then compute."
)
HINT_CONSTRAINED_TOO_LATE = (
    "The program has the all-to-all and an all-reduce as well: the norms were computed from "
    "row blocks before the data moved. Put with_sharding_constraint on x first, so that each "
    "device holds whole columns when it computes their norms."
)
HINT_AFFINE_ONE_DEVICE = (
    "Everything ran on a single device: NumPy inputs are uncommitted and stay on the default "
    "device unless the in_shardings of jax.jit say where each argument goes."
)
HINT_AFFINE_W_WHOLE = (
    "Every device holds all of w: split its columns over 'model' (in_shardings entry "
    "NamedSharding(mesh, P(None, 'model'))), and b the same way, P('model')."
)
HINT_EXPLICIT_COLUMNS = (
    "The result's columns are not split over 'y' (its type shows no @y on the last "
    "dimension): ask for out_sharding=NamedSharding(mesh, P('x', 'y'))."
)
HINT_NEEDS_OUT_SHARDING = (
    "On an Explicit mesh JAX will not guess the sharding of a product whose contracted "
    "dimension is split: pass out_sharding=... to jnp.dot (or jnp.einsum, jnp.matmul)."
)
HINT_SPEC_WITHOUT_MESH = (
    "A bare PartitionSpec needs a mesh: wrap it as NamedSharding(mesh, spec), or run the code "
    "under `with jax.set_mesh(mesh):`. Inside jax.jit, jax.typeof(x).sharding.mesh is the "
    "mesh of x."
)
HINT_CONSTRAINT_ON_EXPLICIT = (
    "with_sharding_constraint only accepts Auto mesh axes, and jax.make_mesh makes Explicit "
    "ones. Build the mesh with jax.sharding.Mesh(jax.devices(), names), or on an Explicit mesh "
    "use jax.reshard."
)
HINT_SHARDING_OF_TRACER = (
    "Inside jax.jit an array is a tracer and has no .sharding: jax.typeof(x).sharding gives "
    "its sharding (on an Explicit mesh), or build the mesh you need from jax.devices()."
)
HINT_COMMITTED_MISMATCH = (
    "A committed argument (placed with device_put) has a sharding other than the in_shardings "
    "of jax.jit, and jit does not move committed arrays: pass it uncommitted, or device_put it "
    "to the expected sharding first."
)
HINT_COMMITTED_DEVICES = (
    "Two committed arrays live on different devices and JAX will not move either: "
    "jax.device_put one of them to where the other lives."
)
HINT_MIXED_MESHES = (
    "Arrays on an Auto mesh and on an Explicit mesh (jax.make_mesh) cannot meet in one "
    "operation: build every mesh the same way."
)
HINT_RETURN_JITTED = (
    "Return the function that jax.jit(...) makes (it has .lower), not a plain Python function."
)

ERROR_HINTS += (
    (re.compile(r"Contracting dimensions are sharded"), HINT_NEEDS_OUT_SHARDING),
    (re.compile(r"Using PartitionSpec when you are not under a mesh context|requires a "
                r"non-empty mesh in context"), HINT_SPEC_WITHOUT_MESH),
    (re.compile(r"can only refer to Auto axes"), HINT_CONSTRAINT_ON_EXPLICIT),
    (re.compile(r"'sharding' attribute is not available on traced array"),
     HINT_SHARDING_OF_TRACER),
    (re.compile(r"Sharding passed to jit does not match the sharding"), HINT_COMMITTED_MISMATCH),
    (re.compile(r"Received incompatible devices for jitted computation"), HINT_COMMITTED_DEVICES),
    (re.compile(r"Mesh for all inputs should be equal"), HINT_MIXED_MESHES),
    (re.compile(r"object has no attribute 'lower'"), HINT_RETURN_JITTED),
)

# --- lesson 01_sharding: hints ---------------------------------------------------------------
HINT_CONGRUENT_LENGTH = (
    "A shape and a sharding shape of different lengths are never congruent: compare their "
    "lengths first (zip stops at the shorter one and hides the difference)."
)
HINT_CONGRUENT_ZERO = (
    "A dimension of size 0 splits into any number of empty blocks (0 % k == 0), so it is "
    "congruent: test divisibility with %, without comparing the sizes."
)
HINT_CONGRUENT_REVERSED = (
    "Is the test the right way round? Each dimension of x_shape must be a multiple of its "
    "number of blocks (size % blocks == 0), and a dimension smaller than its number of blocks "
    "is not."
)
HINT_SHARD_SHAPE_RAISE = (
    "When a dimension does not divide evenly into its blocks (for a tuple entry: into the "
    "product of the sizes of its axes), raise ValueError, as jax.device_put refuses such a "
    "layout, instead of rounding the block size."
)
HINT_SHARD_SHAPE_TUPLE = (
    "An entry that is a tuple of axis names splits its dimension over all of those axes: "
    "divide by the product of their sizes."
)
HINT_SHARD_SHAPE_INTEGERS = (
    "Block sizes are integers: once you know the dimension divides evenly, use // (/ gives "
    "floats)."
)
HINT_SHARD_SHAPE_MISSING = (
    "Entries missing at the end of the spec mean 'not split': the result has one entry per "
    "dimension of global_shape, however short the spec is."
)
HINT_NOT_PLACED = (
    "The result is not laid out by a NamedSharding: return jax.device_put(x, "
    "NamedSharding(mesh, spec)), the array placed on the mesh you were given."
)
HINT_GIVEN_MESH = (
    "The array is not on the mesh passed in: build the NamedSharding from the `mesh` "
    "argument rather than from a mesh of your own (the tests pass meshes of several shapes, "
    "with Explicit or Auto axes)."
)
HINT_SPEC_ORDER = (
    "Entry i of a PartitionSpec is for dimension i of the array: the rows are dimension 0, "
    "so P('x', 'y') splits the rows over 'x' and the columns over 'y'."
)
HINT_ROWS_ONLY = (
    "Only the rows are split: the columns need their own spec entry too, P('x', 'y')."
)
HINT_TUPLE_NOT_TWO = (
    "P(('x', 'y')) and P('x', 'y') differ: the first has one entry, a tuple, and splits the "
    "rows over both mesh axes; the second has two entries and splits the rows over 'x' and "
    "the columns over 'y'."
)
HINT_TUPLE_ORDER = (
    "Inside a tuple the order of the axis names matters: ('x', 'y') makes 'x' the major axis, "
    "so row block k goes to the device at x = k // size_y, y = k % size_y. Use P(('x', 'y'))."
)
HINT_ROWS_ONE_AXIS = (
    "The rows are split over one mesh axis only: split them over both with a tuple entry, "
    "P(('x', 'y'))."
)
HINT_REPLICATE_ROWS_SPLIT = (
    "The rows must stay whole (spec entry None) so that all devices of a mesh column hold the "
    "same block: P(None, 'y')."
)
HINT_REPLICATE_WRONG_AXIS = (
    "The columns are split over 'x': split them over 'y', P(None, 'y'), and the copies then "
    "run along 'x'."
)
HINT_REPLICATE_EVERYTHING = (
    "P() copies the whole array to every device, but the columns must still be split over "
    "'y': P(None, 'y')."
)
HINT_BLOCK_MAP_SLICES = (
    "Return (start, stop) pairs of ints, not slices: slice.indices(size) gives (start, stop, "
    "step) with the None bounds filled in."
)
HINT_BLOCK_MAP_NONE = (
    "A dimension that is not split appears as slice(None, None, None) in shard.index: report "
    "it as (0, size), for example with slice.indices(size)."
)
HINT_BLOCK_MAP_KEYS = (
    "Key the dict by the device's id, shard.device.id (an int), not by the device object."
)
HINT_BLOCK_MAP_OFFSETS = (
    "Every block starts at 0 in your result: the pairs must say where the block sits in the "
    "global array (shard.index tells), not only how large it is (shard.data.shape)."
)

# --- drawings: of layouts (lessons/drawing.py), of collectives (lessons/collective_drawing.py) ---
LAYOUT_SHAPE = "the array shape should be a tuple of whole numbers, such as (8, 4); got {shape!r}"
LAYOUT_MESH = (
    "the mesh should map each axis name to a size of at least 1, such as {{'x': 4, 'y': 2}}; "
    "got {mesh!r}"
)
LAYOUT_SPEC_TYPE = (
    "the spec should be a PartitionSpec or a tuple of entries, such as P('x', None); "
    "got {spec!r}"
)
LAYOUT_SPEC_TOO_LONG = "the spec has {entries} entr{s} but the array has {rank} {dims}"
LAYOUT_SPEC_ENTRY = "spec entry {entry!r} is not None, an axis name or a tuple of axis names"
LAYOUT_UNKNOWN_AXIS = "mesh has no axis {axis!r} (axes: {axes})"
LAYOUT_AXIS_TWICE = "axis {axis!r} is used twice: a mesh axis can split only one dimension"
LAYOUT_UNEVEN = "dimension {dim} of size {size} does not split into {parts} blocks over {axes}"
LAYOUT_DTYPE = "{dtype!r} is not a dtype that the drawing knows, such as 'float32' or 'int32'"
LAYOUT_NOT_NAMED = (
    "draw_layout draws arrays placed with a NamedSharding; this one has a {kind}: place it "
    "with jax.device_put(x, NamedSharding(mesh, P(...))) first"
)
LAYOUT_TOO_MANY_PANELS = (
    "the drawing shows one panel per block of dimension(s) {dims}, and this layout has {panels} "
    "of them (at most {max} fit): split the leading dimensions over fewer devices"
)
MOVE_KIND = "there is no drawing of {kind!r}: choose one of {kinds}"
MOVE_DEVICES = "a collective is drawn on 1 to {max} devices, not {n}"
MOVE_STEP = "step {step} does not exist: {kind} on {n} devices has steps 0 to {last}"
SHARD_MAP_OUTPUT = "draw_shard_map draws a function that returns one array; {name} returned {kind}"
SHARD_MAP_TOO_BIG = (
    "draw_shard_map draws small data: a device's block has {size} elements and at most {max} "
    "fit in the drawing; pass a smaller array"
)
SHARD_MAP_INPUTS = (
    "draw_shard_map got {specs} in_specs, so it needs {specs} inputs as a tuple, one per spec; "
    "got {got}"
)
SHARD_MAP_NO_TRACE = "what moved is not drawn: {why}"
SHARD_MAP_NOT_TRACED = "JAX could not differentiate {name} on a float copy of the data ({error})"
SHARD_MAP_DIFFERS_ON_FLOATS = "{name} gives other values on a float copy of the data"

# --- compiled-code inspector (grader/lessons/inspector.py) ---------------------------------
#: The footnote of the "bytes sent" column; {rules} is the rule of each collective of
#: grader.lessons.inspector.RING_MODEL, "op rule; op rule; ...".
RING_NOTE = (
    "bytes sent: what each device sends if the collective runs as a ring over the n devices "
    "of its group: {rules} (a model: XLA may choose another algorithm)"
)

# --- lesson 03_collectives (collectives helper): messages and hints of the exercises added
# after ring_shift ---
MSG_OTHER_COLLECTIVES = "the compiled code has {ops}, which this exercise does without"
MSG_NO_MAX_REDUCTION = (
    "no all-reduce in the compiled code takes a maximum (found: {seen}), so the devices never "
    "agreed on a global maximum"
)
MSG_GATHERS_TOO_MUCH = (
    "an all-gather in the compiled code collects {got:g} values per device; the block totals "
    "need at most 1"
)
MSG_REDUCED_OVER = "the psums must add over {want} only; found: {got}"

HINT_NORMALIZE_LOCAL_MAX = (
    "Each block was divided by its own largest |value|: the maximum has to be global. Take "
    "jnp.max(jnp.abs(block)) on each device, then jax.lax.pmax(..., 'data'), so that every "
    "device divides by the same number."
)
HINT_NORMALIZE_ABS = (
    "x was divided by its largest value, not by its largest absolute value: a large negative "
    "entry counts too, so take jnp.abs before the maximum."
)
HINT_NORMALIZE_PMAX = (
    "No pmax over 'data' was traced: inside jax.shard_map each device sees only its block, and "
    "jax.lax.pmax(local_max, 'data') is what gives every device the global maximum."
)
HINT_STAYS_SPLIT = (
    "The result is not split over the devices one block each: return the per-device blocks "
    "with out_specs=P('data') on a mesh of all devices, instead of gathering or replicating."
)
HINT_RING_USES_OTHER_COLLECTIVES = (
    "The compiled code has an all-reduce or an all-gather: this exercise builds the all-reduce "
    "out of ppermute alone. Pass a block round the ring n - 1 times with jax.lax.ppermute, "
    "adding what arrives each time; no psum, pmean or all_gather."
)
HINT_RING_STEPS = (
    "Every row must be the sum of all n rows: a block needs n - 1 steps round the ring to "
    "visit every device, and each device adds every block that reaches it (n is the size of "
    "'data', jax.lax.axis_size('data') inside shard_map, or len(jax.devices()))."
)
HINT_CUMSUM_OFFSET = (
    "Each block restarts at 0: device i must add the total of all the blocks before it. "
    "Gather the last entry of every device's local cumsum (one value per device, "
    "jax.lax.all_gather), add up those of the devices whose axis_index is smaller than "
    "yours, and add that offset to the local cumsum."
)
HINT_CUMSUM_OWN_TOTAL = (
    "Each block is one block total too high: the offset of device i is the sum of the totals "
    "of devices 0 to i - 1, without its own."
)
HINT_CUMSUM_GATHERS_DATA = (
    "The compiled code gathers more than one value per device, so the array itself travels: "
    "each device only needs the total of every other block. Gather the block totals (one "
    "number per device), never the blocks."
)
HINT_SCATTER_NOT_PSUM = (
    "The compiled code has an all-reduce: psum hands every device the whole total, and "
    "slicing it afterwards throws most of it away. jax.lax.psum_scatter(row, 'data', "
    "tiled=True) sends each device only its own part of the total (a reduce-scatter)."
)
HINT_SCATTER_TILED = (
    "Without tiled=True, psum_scatter wants the scattered dimension to have exactly one entry "
    "per device and removes it. With tiled=True it cuts the dimension into n equal parts: "
    "jax.lax.psum_scatter(row, 'data', tiled=True)."
)
HINT_A2A_GATHERED = (
    "The compiled code has no all-to-all: gathering (or resharding with device_put or "
    "with_sharding_constraint) moves more than needed or leaves the move to XLA. Inside "
    "shard_map, jax.lax.all_to_all(block, 'data', split_axis=1, concat_axis=0, tiled=True) "
    "sends each device exactly the columns it keeps."
)
HINT_A2A_AXES = (
    "split_axis is the dimension each device cuts into n pieces to send out (here the "
    "columns, 1), concat_axis the one along which it stacks the pieces it receives (the rows, "
    "0); with tiled=True a block goes from (R/n, C) to (R, C/n)."
)
HINT_A2A_LAYOUT = (
    "The values are right but they are not split by columns: return the blocks with "
    "out_specs=P(None, 'data'), so that device i holds the i-th block of columns, whole."
)
HINT_ROW_SUMS_BOTH_AXES = (
    "Every row group received the sums of other row groups as well: a psum over ('x', 'y') "
    "(or over 'x') adds the rows of different groups together. The pieces of one row lie on "
    "the devices along 'y' only, so psum over 'y' alone."
)
HINT_ROW_SUMS_ONE_BLOCK = (
    "These are the sums over the first block of columns only: each device along 'y' holds "
    "part of every row, so add the partial sums up with jax.lax.psum(..., 'y')."
)
HINT_ROW_SUMS_LAYOUT = (
    "The row sums must be split over 'x' like the rows of x (out_specs=P('x')): each row "
    "group keeps its own sums, the devices along 'y' share them."
)
HINT_ROW_SUMS_REPLICATE_Y = (
    "out_specs=P('x') promises that all devices along 'y' hold the same values, but each one "
    "holds the partial row sums of its own columns: add them up with jax.lax.psum(..., 'y') "
    "before returning."
)
HINT_ROW_SUMS_GIVEN_MESH = (
    "The row sums are right but do not lie on the mesh you were given: build the shard_map "
    "on the `mesh` argument (the tests pass meshes of several shapes) instead of a mesh of "
    "your own."
)
HINT_OUT_SPECS_RANK = (
    "The function inside shard_map returned a value with fewer dimensions than its out_specs "
    "entry names: a block keeps its rank in shard_map (pmap removed the device axis, shard_map "
    "does not). Give a per-device scalar a length-1 axis (keepdims=True, or x[None]) to "
    "concatenate it with P('data'), or return it with P() if every device holds the same value."
)

ERROR_HINTS = (
    (re.compile(r"implies that the corresponding output value is replicated across mesh axis "
                r"'y'"), HINT_ROW_SUMS_REPLICATE_Y),
    *ERROR_HINTS,
    (re.compile(r"reduce_scatter operand scatter dimension size \d+ must match shard count"),
     HINT_SCATTER_TILED),
    (re.compile(r"out_specs entry which is too long"), HINT_OUT_SPECS_RANK),
    (re.compile(r"all_to_all split_axis .* has to be divisible|all_to_all requires the size of "
                r"the mapped axis"), HINT_A2A_AXES),
)

# --- grader helper: batch summary, progress, --shard and merge --------------------------------
SUMMARY_SPREAD = (
    "{students} student(s), total points out of {top:g}: mean {mean:.1f}, median {median:g}, "
    "lowest {low:g}, highest {high:g}; {full} with full marks"
)
SUMMARY_NO_STUDENT = "no student in this batch"
SUMMARY_FAILURE = (
    "{exercise}: {failures} of {handed_in} ({rate:.0%}) without full marks "
    "({failed} failed, {partial} partly)"
)
SUMMARY_NOTHING_FAILED = "every student who handed an exercise in got full marks for it"
SUMMARY_NOTHING_HANDED_IN = "no exercise was handed in"
SUMMARY_RATE_DEFINITION = (
    "Of the students who handed an exercise in (the function is defined and is not the stub), "
    "how many did not get full marks, the most failed first. Exercises nobody handed in are "
    "left out."
)
PROGRESS_LINE = "{verb} {student}: {points:g}/{max_points:g} [{done}/{total}]"
WARN_STORE_CHANGED = (
    "warning: the stored results of {students} changed while the batch was graded (by a "
    "submission running without the sandbox?); they were written again from the grader's own "
    "results"
)
SHARD_SYNTAX = "--shard takes K/N, two whole numbers such as 2/4, not {text!r}"
SHARD_RANGE = "--shard {text}: K must be between 1 and N"
MERGE_NOT_A_FOLDER = "{folder} is not a folder"
MERGE_NO_RESULTS = "{folder} holds no results.json: it is not an output folder of `grade`"
MERGE_DAMAGED = "{path} cannot be read as the grader's results ({why})"
MERGE_NO_SLICE = (
    "{path} does not say which slice it holds (written by an older grader?): grade it again"
)
MERGE_OTHER_GRADER = (
    "{a} and {b} were graded by different versions of the grader, its tests, the solutions "
    "or JAX: grade every slice with the same course"
)
MERGE_OTHER_LIMITS = "{a} and {b} were graded with different limits ({la} and {lb})"
MERGE_OTHER_SPLIT = (
    "{a} is slice {sa} but {b} is slice {sb}: every slice must come from one --shard K/N "
    "split, with the same N"
)
MERGE_OTHER_CLASS = (
    "{a} and {b} were cut from different classes (the submissions folder changed between "
    "them): grade every slice from the same folder"
)
MERGE_MISSING = "slice(s) {missing} missing: give the output folder of every slice"
MERGE_CONFLICT = "{student} has different results in {a} and {b}"
MERGE_INCOMPLETE = (
    "no results for {students}, who are in the class: was every slice graded to the end?"
)
MERGE_STRANGERS = "results for {students}, who are not in the class the slices were cut from"
MERGE_INTO_A_SLICE = "--out {out} is one of the slices: merge into another folder"
OUT_NOT_WRITABLE = "cannot write to {out}: {why}"
OUT_INSIDE_SUBMISSIONS = (
    "--out {out} is inside the submissions folder {submissions}, where it would be graded as a "
    "student: choose a folder outside it"
)
SUBMISSIONS_UNREADABLE = "cannot read the submissions folder {folder}: {why}"
WARN_IGNORED = (
    "warning: left out {count} entr{ies} of {folder} that are not submissions (a .ipynb or .py "
    "file, or a folder): {names}"
)
WRITE_FAILED = "cannot write the results to {out}: {why}"
FILE_TOO_LARGE = "larger than {mib:g} MiB"
NOTEBOOK_TOO_LARGE = (
    "larger than {mib:g} MiB: clear its outputs (Edit > Clear Outputs of All Cells), save, and "
    "hand it in again"
)
NOTEBOOK_TOO_MANY_CELLS = "more than {most} code cells: put the code in fewer cells"
FILE_NOT_TEXT = "not UTF-8 text ({error} at byte {at}): a binary file, or another encoding"
NOTEBOOK_EMPTY = "the file is empty, not a notebook"
FILE_SYMLINK = (
    "a symbolic link, which the grader does not follow: hand in the file itself, not a link"
)
FILE_NOT_REGULAR = "not a regular file"
NOTEBOOK_FORMAT = (
    "notebook format {found!r} is not supported (4 is): open it in Jupyter and save it again"
)

# --- what the interactive explorers (grader/lessons/explorer.py) say ------------------------
EXPLORER_CANNOT = "Cannot lay this out: {why}"
EXPLORER_SHAPE = (
    "the array shape should be 1 to {max} whole numbers separated by commas, such as 8, 6 "
    "(got {text!r})"
)
EXPLORER_SHAPE_RANGE = "each dimension of the array should be from 1 to {max} (got {size})"
EXPLORER_AXIS_NAME = (
    "mesh axis {i} needs a name that is a Python identifier, such as 'x' (got {name!r})"
)
EXPLORER_AXIS_TWICE = "two mesh axes are both named {name!r}: give each axis its own name"
EXPLORER_TOO_MANY_DEVICES = "this mesh has {n} devices; the explorer draws meshes of up to {max}"
EXPLORER_SPEC_GAP = (
    "entry {i} of the spec is empty ({omit}) but a later entry is set: write None for a "
    "dimension that is not split; only entries at the end may be left out"
)

# --- lesson 06_multiprocess: grader.lessons.cluster's messages and the lesson's hints -------
MSG_CLUSTER_RAISED = "process {index} of {count} raised {type}: {message}"
MSG_CLUSTER_ENDED = "process {index} of {count} ended without a result ({how})"
MSG_CLUSTER_TIMEOUT = (
    "{which} of {count} did not finish within {seconds:g} s, so all {count} processes were "
    "stopped"
)
MSG_CLUSTER_OUTPUT = "the last lines process {index} wrote:\n{output}"
MSG_CLUSTER_NOT_A_FUNCTION = (
    "grader.lessons.cluster sends a function's source to each process: pass a function defined "
    "with def, not a {kind}"
)
MSG_CLUSTER_CLOSURE = (
    "{name} uses {names} from the function it is defined in, which cannot be sent to other "
    "processes: define it at the top level of the notebook and pass data as arguments"
)
MSG_CLUSTER_UNSENDABLE = (
    "{program} uses `{name}` from this notebook, a {kind} that cannot be sent to other "
    "processes: pass it as an argument, or create it inside the function"
)
MSG_CLUSTER_NOTHING_RECORDED = (
    "no cells that define `{name}` were recorded: grader.lessons.cluster.replay runs only inside a "
    "grader worker, after the submission's cells ran"
)
HINT_GB_NOT_PLACED = (
    "The result is not split over a mesh: build a 1-D mesh named 'data' of every device, "
    "Mesh(jax.devices(), ('data',)), and the global array with "
    "jax.make_array_from_process_local_data(NamedSharding(mesh, P('data')), local_rows)."
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

ERROR_HINTS += (
    (re.compile(r"spans non-addressable"), HINT_FETCH_NON_ADDRESSABLE),
    (re.compile(r"passed to device_put is not the same on each process"),
     HINT_DEVICE_PUT_PER_PROCESS),
    (re.compile(r"of \d+ did not finish within .* processes were stopped"),
     HINT_PROCESSES_DIVERGED),
)
