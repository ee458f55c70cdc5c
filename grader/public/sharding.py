"""Public tests of lesson 1 (sharding): ``check`` runs them in the notebook, and the grader
runs them too. Meshes are built from the devices there are, so they run on 1 device or 8."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.cases import case
from grader.hints import sharding as hints
from grader.judge import Hint, Verdict, close, same
from grader.probes import layout

NOT_A_NAMED_SHARDING = "not placed with a NamedSharding"


# --- meshes and inputs ----------------------------------------------------------------------
def grid(rows: int | None = None) -> tuple[int, int]:
    """A 2-D mesh shape using every device: ``rows`` rows if given, else two columns when the
    device count is even (4 x 2 on 8 devices, 1 x 2 on 2, 1 x 1 on 1)."""
    n = jax.device_count()
    if rows is None:
        rows = n // 2 if n % 2 == 0 else n
    return rows, n // rows


def mesh_xy(shape: tuple[int, int], auto: bool = False) -> Mesh:
    """A mesh of the first devices with axes ('x', 'y'): Explicit axes from jax.make_mesh,
    or Auto axes from jax.sharding.Mesh."""
    devices = jax.devices()[: shape[0] * shape[1]]
    if auto:
        return Mesh(np.array(devices).reshape(shape), ("x", "y"))
    return jax.make_mesh(shape, ("x", "y"), devices=devices)


def matrix(shape: tuple[int, int], seed: int, integers: bool = False) -> np.ndarray:
    """Deterministic test data. The placement tests use sides that are multiples of the
    device count, so that a wrong spec gives a wrong layout (and its hint) rather than an
    error from device_put."""
    rng = np.random.default_rng(seed)
    if integers:
        return rng.integers(-100, 100, size=shape).astype(np.int32)
    return rng.normal(size=shape).astype(np.float32)


# --- measuring a placement ------------------------------------------------------------------
def _entry(entry: Any) -> Any:
    if entry is None or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        names = [str(name) for name in entry]
        return None if not names else names[0] if len(names) == 1 else names
    return str(entry)


def spec_of(x: Any) -> list | str:
    """The PartitionSpec of ``x`` as plain lists, one entry per dimension, so that
    ``P('x')``, ``P('x', None)`` and ``P(('x',), None)`` read the same."""
    sharding = getattr(x, "sharding", None)
    if not isinstance(x, jax.Array) or not isinstance(sharding, NamedSharding):
        return NOT_A_NAMED_SHARDING
    entries = [_entry(e) for e in sharding.spec]
    return entries + [None] * (x.ndim - len(entries))


def placed(x: Any) -> dict[str, Any]:
    """What a placement gives: its spec, the block shape on each device and its values."""
    return {"spec": spec_of(x), "layout": layout(x), "values": np.asarray(x)}


def placement(hints: Sequence[Hint], *extra: str) -> Callable[[dict, dict], Verdict]:
    """A judge comparing the spec first, then the layout, any ``extra`` measurements and the
    values, so that a wrong placement is reported by its spec."""
    return same("spec", "layout", *extra, "values", hints=hints)


# --- hints ----------------------------------------------------------------------------------
def guarded(test: Callable[[dict, dict], bool]) -> Callable[[dict, dict], bool]:
    """A hint condition that is simply false on data shaped unlike what it expects."""

    def condition(got: dict, want: dict) -> bool:
        try:
            return bool(test(got, want))
        except Exception:  # noqa: BLE001 - a student's result may have any shape
            return False

    return condition


def spec_hint(text: str, *specs: list) -> Hint:
    """Show ``text`` when the student's spec is one of ``specs``."""
    return Hint(guarded(lambda got, want: got["spec"] in specs), text)


not_placed = Hint(guarded(lambda got, want: got["spec"] == NOT_A_NAMED_SHARDING),
                  hints.HINT_NOT_PLACED)
other_mesh = Hint(guarded(lambda got, want: close(got["spec"], want["spec"])
                          and not close(got["layout"], want["layout"])), hints.HINT_GIVEN_MESH)


def _differ(got: dict, want: dict) -> list[int]:
    """Positions of the calls whose result differs from the reference's."""
    return [i for i, (g, w) in enumerate(zip(got["result"], want["result"], strict=True))
            if not close(g, w)]


def _differing_calls(test: Callable[[Any], bool], text: str, every: bool) -> Hint:
    """Show ``text`` when some (``every=False``) or every (``every=True``) call whose result
    is wrong has inputs, in ``want["_pairs"]``, that pass ``test``."""

    def applies(got: dict, want: dict) -> bool:
        wrong = [test(want["_pairs"][i]) for i in _differ(got, want)]
        return bool(wrong) and (all(wrong) if every else any(wrong))

    return Hint(guarded(applies), text)


def _has_zero(pair: Sequence) -> bool:
    return any(int(size) == 0 for size in pair[0])


CONGRUENT_HINTS = [
    _differing_calls(lambda pair: len(pair[0]) != len(pair[1]), hints.HINT_CONGRUENT_LENGTH,
                     every=True),
    _differing_calls(_has_zero, hints.HINT_CONGRUENT_ZERO, every=True),
    _differing_calls(lambda pair: len(pair[0]) == len(pair[1]) and not _has_zero(pair),
                     hints.HINT_CONGRUENT_REVERSED, every=False),
]


def _any_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(_any_float(v) for v in value)
    return isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _calls_with(test: Callable[[Any, Any, list], bool]) -> Callable[[dict, dict], bool]:
    """True when, for some call, ``test(got result, wanted result, call)`` holds."""
    return guarded(lambda got, want: any(
        test(g, w, call)
        for g, w, call in zip(got["result"], want["result"], want["_calls"], strict=True)))


def _wrong_shapes_all(test: Callable[[Any, Any, list], bool]) -> Callable[[dict, dict], bool]:
    """True when some call gave a wrong shape where a shape was due, and every such call
    passes ``test(got result, wanted result, call)``."""

    def applies(got: dict, want: dict) -> bool:
        wrong = [test(g, w, call) for g, w, call
                 in zip(got["result"], want["result"], want["_calls"], strict=True)
                 if _shapes(g, w) and not close(g, w)]
        return bool(wrong) and all(wrong)

    return guarded(applies)


def _shapes(g: Any, w: Any) -> bool:
    return isinstance(g, list) and isinstance(w, list)


def _only_tuple_dims_differ(g: Any, w: Any, call: list) -> bool:
    """Two shapes of one length that differ only where the spec has a tuple of axes."""
    if len(g) != len(w):
        return False
    spec = call[2]
    return all(d < len(spec) and isinstance(spec[d], list) and len(spec[d]) > 1
               for d in range(len(w)) if not close(g[d], w[d]))


SHAPE_HINTS = [
    Hint(guarded(lambda got, want: _any_float(got["result"])), hints.HINT_SHARD_SHAPE_INTEGERS),
    Hint(_calls_with(lambda g, w, call: _shapes(g, w) and len(g) < len(w)),
         hints.HINT_SHARD_SHAPE_MISSING),
    Hint(_wrong_shapes_all(_only_tuple_dims_differ), hints.HINT_SHARD_SHAPE_TUPLE),
    Hint(_calls_with(lambda g, w, call: isinstance(w, str) and not isinstance(g, str)),
         hints.HINT_SHARD_SHAPE_RAISE),
]

SHARD_2D_HINTS = [
    not_placed,
    other_mesh,
    spec_hint(hints.HINT_TUPLE_NOT_TWO, [["x", "y"], None]),
    spec_hint(hints.HINT_SPEC_ORDER, ["y", "x"]),
    spec_hint(hints.HINT_ROWS_ONLY, ["x", None]),
]
ROWS_OVER_BOTH_HINTS = [
    not_placed,
    other_mesh,
    spec_hint(hints.HINT_TUPLE_ORDER, [["y", "x"], None]),
    spec_hint(hints.HINT_TUPLE_NOT_TWO, ["x", "y"]),
    spec_hint(hints.HINT_ROWS_ONE_AXIS, ["x", None], ["y", None]),
]
REPLICATE_HINTS = [
    not_placed,
    other_mesh,
    spec_hint(hints.HINT_REPLICATE_ROWS_SPLIT, ["y", None], ["x", "y"], ["y", "x"]),
    spec_hint(hints.HINT_REPLICATE_WRONG_AXIS, [None, "x"]),
    spec_hint(hints.HINT_REPLICATE_EVERYTHING, [None, None]),
]


def _leaves(value: Any):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def _starts_all_zero(result: Any) -> bool:
    return all(int(np.asarray(pair[0]).item()) == 0 for pair in _pairs_of(result))


def _pairs_of(result: Any) -> list:
    return [pair for block in result.values() for pair in block]


block_slices = Hint(guarded(lambda got, want: any(isinstance(v, str) and v.startswith("slice(")
                                                for v in _leaves(got["result"]))),
                    hints.HINT_BLOCK_MAP_SLICES)
block_none = Hint(guarded(lambda got, want: any(v is None for v in _leaves(got["result"]))),
                  hints.HINT_BLOCK_MAP_NONE)
block_keys = Hint(guarded(lambda got, want: not all(str(k).isdigit() for k in got["result"])),
                  hints.HINT_BLOCK_MAP_KEYS)
block_offsets = Hint(guarded(lambda got, want: _starts_all_zero(got["result"])
                           and not _starts_all_zero(want["result"])),
                     hints.HINT_BLOCK_MAP_OFFSETS)
BLOCK_HINTS = [block_slices, block_none, block_keys, block_offsets]


# --- calling the student's function -------------------------------------------------------
def congruence(fn: Callable, pairs: Sequence[tuple[tuple, tuple]]) -> dict[str, Any]:
    """``fn`` on every pair, and the pairs themselves for the hints."""
    return {"result": [fn(x, s) for x, s in pairs], "_pairs": [list(p) for p in pairs]}


def attempt(fn: Callable, *args: Any) -> Any:
    """``fn(*args)``, or the string "ValueError" when it raises one (a measurement too)."""
    try:
        return fn(*args)
    except ValueError:
        return "ValueError"


def shard_shapes(fn: Callable, calls: Sequence[tuple]) -> dict[str, Any]:
    """``fn`` on every (global_shape, mesh_shape, spec), and the calls for the hints."""
    return {
        "result": [attempt(fn, shape, dict(mesh), spec) for shape, mesh, spec in calls],
        "_calls": [[list(shape), dict(mesh), list(spec)] for shape, mesh, spec in calls],
    }


def readable(value: Any) -> Any:
    """A block map with anything the grader cannot read (slices, devices) turned into text,
    so that a wrong type shows up as a wrong value."""
    if isinstance(value, dict):
        return {str(k) if isinstance(k, (int, np.integer, str)) else repr(k): readable(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [readable(v) for v in value]
    if isinstance(value, jax.Array):
        return np.asarray(value)
    if value is None or isinstance(value, (bool, int, float, np.number, np.ndarray, str)):
        return value
    return repr(value)


# --- is_congruent ---------------------------------------------------------------------------
@case("is_congruent", hidden=False, hints=CONGRUENT_HINTS)
def small_examples(fn):
    return congruence(fn, [((8, 6), (4, 2)), ((8, 5), (4, 2)), ((8,), (4, 2)),
                           ((16, 4), (8, 1)), ((2, 4), (4, 2)), ((0, 6), (4, 2))])


# --- shard_shape ----------------------------------------------------------------------------
MESH_4X2 = {"x": 4, "y": 2}


@case("shard_shape", hidden=False, hints=SHAPE_HINTS)
def splits_over_named_axes(fn):
    return shard_shapes(fn, [
        ((8, 6), MESH_4X2, ("x", "y")),
        ((8, 6), MESH_4X2, (None, "y")),
        ((8, 6), MESH_4X2, ("y",)),
        ((8, 6), MESH_4X2, (("x", "y"),)),
        ((8, 6), MESH_4X2, ()),
    ])


@case("shard_shape", hidden=False, hints=SHAPE_HINTS)
def refuses_uneven_splits(fn):
    return shard_shapes(fn, [
        ((6, 4), MESH_4X2, ("x", "y")),
        ((8, 5), MESH_4X2, ("x", "y")),
        ((12, 2), MESH_4X2, (("x", "y"),)),
        ((12, 2), MESH_4X2, ("x", None)),
    ])


# --- shard_2d -------------------------------------------------------------------------------
@case("shard_2d", hidden=False, judge=placement(SHARD_2D_HINTS))
def rows_over_x_columns_over_y(fn):
    n = jax.device_count()
    return placed(fn(matrix((2 * n, n), seed=1), mesh_xy(grid())))


# --- shard_rows_over_both -------------------------------------------------------------------
@case("shard_rows_over_both", hidden=False, judge=placement(ROWS_OVER_BOTH_HINTS))
def rows_over_both_axes(fn):
    n = jax.device_count()
    return placed(fn(matrix((2 * n, n), seed=2), mesh_xy(grid())))


# --- replicate_over_x -----------------------------------------------------------------------
@case("replicate_over_x", hidden=False, judge=placement(REPLICATE_HINTS))
def columns_over_y_copies_along_x(fn):
    n = jax.device_count()
    return placed(fn(matrix((n, 2 * n), seed=3), mesh_xy(grid())))


# --- block_map ------------------------------------------------------------------------------
@case("block_map", hidden=False, hints=BLOCK_HINTS)
def blocks_of_a_2d_split(fn):
    rows, cols = grid()
    mesh = mesh_xy((rows, cols))
    x = jax.device_put(matrix((2 * rows, 2 * cols), seed=4), NamedSharding(mesh, P("x", "y")))
    return {"result": readable(fn(x))}
