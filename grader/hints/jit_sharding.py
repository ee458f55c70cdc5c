"""Hints of lesson 2 (jit_sharding): grader/public/jit_sharding.py."""

from __future__ import annotations

import re

# --- hints: what the likely mistake is ----------------------------------------------------
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
HINT_AFFINE_GIVEN_MESH = (
    "The values are right but laid out for another mesh than the one given: build every "
    "NamedSharding from the `mesh` argument, whose shape changes from call to call, never "
    "from a mesh of your own."
)
HINT_RESIDUAL_TYPE = (
    "The result is not typed P('data', None) like x: the layer's output must keep the rows "
    "of the batch over 'data'. Choose the product's sharding yourself (out_sharding=... of "
    "jnp.dot) instead of gathering x or splitting the columns."
)
HINT_RESIDUAL_GATHERS_X = (
    "The compiled program all-gathers blocks of x, the large operand: x has many more rows "
    "than w. Keep x where it is and gather w instead: jnp.dot(x, w, out_sharding=...) with "
    "the rows over 'data', or jax.reshard(w, ...) replicated before the product."
)
HINT_RESIDUAL_W_TWICE = (
    "The compiled program moves w twice: an all-to-all to split it by rows, then an "
    "all-gather. Splitting w's rows over 'data' does not help, since the rows of x hold "
    "that axis already; gather w whole in one step (replicated, or through the "
    "out_sharding of the product)."
)
HINT_ILLEGAL_SHARDING = (
    "An operation would give its output one mesh axis on two dimensions (here the rows of x "
    "and the columns of w are both split over 'data'), and no sharding can say that. Decide "
    "what moves yourself: an out_sharding= for jnp.dot, or jax.reshard of an operand first."
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
    "ones. On an Explicit mesh, jax.reshard(x, sharding) moves the data (inside jax.jit too); "
    "with_sharding_constraint is for meshes of Auto axes, such as jax.sharding.Mesh's."
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

HINT_TYPE_ONE_SIDE_SPLIT = (
    "You predicted an error where only one of the two contracted dimensions is split. JAX "
    "refuses only when both are: with one side whole, each device can complete its sums "
    "(JAX gathers the split side), and the output takes the rows of x and the columns of w."
)
HINT_TYPE_BOTH_SPLIT = (
    "Where the contracted dimension of x and that of w are both split, over the same axis or "
    "over two different ones, JAX raises: it would have to choose between partial sums and "
    "a resharding. Predict None there."
)
HINT_TYPE_AXIS_TWICE = (
    "Where the rows of x and the columns of w are split over the same mesh axis, the output "
    "would name that axis twice, which no spec may: JAX raises. Predict None there."
)
HINT_TYPE_WRONG_DIMENSIONS = (
    "The output of x @ w keeps the sharding of the dimensions that survive: the rows of x "
    "(lhs[0]) and the columns of w (rhs[1]); the contracted ones (lhs[1], rhs[0]) are gone."
)
HINT_INIT_NOT_SPLIT = (
    "A parameter's type shows no split on a dimension that should have one: it was created "
    "replicated. Pass out_sharding= to the sampler and the constructor: "
    "jax.random.normal(key, shape, out_sharding=P('data', 'model')) and "
    "jnp.zeros((d_out,), out_sharding=P('model'))."
)
HINT_INIT_ONE_AXIS = (
    "w is split over one mesh axis only, so the devices along the other axis each draw the "
    "same block. Split its rows over 'data' and its columns over 'model': "
    "out_sharding=P('data', 'model')."
)
HINT_INIT_SCALE = (
    "The weights are normal numbers from the right key, but scaled wrongly: multiply them by "
    "sqrt(2 / d_in), as in (2.0 / d_in) ** 0.5."
)
HINT_EXPLICIT_REFUSES = (
    "Explicit mode refuses a sort (and what is built on one: jnp.quantile, jnp.median, "
    "top_k) or a cumulative sum along a split dimension. Make that dimension whole first "
    "with jax.reshard, or hand the step to the compiler with jax.sharding.auto_axes; then "
    "compare what each sends."
)
HINT_CLIP_TYPE = (
    "The result is not typed P('data', 'model') like x. Only the quantile needs whole rows: "
    "compute the cut (one number per row, typed P('data', None)) from a resharded copy, and "
    "clip x itself, which keeps its type."
)
HINT_CLIP_AXIS = (
    "These values are clipped at the quantile of each column (axis 0), across the batch: the "
    "cut is per row, jnp.quantile(..., 0.9, axis=1, keepdims=True)."
)
HINT_CLIP_FLOOR = (
    "Every value is now at least its row's cut: jnp.clip(x, cut) takes cut as the lower "
    "bound. Clip from above: jnp.minimum(x, cut), or jnp.clip(x, max=cut)."
)
HINT_CLIP_XLA_SORTS = (
    "The compiled program runs XLA's own distributed sort (all-to-all and all-reduce): that "
    "is what auto_axes hands over for a quantile, and it sends more than gathering each row. "
    "Gather the rows yourself: jax.reshard(x, P('data', None)), then the quantile."
)
HINT_CLIP_GATHERS_ROWS = (
    "The compiled program gathers more than the rows along 'model': blocks moved over "
    "'data' too (a reshard to P(), or a quantile over the columns). Each row is on its "
    "'data' devices already: reshard to P('data', None) only."
)
MSG_CLIP_BYTES = (
    "The compiled program sends {have} bytes per device; gathering each row along 'model' "
    "for the quantile sends {best}."
)

#: The errors JAX raises that are this lesson's, (pattern of the exception's text, hint).
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Contracting dimensions are sharded"), HINT_NEEDS_OUT_SHARDING),
    (re.compile(r"produces an illegally sharded result"), HINT_ILLEGAL_SHARDING),
    (re.compile(r"Using PartitionSpec when you are not under a mesh context|requires a "
                r"non-empty mesh in context"), HINT_SPEC_WITHOUT_MESH),
    # On a mesh of Explicit axes only, JAX 0.10 checks the constraint as an assertion.
    (re.compile(r"can only refer to Auto axes|with_sharding_constraint. acts as an assert "
                r"when all axes of\s+mesh are of type .Explicit."), HINT_CONSTRAINT_ON_EXPLICIT),
    (re.compile(r"'sharding' attribute is not available on traced array"),
     HINT_SHARDING_OF_TRACER),
    (re.compile(r"Sharding passed to jit does not match the sharding"), HINT_COMMITTED_MISMATCH),
    (re.compile(r"Received incompatible devices for jitted computation"), HINT_COMMITTED_DEVICES),
    (re.compile(r"Mesh for all inputs should be equal"), HINT_MIXED_MESHES),
    (re.compile(r"object has no attribute 'lower'"), HINT_RETURN_JITTED),
    (re.compile(r"should be unsharded over the axis being reduced|must be unsharded over the "
                r"sorting dimension"), HINT_EXPLICIT_REFUSES),
)
