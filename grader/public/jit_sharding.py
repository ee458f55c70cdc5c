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

from grader.cases import case
from grader.hints import jit_sharding as hints
from grader.judge import Hint, close
from grader.probes import hlo_collectives, layout


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
    if entry is None:
        return set()
    return set(entry) if isinstance(entry, list) else {entry}


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
    compiled = f.lower(*args).compile()
    out = f(*args)
    one_device = SingleDeviceSharding(jax.devices()[0])
    x_in, w_in, b_in = compiled.input_shardings[0]
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


@case("make_sharded_affine", hidden=False, hints=[on_one_device, w_whole])
def places_numpy_inputs_and_the_result(fn):
    return sharded_affine(fn, mesh_shape("many"))


# --- explicit_matmul ------------------------------------------------------------------------
def explicit_operands(shape: tuple[int, int], seed: int) -> tuple[jax.Array, jax.Array]:
    """x (2n, 4n) split P('x', 'y') and w (4n, 3n) split P('y', None) on an Explicit mesh."""
    n = jax.device_count()
    mesh = jax.make_mesh(shape, ("x", "y"))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2 * n, 4 * n)).astype(np.float32)
    w = rng.normal(size=(4 * n, 3 * n)).astype(np.float32)
    return (jax.device_put(x, NamedSharding(mesh, P("x", "y"))),
            jax.device_put(w, NamedSharding(mesh, P("y", None))))


def explicit_product(fn, shape: tuple[int, int], seed: int, jit: bool = False) -> dict:
    x, w = explicit_operands(shape, seed)
    out = (jax.jit(fn) if jit else fn)(x, w)
    return {"result": out, "type_spec": spec_list(jax.typeof(out).sharding.spec)}


columns_not_split = Hint(lambda got, want: _entry(got["type_spec"], 1) is None,
                         hints.HINT_EXPLICIT_COLUMNS)


@case("explicit_matmul", hidden=False, hints=[columns_not_split])
def product_typed_as_split_over_x_and_y(fn):
    return explicit_product(fn, mesh_shape("many"), seed=0)
