"""Hints and messages of lesson 3 (collectives): grader/public/collectives.py and
grader/hidden/collectives.py."""

from __future__ import annotations

import re

# --- messages of the tests of how the exercises communicate -------------------------------
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
MSG_HALO_RECEIVED = (
    "a device receives {have} bytes by collective-permute, the reference {want}: one edge "
    "element from each neighbour"
)
MSG_SCATTER_GROUPS = "the reduce-scatters must combine the device groups {want}; found: {got}"
MSG_REDUCED_VALUES = (
    "the all-reduces of the compiled code carry {got} values per device; the mean needs {want}"
)
MSG_ALL_REDUCES = (
    "the compiled program has {got} all-reduce(s); one psum of the count, the sum and the sum "
    "of squares is {want}"
)
MSG_MOMENT_VALUES = (
    "the all-reduces carry {got} values per device; the count, the sum and the sum of squares "
    "are {want}"
)
MSG_MOMENTS_OTHERS = "the compiled program also has {got}; the three sums need one all-reduce"

# --- hints of the first exercises (nan_mean_var to fixed_pmap_port) ---------------------------
HINT_MOMENTS_NAN = (
    "The result is NaN: the missing entries were added in. Leave them out of all three sums: "
    "present = ~jnp.isnan(block), then jnp.where(present, block, 0.0) before summing, and "
    "count only the entries present."
)
HINT_MOMENTS_LENGTH = (
    "The mean and the variance divide by the length of x, as if the missing entries were "
    "zeros: divide by how many entries are present, a count each device makes of its own "
    "block and the psum adds up with the two sums."
)
HINT_MOMENTS_SAMPLE = (
    "The variance divides by the count minus one (np.nanvar(x, ddof=1)); the exercise asks for "
    "np.nanvar(x), which divides by the count: squares / count - mean ** 2."
)
HINT_MOMENTS_MEAN_OF_MEANS = (
    "The mean is the mean of the blocks' own means: a block with more entries present must "
    "weigh more, and a block with none has no mean at all. Add up counts and sums over the "
    "devices first, then divide: one psum of (count, total, squares)."
)
HINT_MOMENTS_ROUNDS = (
    "The devices all-reduce more than once: a psum waits on the result of another (the mean "
    "first, then the squares of the deviations from it). Sum the squares of the entries "
    "themselves on each device and psum (count, total, squares) at once: the variance is "
    "squares / count - mean ** 2."
)
HINT_MOMENTS_DTYPES = (
    "The compiled program has one all-reduce per dtype: an integer count (the sum of a "
    "boolean mask) travels apart from the float sums. Make the count a float like them "
    "(.astype(block.dtype)), and one psum of the tuple adds all three in one all-reduce."
)
HINT_MOMENTS_VALUES = (
    "The all-reduce carries more than the three numbers each device has to contribute: psum "
    "its block's count, sum and sum of squares, not the block itself."
)
HINT_MOMENTS_GATHERS = (
    "The compiled program gathers or moves blocks of x: a device needs only three numbers "
    "from each of the others (the count, the sum and the sum of squares of its entries "
    "present), which one jax.lax.psum adds up."
)
HINT_MOMENTS_NO_PSUM = (
    "The compiled program communicates nothing: split x over 'data' with jax.shard_map "
    "(in_specs=P('data')) and psum each block's count, sum and sum of squares."
)
HINT_MOMENTS_LAYOUT = (
    "The values are right, but the mean and the variance must come back as jax arrays whole on "
    "every device, as shard_map returns them with out_specs=(P(), P()): not as Python or "
    "numpy numbers, nor on one device."
)
HINT_FORGOT_PSUM = (
    "The result equals what the first device computes on its own block: did you forget the "
    "psum that adds up the partial results of all devices?"
)
HINT_WRONG_DIRECTION = (
    "The edge elements went the wrong way round the ring: each block got its halos from the "
    "wrong neighbours. The element left of device i's block is device i - 1's last one, so "
    "last elements travel to the next device, pairs (i, (i + 1) % n), and first elements "
    "to the previous one, pairs (i, (i - 1) % n)."
)
HINT_FORGOT_PMEAN = (
    "Each device took a step on its own part of the batch only, so the devices now hold "
    "different parameters: average the gradients across devices with jax.lax.pmean before "
    "updating."
)
HINT_PORT_STACKED = (
    "The parameters came back with one copy per device, as pmap returns them. In shard_map a "
    "value that every device holds after the pmean is returned once: out_specs=P(), and no "
    "extra axis added to the scalars (nor jax.pmap called)."
)
HINT_PSUM_NOT_PMEAN = (
    "The step is n times too large: the gradients were added up over the devices, not "
    "averaged. Either a psum stands where the pmean should, or jax.grad was taken with "
    "respect to params passed with P(): those are the same on every device, so their gradient "
    "already adds up all devices' gradients, and the pmean averages n equal sums. Mark the "
    "params as varying before jax.grad, jax.lax.pcast(params, 'data_parallel_axis', "
    "to='varying'), or differentiate the pmean of the local losses."
)
HINT_RING_NO_WRAP = (
    "The first and last entries are computed as if zeros lay beyond the ends of x: the "
    "difference is periodic, x[-1] being the left neighbour of x[0]. A ring wraps round: "
    "give every i in range(n) its pair, (i, (i + 1) % n) and (i, (i - 1) % n); ppermute "
    "fills a device that receives nothing with zeros."
)
HINT_HALO_OWN_BLOCK = (
    "The entries at the edges of every block are wrong: each block wrapped round on itself "
    "(jnp.roll of the block), but the neighbours of its first and last elements lie on the "
    "neighbouring devices. Bring them in with jax.lax.ppermute: the previous device's last "
    "element and the next device's first."
)
HINT_HALO_WHOLE_BLOCK = (
    "The values are right, but the devices send each other more than the two edge elements "
    "a block needs: ppermute block[:1] and block[-1:], not the whole block."
)
HINT_HALO_OTHER_COLLECTIVES = (
    "The compiled program gathers or reduces: a device needs only one element from each "
    "neighbour, which jax.lax.ppermute sends; no all_gather, psum or all_to_all."
)
HINT_HALO_NO_PERMUTE = (
    "No element crosses between devices: inside jax.shard_map over 'data', the neighbours' "
    "edge elements have to be sent with jax.lax.ppermute."
)
HINT_PORT_DEVICE_AXIS = (
    "Each row was centred by the mean of the rows at its place on the other devices: "
    "h.mean(axis=0) averaged over the device axis of length 1 that the reshape to (n, N / n, "
    "k) put in front, and the pmean then added up whole blocks. pmap removed that axis; "
    "shard_map keeps it. shard_map splits x by rows itself (in_specs P('batch', None)): drop "
    "the reshape, and axis 0 of a block is the rows again, as under pmap."
)
HINT_PORT_NO_PMEAN = (
    "Each device's rows were centred by their own mean: the devices never agreed on one. "
    "Keep the jax.lax.pmean(..., 'batch') of the local means (every block has N / n rows, so "
    "the mean of the means is the mean)."
)
HINT_PORT_STACKED_ROWS = (
    "The result has pmap's shape (n, N / n, m), one slice per device. shard_map puts the "
    "blocks together itself: with x split by rows (in_specs P('batch', None)) and "
    "out_specs=P('batch', None) the result is (N, m) already, with no reshape before or after."
)
HINT_PORT_LAYOUT = (
    "The values are right but the rows are not split over the devices: return the blocks "
    "with out_specs=P('batch', None), instead of gathering or replicating them."
)

# --- hints of the exercises after halo_difference -----------------------------------------
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
    "The compiled code has an all-reduce or an all-gather: a psum hands every device all "
    "the columns of its block summed, and slicing afterwards throws most of them away. "
    "jax.lax.psum_scatter(block, 'x', scatter_dimension=1, tiled=True) sends each device only "
    "its own columns of the total (a reduce-scatter)."
)
HINT_SCATTER_TILED = (
    "Without tiled=True, psum_scatter wants the scattered dimension to have exactly one entry "
    "per device and removes it. With tiled=True it cuts the dimension into equal parts, one "
    "per device of the axis: jax.lax.psum_scatter(block, 'x', scatter_dimension=1, "
    "tiled=True)."
)
HINT_SCATTER_DIMENSION = (
    "The result does not have the shape (R, C) of the total. psum_scatter cuts the dimension "
    "scatter_dimension names (0, the rows, by default): here the columns, "
    "scatter_dimension=1, cut among the devices along 'x' only; a psum_scatter over ('x', "
    "'y') would also add the different column blocks together."
)
HINT_SCATTER_OVER_BOTH = (
    "The reduce-scatter combines other devices than those that hold partial sums of the same "
    "columns: the devices along 'x' (sharing a 'y' position). psum_scatter over 'x' only; "
    "the devices along 'y' hold different columns and must not be added."
)
HINT_SCATTER_ORDER = (
    "The values are the total's, but their columns are in the wrong order: the device at "
    "x=i, y=j holds part i of column block j, so the pieces run 'y' first, then 'x': "
    "out_specs=P(None, ('y', 'x')), not ('x', 'y')."
)
HINT_SCATTER_LAYOUT = (
    "The values are right but they are not laid out P(None, ('y', 'x')): return each "
    "device's columns from the shard_map with that out_specs, instead of gathering or "
    "resharding them."
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
HINT_SET_MESH_IN_JIT = (
    "jax.set_mesh cannot be used under jax.jit, and the tests trace your function with it: "
    "give the mesh to jax.shard_map (mesh=...) and place inputs with "
    "jax.reshard(x, NamedSharding(mesh, P(...))) instead."
)
HINT_OUT_SPECS_RANK = (
    "The function inside shard_map returned a value with fewer dimensions than its out_specs "
    "entry names: a block keeps its rank in shard_map (pmap removed the device axis, shard_map "
    "does not). Give a per-device scalar a length-1 axis (keepdims=True, or x[None]) to "
    "concatenate it with P('data'), or return it with P() if every device holds the same value."
)

#: An error this lesson shares with grader.hints.common's general "out_specs.*replicat"
#: entry, said more precisely for row_sums: it must be matched before that one.
ERRORS_BEFORE_COMMON: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"implies that the corresponding output value is replicated across mesh axis "
                r"'y'"), HINT_ROW_SUMS_REPLICATE_Y),
)
#: The other errors JAX raises that are this lesson's, matched after those of
#: grader.hints.common (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"reduce_scatter operand scatter dimension size \d+ must match shard count"),
     HINT_SCATTER_TILED),
    (re.compile(r"tiled reduce_scatter operand scatter dimension size \d+ must be divisible"),
     HINT_SCATTER_DIMENSION),
    (re.compile(r"out_specs entry which is too long"), HINT_OUT_SPECS_RANK),
    (re.compile(r"`set_mesh` can only be used outside of `jax.jit`"), HINT_SET_MESH_IN_JIT),
    (re.compile(r"all_to_all split_axis .* has to be divisible|all_to_all requires the size of "
                r"the mapped axis"), HINT_A2A_AXES),
)
