"""The usual mistakes of lesson 2 (jit and sharding), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint? And does a correct function,
written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_passes_without_hint, lesson_tests

from grader.course import EXERCISES
from grader.hints import jit_sharding as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "02_jit_sharding"]
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


# --- correct functions ----------------------------------------------------------------------
def no_comm_matmul_specs():
    return P("x"), P(None, "y")


def counter(text_of):
    def count_collectives(f, *args):
        counts = dict.fromkeys(COLLECTIVES, 0)
        for line in text_of(f, *args).splitlines():
            found = re.match(r"\s*(?:ROOT\s+)?%\S+\s*=\s*\S+\s+([a-z\-]+)\(", line)
            if found:
                name = found.group(1).removesuffix("-start")
                if name in counts:
                    counts[name] += 1
        return counts

    return count_collectives


def compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


def lowered_text(f, *args):
    return jax.jit(f).lower(*args).as_text()


def by_columns():
    return NamedSharding(Mesh(jax.devices(), ("data",)), P(None, "data"))


def normalize_columns(x):
    @jax.jit
    def normalize(v):
        v = jax.lax.with_sharding_constraint(v, by_columns())
        return v / jnp.sqrt(jnp.sum(v * v, axis=0))

    return normalize(x)


def affine_with(w_spec, b_spec, shardings=True):
    def make_sharded_affine(mesh):
        def on(*spec):
            return NamedSharding(mesh, P(*spec))

        def affine(x, w, b):
            return x @ w + b

        if not shardings:
            return jax.jit(affine)
        return jax.jit(affine, in_shardings=(on("data"), on(*w_spec), on(*b_spec)),
                       out_shardings=on("data", "model"))

    return make_sharded_affine


def fix_residual(x, w):
    mesh = jax.typeof(x).sharding.mesh
    whole_w = jax.reshard(w, NamedSharding(mesh, P()))
    return x + jnp.tanh(x @ whole_w)


def matmul_type_by_trying(lhs, rhs):
    """Asks JAX: shapes typed lhs and rhs on a scratch Explicit mesh of the axes named."""
    names = [e for e in (*lhs, *rhs) if e is not None]
    axes = tuple(dict.fromkeys(names + ["spare_a", "spare_b"]))[:2]
    mesh = jax.make_mesh((1, 1), axes, devices=jax.devices()[:1])
    shapes = [jax.ShapeDtypeStruct((4, 4), jnp.float32, sharding=NamedSharding(mesh, s))
              for s in (lhs, rhs)]
    try:
        return jax.eval_shape(jnp.matmul, *shapes).sharding.spec
    except Exception:  # noqa: BLE001 - JAX refused to choose
        return None


def init_with(w_spec, b_spec, scale=lambda d_in: (2 / d_in) ** 0.5):
    def init_layer(key, d_in, d_out):
        w = jax.random.normal(key, (d_in, d_out), out_sharding=w_spec) * scale(d_in)
        return {"w": w, "b": jnp.zeros(d_out, out_sharding=b_spec)}

    return init_layer


def clip_via(reshard_to):
    def clip_outliers(x):
        rows = jax.reshard(x, reshard_to)
        return jnp.minimum(x, jnp.quantile(rows, 0.9, axis=1, keepdims=True))

    return clip_outliers


CORRECT = {
    "matmul_type": matmul_type_by_trying,
    "init_layer": init_with(P("data", "model"), P("model")),
    "clip_outliers": clip_via(P("data", None)),
    "no_comm_matmul_specs": no_comm_matmul_specs,
    "count_collectives": counter(compiled_text),
    "normalize_columns": normalize_columns,
    "make_sharded_affine": affine_with((None, "model"), ("model",)),
    "fix_residual": fix_residual,
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- no_comm_matmul_specs -------------------------------------------------------------------
@mistake("no_comm_matmul_specs", hints.HINT_SPLIT_CONTRACTION)
def splits_the_contracted_dimension():
    return P("x", "y"), P("y", None)


@mistake("no_comm_matmul_specs", hints.HINT_SAME_AXIS_TWICE)
def splits_both_output_dimensions_over_x():
    return P("x", None), P(None, "x")


# --- count_collectives ----------------------------------------------------------------------
mistake("count_collectives", hints.HINT_COUNTED_LOWERED, "reads_the_lowered_text")(
    counter(lowered_text))


@mistake("count_collectives", hints.HINT_COUNTED_TWICE)
def counts_every_mention(f, *args):
    text = compiled_text(f, *args)
    return {op: text.count(op) for op in COLLECTIVES}


# --- normalize_columns ----------------------------------------------------------------------
@mistake("normalize_columns", hints.HINT_CONSTRAINED_TOO_LATE)
def constrains_the_result(x):
    @jax.jit
    def normalize(v):
        out = v / jnp.linalg.norm(v, axis=0, keepdims=True)
        return jax.lax.with_sharding_constraint(out, by_columns())

    return normalize(x)


@mistake("normalize_columns", hints.HINT_NORMS_FROM_ROWS)
def never_reshards(x):
    return jax.jit(lambda v: v / jnp.linalg.norm(v, axis=0, keepdims=True))(x)


@mistake("normalize_columns", hints.HINT_SHARDING_OF_TRACER)
def reads_the_mesh_of_a_tracer(x):
    @jax.jit
    def normalize(v):
        v = jax.lax.with_sharding_constraint(v, NamedSharding(v.sharding.mesh, P(None, "data")))
        return v / jnp.sqrt(jnp.sum(v * v, axis=0))

    return normalize(x)


@mistake("normalize_columns", hints.HINT_COMMITTED_MISMATCH)
def asks_jit_for_columns_of_a_committed_array(x):
    return jax.jit(lambda v: v / jnp.sqrt(jnp.sum(v * v, axis=0)), in_shardings=by_columns())(x)


# --- make_sharded_affine --------------------------------------------------------------------
mistake("make_sharded_affine", hints.HINT_AFFINE_ONE_DEVICE, "jit_without_shardings")(
    affine_with((), (), shardings=False))
mistake("make_sharded_affine", hints.HINT_AFFINE_W_WHOLE, "w_and_b_replicated")(
    affine_with((), ()))


@mistake("make_sharded_affine", hints.HINT_RETURN_JITTED)
def returns_a_plain_function(mesh):
    return lambda x, w, b: x @ w + b


@mistake("make_sharded_affine", hints.HINT_AFFINE_GIVEN_MESH)
def builds_a_mesh_of_its_own(mesh):
    n = jax.device_count()
    own = Mesh(np.array(jax.devices()).reshape(n // 2, 2), ("data", "model"))
    return affine_with((None, "model"), ("model",))(own)


# --- fix_residual -------------------------------------------------------------------------
@mistake("fix_residual", hints.HINT_ILLEGAL_SHARDING)
def leaves_the_layer_as_it_was(x, w):
    return x + jnp.tanh(x @ w)


@mistake("fix_residual", hints.HINT_RESIDUAL_GATHERS_X)
def gathers_x_then_splits_the_rows_again(x, w):
    mesh = jax.typeof(x).sharding.mesh
    h = jnp.tanh(jax.reshard(x, NamedSharding(mesh, P())) @ w)
    return x + jax.reshard(h, NamedSharding(mesh, P("data", None)))


@mistake("fix_residual", hints.HINT_RESIDUAL_W_TWICE)
def splits_the_rows_of_w(x, w):
    mesh = jax.typeof(x).sharding.mesh
    return x + jnp.tanh(x @ jax.reshard(w, NamedSharding(mesh, P("data", None))))


@mistake("fix_residual", hints.HINT_RESIDUAL_TYPE, also=(hints.HINT_RESIDUAL_GATHERS_X,))
def replicates_everything(x, w):
    mesh = jax.typeof(x).sharding.mesh
    whole = NamedSharding(mesh, P())
    x = jax.reshard(x, whole)
    return x + jnp.tanh(x @ jax.reshard(w, whole))


@mistake("fix_residual", hints.HINT_NEEDS_OUT_SHARDING)
def splits_both_contracted_dimensions(x, w):
    mesh = jax.typeof(x).sharding.mesh
    x_cols = jax.reshard(x, NamedSharding(mesh, P(None, "data")))
    return x + jnp.tanh(x_cols @ jax.reshard(w, NamedSharding(mesh, P("data", None))))


@mistake("fix_residual", hints.HINT_SPEC_WITHOUT_MESH)
def passes_a_bare_spec_without_a_mesh(x, w):
    return x + jnp.tanh(jnp.dot(x, w, out_sharding=P("data", None)))


@mistake("fix_residual", hints.HINT_COMMITTED_DEVICES)
def gathers_w_through_the_host_onto_one_device(x, w):
    w = jax.device_put(np.asarray(w), jax.devices()[0])
    return x + jnp.tanh(x @ w)


@mistake("fix_residual", hints.HINT_MIXED_MESHES)
def places_w_on_an_auto_mesh_of_its_own(x, w):
    auto = Mesh(jax.devices(), ("data",))  # jax.sharding.Mesh: Auto axes
    w = jax.device_put(w, NamedSharding(auto, P()))
    return x + jnp.tanh(x @ w)


# --- matmul_type --------------------------------------------------------------------------
@mistake("matmul_type", hints.HINT_TYPE_ONE_SIDE_SPLIT)
def refuses_any_split_contraction(lhs, rhs):
    if lhs[1] is not None or rhs[0] is not None:
        return None
    return None if lhs[0] is not None and lhs[0] == rhs[1] else P(lhs[0], rhs[1])


@mistake("matmul_type", hints.HINT_TYPE_BOTH_SPLIT)
def refuses_only_the_same_axis_on_both_sides(lhs, rhs):
    if lhs[1] is not None and lhs[1] == rhs[0]:
        return None
    return None if lhs[0] is not None and lhs[0] == rhs[1] else P(lhs[0], rhs[1])


@mistake("matmul_type", hints.HINT_TYPE_AXIS_TWICE)
def forgets_that_an_axis_splits_one_dimension(lhs, rhs):
    if lhs[1] is not None and rhs[0] is not None:
        return None
    return P(lhs[0], rhs[1])


@mistake("matmul_type", hints.HINT_TYPE_WRONG_DIMENSIONS)
def knows_when_jax_refuses_but_keeps_the_split_of_x(lhs, rhs):
    return None if matmul_type_by_trying(lhs, rhs) is None else P(*lhs)


# --- init_layer ---------------------------------------------------------------------------
mistake("init_layer", hints.HINT_INIT_NOT_SPLIT, "bias_without_out_sharding")(
    init_with(P("data", "model"), None))
mistake("init_layer", hints.HINT_INIT_ONE_AXIS, "w_split_over_model_only")(
    init_with(P(None, "model"), P("model")))
mistake("init_layer", hints.HINT_INIT_SCALE, "scaled_by_the_variance")(
    init_with(P("data", "model"), P("model"), scale=lambda d_in: 2 / d_in))


# --- clip_outliers ------------------------------------------------------------------------
@mistake("clip_outliers", hints.HINT_EXPLICIT_REFUSES)
def leaves_the_quantile_on_split_rows(x):
    return jnp.minimum(x, jnp.quantile(x, 0.9, axis=1, keepdims=True))


@mistake("clip_outliers", hints.HINT_CLIP_XLA_SORTS)
def hands_the_quantile_to_auto_axes(x):
    cut = jax.sharding.auto_axes(lambda v: jnp.quantile(v, 0.9, axis=1, keepdims=True),
                                 out_sharding=P("data", None))(x)
    return jnp.minimum(x, cut)


mistake("clip_outliers", hints.HINT_CLIP_GATHERS_ROWS, "gathers_everything_first")(
    clip_via(P()))


@mistake("clip_outliers", hints.HINT_CLIP_TYPE)
def clips_the_gathered_copy(x):
    rows = jax.reshard(x, P("data", None))
    return jnp.minimum(rows, jnp.quantile(rows, 0.9, axis=1, keepdims=True))


@mistake("clip_outliers", hints.HINT_CLIP_AXIS, also=(hints.HINT_CLIP_GATHERS_ROWS,))
def cuts_each_column(x):
    columns = jax.reshard(x, P(None, "model"))
    return jnp.minimum(x, jnp.quantile(columns, 0.9, axis=0, keepdims=True))


@mistake("clip_outliers", hints.HINT_CLIP_FLOOR)
def clips_from_below(x):
    cut = jnp.quantile(jax.reshard(x, P("data", None)), 0.9, axis=1, keepdims=True)
    return jnp.clip(x, cut)


@mistake("clip_outliers", hints.HINT_CONSTRAINT_ON_EXPLICIT)
def constrains_instead_of_resharding(x):
    mesh = jax.typeof(x).sharding.mesh
    rows = jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("data", None)))
    return jnp.minimum(x, jnp.quantile(rows, 0.9, axis=1, keepdims=True))


def test_the_reference_predictions_are_what_jax_does():
    """Does the hidden test that compares predictions with JAX itself pass for a function
    that asks JAX, on every pair of specs? (So the reference's rule is JAX's rule.)"""
    from mistakes import hidden_result

    import grader.hidden.jit_sharding as hidden

    result = hidden_result("matmul_type:agrees_with_jax_itself", CORRECT["matmul_type"],
                           matmul_type_by_trying)
    assert result.points == result.max_points, result
    pairs = hidden.spec_pairs(("rows", "cols"))
    assert hidden.jax_types(pairs, ("rows", "cols")) == [
        "error" if matmul_type_by_trying(P(*lhs), P(*rhs)) is None
        else list(matmul_type_by_trying(P(*lhs), P(*rhs))) for lhs, rhs in pairs]


def test_drawing_whole_then_resharding_is_not_told_apart_in_the_kernel():
    """A weight drawn whole and then resharded has the right values and type: check() cannot
    see the difference (the verifier's count of each device's work, on 4 devices or more, is
    what fails it in the grader)."""
    def init_layer(key, d_in, d_out):
        w = jax.random.normal(key, (d_in, d_out)) * (2 / d_in) ** 0.5
        return {"w": jax.reshard(w, P("data", "model")),
                "b": jnp.zeros(d_out, out_sharding=P("model"))}

    assert_passes_without_hint(init_layer)


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "02_jit_sharding")
