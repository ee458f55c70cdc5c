"""Public tests of lesson 2 (jit and sharding propagation): ``check`` runs them in the notebook,
and the grader runs them too. Meshes and sizes are built from the number of devices there are,
so the tests run on 1, 2, 4 and 8 devices."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, Verdict, close
from grader.framework.placement import entry_axes, layout
from grader.framework.probes import hlo_collectives, input_shardings, jitted
from grader.hints import jit_sharding as hints


# --- meshes, specs and placements --------------------------------------------------------------
def mesh_shape(first: str = "many") -> tuple[int, int]:
    """A 2-D mesh shape over every device: ``"many"`` puts most devices on the first axis
    (4 x 2 on 8 devices), ``"few"`` on the second (2 x 4), ``"all"`` all of them (8 x 1) and
    ``"none"`` none of them (1 x 8)."""
    n = jax.device_count()
    two = 2 if n % 2 == 0 else 1
    return {"many": (n // two, two), "few": (two, n // two), "all": (n, 1), "none": (1, n)}[first]


def auto_mesh(shape: tuple[int, int], names: tuple[str, str] = ("x", "y")) -> Mesh:
    """A mesh with Auto axes over every device, in order."""
    return Mesh(np.array(jax.devices()).reshape(shape), names)


def spec_list(spec: Any) -> list:
    """A PartitionSpec as plain data: one entry per dimension, a name, None or a list."""
    return [list(entry) if isinstance(entry, tuple) else entry for entry in spec]


def as_spec(spec: Any) -> P:
    """The student's spec as a PartitionSpec (a plain tuple is accepted too)."""
    return spec if isinstance(spec, P) else P(*spec)


def placement(sharding: Any, shape: tuple[int, ...]) -> list:
    """Which block of an array of ``shape`` each device holds under ``sharding``: one entry
    per device, by device id, of ``[device id, [[start, stop] per dimension]]``."""
    blocks = sharding.devices_indices_map(tuple(shape))
    return [
        [device.id, [list(s.indices(size)[:2]) for s, size in zip(index, shape, strict=True)]]
        for device, index in sorted(blocks.items(), key=lambda item: item[0].id)
    ]


def _names(entry: Any) -> set:
    return set(entry_axes(entry))


def _entry(spec: list, dim: int) -> Any:
    return spec[dim] if len(spec) > dim else None


# --- no_comm_matmul_specs -------------------------------------------------------------------
def matmul_operands(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """x of shape (4n, 3n) and w of shape (3n, 2n): every dimension divides by any mesh axis."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4 * n, 3 * n)).astype(np.float32),
            rng.normal(size=(3 * n, 2 * n)).astype(np.float32))


def placed_matmul(fn, shape: tuple[int, int], seed: int):
    """Place x and w with the student's specs on an ('x', 'y') mesh of ``shape``."""
    lhs, rhs = (as_spec(spec) for spec in fn())
    mesh = auto_mesh(shape)
    x, w = matmul_operands(seed)
    x, w = jax.device_put(x, NamedSharding(mesh, lhs)), jax.device_put(w, NamedSharding(mesh, rhs))
    return x, w, {"_lhs": spec_list(lhs), "_rhs": spec_list(rhs)}


def matmul_without_communication(fn, shape: tuple[int, int], seed: int) -> dict:
    x, w, specs = placed_matmul(fn, shape, seed)
    return {"result": jax.jit(jnp.dot)(x, w), "collectives": hlo_collectives(jnp.dot, x, w),
            **specs}


split_contraction = Hint(
    lambda got, want: bool(_names(_entry(got["_lhs"], 1)) | _names(_entry(got["_rhs"], 0))),
    hints.HINT_SPLIT_CONTRACTION,
)
same_axis_twice = Hint(
    lambda got, want: bool(_names(_entry(got["_lhs"], 0)) & _names(_entry(got["_rhs"], 1))),
    hints.HINT_SAME_AXIS_TWICE,
)


@case("no_comm_matmul_specs", hidden=False, hints=[split_contraction, same_axis_twice])
def no_collective_on_a_mesh_with_more_rows(fn):
    return matmul_without_communication(fn, mesh_shape("many"), seed=0)


# --- count_collectives ----------------------------------------------------------------------
def line_mesh() -> Mesh:
    return Mesh(jax.devices(), ("d",))


def split_contraction_operands() -> tuple[jax.Array, jax.Array]:
    """a split by columns and b by rows: their product needs an all-reduce."""
    n, mesh = jax.device_count(), line_mesh()
    a = np.arange(4 * n * 2 * n, dtype=np.float32).reshape(4 * n, 2 * n) / 10
    b = np.ones((2 * n, 3 * n), np.float32)
    return (jax.device_put(a, NamedSharding(mesh, P(None, "d"))),
            jax.device_put(b, NamedSharding(mesh, P("d", None))))


def _pairs(got: dict, want: dict):
    """(student's count, reference's count) for every program and every collective."""
    for key, counts in want.items():
        if key.startswith("_") or not isinstance(counts, dict):
            continue
        for op, count in counts.items():
            yield int(np.asarray(got[key][op]).item()), int(np.asarray(count).item())


read_lowered = Hint(
    lambda got, want: all(g == 0 for g, _ in _pairs(got, want))
    and any(w > 0 for _, w in _pairs(got, want)),
    hints.HINT_COUNTED_LOWERED,
)
counted_twice = Hint(lambda got, want: any(g > w for g, w in _pairs(got, want)),
                     hints.HINT_COUNTED_TWICE)


def replicate_then(fn, mesh: Mesh):
    """``fn`` applied to its argument made replicated on ``mesh``."""

    def replicated(v):
        return fn(jax.lax.with_sharding_constraint(v, NamedSharding(mesh, P())))

    return replicated


def wave(v):
    return jnp.sin(v) * 2 + 1


@case("count_collectives", hidden=False, hints=[read_lowered, counted_twice])
def counts_the_all_reduce_of_a_split_contraction(fn):
    a, b = split_contraction_operands()
    return {"split_contraction": fn(jnp.dot, a, b), "elementwise": fn(wave, a)}


@case("count_collectives", hidden=False, hints=[read_lowered, counted_twice])
def counts_a_gather_whose_result_is_reused(fn):
    n = jax.device_count()
    data = np.ones((4 * n, 2 * n), np.float32)
    line, grid = line_mesh(), auto_mesh(mesh_shape("many"))
    on_line = jax.device_put(data, NamedSharding(line, P("d")))
    on_grid = jax.device_put(data, NamedSharding(grid, P("x", "y")))
    return {"gather_on_one_axis": fn(replicate_then(wave, line), on_line),
            "gather_on_two_axes": fn(replicate_then(wave, grid), on_grid)}


# --- normalize_columns ----------------------------------------------------------------------
def row_split(x: np.ndarray) -> jax.Array:
    """``x`` split by rows over Mesh(jax.devices(), ('data',)), as the exercise promises."""
    return jax.device_put(x, NamedSharding(Mesh(jax.devices(), ("data",)), P("data", None)))


def column_matrix(rows: int, cols: int, seed: int | None = None) -> np.ndarray:
    """A matrix of shape (rows * n, cols * n) with no zero column."""
    n = jax.device_count()
    shape = (rows * n, cols * n)
    if seed is None:
        return np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape) / 10
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def normalized(fn, x: np.ndarray) -> dict:
    placed = row_split(x)
    out = fn(placed)
    return {"result": out, "layout": layout(out), "_input_layout": layout(placed)}


still_by_rows = Hint(
    lambda got, want: close(got["layout"], want["_input_layout"]), hints.HINT_NORMS_FROM_ROWS
)
constrained_late = Hint(
    lambda got, want: got["all-reduce"] > 0 and got["all-to-all"] > 0,
    hints.HINT_CONSTRAINED_TOO_LATE,
)
norms_from_rows = Hint(lambda got, want: got["all-reduce"] > 0, hints.HINT_NORMS_FROM_ROWS)


@case("normalize_columns", hidden=False, hints=[still_by_rows])
def normalizes_and_splits_by_columns(fn):
    return normalized(fn, column_matrix(4, 2))


@case("normalize_columns", hidden=False, hints=[constrained_late, norms_from_rows])
def compiles_to_one_all_to_all(fn):
    return hlo_collectives(fn, row_split(column_matrix(4, 2)))


# --- make_sharded_affine --------------------------------------------------------------------
def affine_inputs(seed: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """x (4n, 3), w (3, 2n), b (2n,) as NumPy arrays."""
    n = jax.device_count()
    if seed is None:
        x = np.arange(4 * n * 3, dtype=np.float32).reshape(4 * n, 3) / 10
        w = np.linspace(-1, 1, 3 * 2 * n, dtype=np.float32).reshape(3, 2 * n)
        return x, w, np.arange(2 * n, dtype=np.float32)
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(4 * n, 3)).astype(np.float32),
            rng.normal(size=(3, 2 * n)).astype(np.float32),
            rng.normal(size=2 * n).astype(np.float32))


def affine_mesh(shape: tuple[int, int]) -> Mesh:
    return auto_mesh(shape, ("data", "model"))


def sharded_affine(fn, shape: tuple[int, int], seed: int | None = None,
                   committed: bool = False) -> dict:
    """Call the jitted function ``fn(mesh)`` returns; measure values and placements."""
    mesh = affine_mesh(shape)
    f = fn(mesh)
    x, w, b = args = affine_inputs(seed)
    if committed:
        specs = (P("data", None), P(None, "model"), P("model"))
        args = tuple(jax.device_put(a, NamedSharding(mesh, s))
                     for a, s in zip(args, specs, strict=True))
    x_in, w_in, b_in = input_shardings(f, *args)
    out = f(*args)
    one_device = SingleDeviceSharding(jax.devices()[0])
    return {
        "result": out,
        "x_blocks": placement(x_in, x.shape),
        "w_blocks": placement(w_in, w.shape),
        "b_blocks": placement(b_in, b.shape),
        "result_blocks": placement(out.sharding, out.shape),
        "_one_device": placement(one_device, out.shape),
        "_w_whole": placement(NamedSharding(mesh, P()), w.shape),
    }


on_one_device = Hint(lambda got, want: close(got["result_blocks"], want["_one_device"]),
                     hints.HINT_AFFINE_ONE_DEVICE)
w_whole = Hint(lambda got, want: close(got["w_blocks"], want["_w_whole"]),
               hints.HINT_AFFINE_W_WHOLE)
given_mesh = Hint(lambda got, want: close(got["result"], want["result"]),
                  hints.HINT_AFFINE_GIVEN_MESH)


@case("make_sharded_affine", hidden=False, hints=[on_one_device, w_whole, given_mesh])
def places_numpy_inputs_and_the_result(fn):
    return sharded_affine(fn, mesh_shape("many"))


@case("make_sharded_affine", hidden=False, hints=[on_one_device, w_whole, given_mesh])
def uses_the_mesh_it_is_given(fn):
    """The same on a mesh of another shape (2 x 4 on 8 devices): a function that builds
    a mesh of its own instead of the one given passes the first case only."""
    return sharded_affine(fn, mesh_shape("few"))


# --- fix_residual -------------------------------------------------------------------------
def residual_operands(rows: int, width: int, seed: int) -> tuple[jax.Array, jax.Array]:
    """x (rows * n, width * n) typed P('data', None) and w (width * n, width * n) typed
    P(None, 'data') on the Explicit mesh jax.make_mesh((n,), ('data',))."""
    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("data",))
    rng = np.random.default_rng(seed)
    d = width * n
    x = rng.normal(size=(rows * n, d)).astype(np.float32)
    w = (rng.normal(size=(d, d)) / np.sqrt(d)).astype(np.float32)
    return (jax.device_put(x, NamedSharding(mesh, P("data", None))),
            jax.device_put(w, NamedSharding(mesh, P(None, "data"))))


def residual_case(fn, rows: int, width: int, seed: int, jit: bool = False) -> dict:
    """The student's residual layer: its value and its type."""
    x, w = residual_operands(rows, width, seed)
    out = (jitted(fn) if jit else fn)(x, w)
    return {"result": out, "type_spec": spec_list(jax.typeof(out).sharding.spec)}


def residual_program(fn, rows: int, width: int, seed: int) -> dict:
    """What the compiled program of the residual layer communicates, and the blocks it
    gathers; with the shape of a block of x and of w for the hints."""
    from grader.public.training import gathered_shapes  # the measure is registered there

    x, w = residual_operands(rows, width, seed)
    n = jax.device_count()
    return {"collectives": hlo_collectives(fn, x, w), "gathered": gathered_shapes(fn, x, w),
            "_x_block": [x.shape[0] // n, x.shape[1]], "_w_block": [w.shape[0], w.shape[1] // n]}


residual_not_rows = Hint(lambda got, want: got["type_spec"] != want["type_spec"],
                         hints.HINT_RESIDUAL_TYPE)
residual_gathers_x = Hint(lambda got, want: want["_x_block"] in [list(s) for s in
                                                                  got.get("gathered", [])],
                          hints.HINT_RESIDUAL_GATHERS_X)
residual_moves_w_twice = Hint(lambda got, want: got["collectives"]["all-to-all"] > 0,
                              hints.HINT_RESIDUAL_W_TWICE)
RESIDUAL_PROGRAM_HINTS = [residual_gathers_x, residual_moves_w_twice]


@case("fix_residual", hidden=False, hints=[residual_not_rows])
def residual_typed_like_x(fn):
    return residual_case(fn, rows=8, width=2, seed=0)


@case("fix_residual", hidden=False, hints=RESIDUAL_PROGRAM_HINTS)
def gathers_w_and_nothing_else(fn):
    return residual_program(fn, rows=8, width=2, seed=1)


# --- matmul_type --------------------------------------------------------------------------
def operand_specs(names: tuple[str, str]) -> list[tuple]:
    """Every two-entry spec over ``names`` that names no axis twice."""
    entries = (None, *names)
    return [(a, b) for a in entries for b in entries if a is None or a != b]


def spec_pairs(names: tuple[str, str]) -> list[tuple[tuple, tuple]]:
    """Every (lhs, rhs) pair of operand specs over ``names``: 49 pairs."""
    return [(lhs, rhs) for lhs in operand_specs(names) for rhs in operand_specs(names)]


#: The pairs of the public test: one of each kind of answer, on the axes ('x', 'y').
SHOWN_PAIRS = [
    (("x", None), (None, "y")), ((None, "x"), (None, "y")), (("x", "y"), ("x", None)),
    (("y", None), (None, "y")), ((None, "x"), ("x", None)), ((None, None), ("y", "x")),
    (("x", None), ("y", None)), ((None, "y"), ("x", "y")),
]


def kind_of(lhs: tuple, rhs: tuple) -> str:
    """Why JAX types x @ w as it does: ``"both_split"`` and ``"axis_twice"`` raise."""
    if lhs[1] is not None and rhs[0] is not None:
        return "both_split"
    if lhs[0] is not None and lhs[0] == rhs[1]:
        return "axis_twice"
    return "typed"


def predicted_types(fn, pairs: list[tuple[tuple, tuple]]) -> dict:
    """The student's answer for every pair, ``"error"`` for None; and each pair's kind."""
    answers = []
    for lhs, rhs in pairs:
        answer = fn(P(*lhs), P(*rhs))
        answers.append("error" if answer is None else spec_list(as_spec(answer)))
    return {"types": answers, "_kinds": [kind_of(lhs, rhs) for lhs, rhs in pairs],
            "_pairs": [[list(lhs), list(rhs)] for lhs, rhs in pairs]}


def jax_types(pairs: list[tuple[tuple, tuple]], names: tuple[str, str]) -> list:
    """What JAX itself types x @ w as, for every pair, on an Explicit mesh (``"error"`` where
    it raises); shapes only, nothing is computed."""
    n = jax.device_count()
    mesh = jax.make_mesh(mesh_shape("many"), names)
    found = []
    for lhs, rhs in pairs:
        x = jax.ShapeDtypeStruct((2 * n, 4 * n), jnp.float32, sharding=NamedSharding(mesh, P(*lhs)))
        w = jax.ShapeDtypeStruct((4 * n, 2 * n), jnp.float32, sharding=NamedSharding(mesh, P(*rhs)))
        try:
            found.append(spec_list(jax.eval_shape(jnp.matmul, x, w).sharding.spec))
        except Exception:  # noqa: BLE001 - a ShardingTypeError: JAX will not choose
            found.append("error")
    return found


def _answers_of_kind(got: dict, want: dict, kind: str):
    """(student's answer, reference's) for the pairs of ``kind`` the student got wrong."""
    return [(g, w) for g, w, k in zip(got["types"], want["types"], want["_kinds"], strict=True)
            if k == kind and not close(g, w)]


def _wrong(got: dict, want: dict, kind: str) -> bool:
    return len(got.get("types", [])) == len(want["types"]) and bool(
        _answers_of_kind(got, want, kind))


refused_one_side = Hint(lambda got, want: any(g == "error" for g, _ in
                                              _answers_of_kind(got, want, "typed")),
                        hints.HINT_TYPE_ONE_SIDE_SPLIT)
both_split_typed = Hint(lambda got, want: _wrong(got, want, "both_split"),
                        hints.HINT_TYPE_BOTH_SPLIT)
axis_twice_typed = Hint(lambda got, want: _wrong(got, want, "axis_twice"),
                        hints.HINT_TYPE_AXIS_TWICE)
wrong_dimensions = Hint(lambda got, want: _wrong(got, want, "typed"),
                        hints.HINT_TYPE_WRONG_DIMENSIONS)
TYPE_HINTS = [refused_one_side, both_split_typed, axis_twice_typed, wrong_dimensions]


@case("matmul_type", hidden=False, hints=TYPE_HINTS)
def predicts_the_four_cases_and_four_more(fn):
    return predicted_types(fn, SHOWN_PAIRS)


# --- init_layer ---------------------------------------------------------------------------
def layer_sizes(shape: tuple[int, int]) -> tuple[int, int]:
    """d_in and d_out that divide by the mesh's 'data' and 'model' sizes, and differ."""
    return 3 * shape[0] * shape[1], 2 * shape[0] * shape[1]


def initialised(fn, shape: tuple[int, int], seed: int, jit: bool = False) -> dict:
    """``fn(key, d_in, d_out)`` under an Explicit ('data', 'model') mesh set with set_mesh:
    the parameters, their types and their blocks, and what the likely mistakes would give."""
    mesh = jax.make_mesh(shape, ("data", "model"))
    d_in, d_out = layer_sizes(shape)
    key = jax.random.key(seed)
    with jax.set_mesh(mesh):
        params = (jitted(fn, (1, 2)) if jit else fn)(key, d_in, d_out)
        types = {k: spec_list(jax.typeof(v).sharding.spec) for k, v in params.items()}
    drawn = np.asarray(jax.random.normal(key, (d_in, d_out)))
    return {"result": params, "types": types,
            "blocks": {k: layout(v)["shard_shapes"] for k, v in params.items()},
            "_unscaled": drawn, "_scaled_by_variance": drawn * 2 / d_in}


def _spec_names(spec: list) -> set:
    return set().union(*(_names(entry) for entry in spec)) if spec else set()


not_split_at_birth = Hint(
    lambda got, want: any(_spec_names(spec) and not _spec_names(got.get("types", {}).get(k, []))
                          for k, spec in want.get("types", {}).items()),
    hints.HINT_INIT_NOT_SPLIT,
)
w_on_one_axis = Hint(
    lambda got, want: len(_spec_names(got.get("types", {}).get("w", []))) == 1,
    hints.HINT_INIT_ONE_AXIS,
)
wrong_scale = Hint(
    lambda got, want: isinstance(got.get("result"), dict) and "w" in got["result"]
    and (close(got["result"]["w"], want["_unscaled"])
         or close(got["result"]["w"], want["_scaled_by_variance"])),
    hints.HINT_INIT_SCALE,
)
INIT_HINTS = [not_split_at_birth, w_on_one_axis, wrong_scale]


@case("init_layer", hidden=False, hints=INIT_HINTS)
def parameters_typed_and_placed_as_asked(fn):
    return initialised(fn, mesh_shape("many"), seed=0)


# --- clip_outliers ------------------------------------------------------------------------
def clip_rows(shape: tuple[int, int], seed: int) -> np.ndarray:
    """A batch of 2 rows per 'data' device and 5 features per 'model' device."""
    return np.random.default_rng(seed).normal(size=(2 * shape[0], 5 * shape[1])).astype(
        np.float32)


def placed_rows(shape: tuple[int, int], seed: int) -> tuple[Mesh, jax.Array]:
    mesh = jax.make_mesh(shape, ("data", "model"))
    return mesh, jax.device_put(clip_rows(shape, seed), NamedSharding(mesh, P("data", "model")))


def clipped_case(fn, shape: tuple[int, int], seed: int, jit: bool = False) -> dict:
    """``fn(x)`` for x typed P('data', 'model') on an Explicit mesh set with set_mesh."""
    mesh, placed = placed_rows(shape, seed)
    with jax.set_mesh(mesh):
        out = (jitted(fn) if jit else fn)(placed)
        out_type = spec_list(jax.typeof(out).sharding.spec)
    x = clip_rows(shape, seed)
    return {"result": out, "type": out_type,
            "_down_columns": np.minimum(x, np.quantile(x, 0.9, axis=0, keepdims=True)),
            "_floored": np.maximum(x, np.quantile(x, 0.9, axis=1, keepdims=True))}


def clipped_program(fn, shape: tuple[int, int], seed: int) -> dict:
    """The bytes one device sends in the compiled program of ``fn``, and its collectives."""
    from grader.public.cost import cost_bytes_sent  # the measure is registered there

    mesh, placed = placed_rows(shape, seed)
    with jax.set_mesh(mesh):
        return {"sent": cost_bytes_sent(fn, placed), "collectives": hlo_collectives(fn, placed)}


clip_type = Hint(lambda got, want: "type" in got and got["type"] != want["type"],
                 hints.HINT_CLIP_TYPE)
clip_down_columns = Hint(lambda got, want: close(got.get("result"), want["_down_columns"]),
                         hints.HINT_CLIP_AXIS)
clip_floored = Hint(lambda got, want: close(got.get("result"), want["_floored"]),
                    hints.HINT_CLIP_FLOOR)
CLIP_HINTS = [clip_type, clip_down_columns, clip_floored]


def no_more_bytes_than_a_row_gather(got: dict, want: dict) -> Verdict:
    """A judge of clipped_program: the program sends no more than the reference's, which
    gathers each row along 'model' for the quantile and nothing else."""
    have, best = got.get("sent"), want.get("sent")
    if have is not None and float(have) <= float(best) + 1e-6:
        return Verdict(True)
    sorted_by_xla = (got.get("collectives") or {}).get("all-to-all", 0) > 0
    return Verdict(False, hints.MSG_CLIP_BYTES.format(have=have, best=float(best)),
                   hints.HINT_CLIP_XLA_SORTS if sorted_by_xla else hints.HINT_CLIP_GATHERS_ROWS)


@case("clip_outliers", hidden=False, hints=CLIP_HINTS)
def clipped_and_typed_like_x(fn):
    return clipped_case(fn, mesh_shape("many"), seed=0)


@case("clip_outliers", hidden=False, judge=no_more_bytes_than_a_row_gather)
def sends_no_more_than_a_row_gather(fn):
    return clipped_program(fn, mesh_shape("many"), seed=1)
