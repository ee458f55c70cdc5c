"""Public tests of lesson 1 (sharding): ``check`` runs them in the notebook, and the grader
runs them too. Meshes are built from the devices there are, so they run on 1 device or 8."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import AbstractMesh, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import PASS, Hint, Verdict, close, same
from grader.framework.placement import (
    NOT_A_NAMED_SHARDING,
    blocks,
    entry_axes,
    layout,
    mesh_of,
    plain_spec,
    spec_of,
)
from grader.hints import sharding as hints


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
def placed(x: Any) -> dict[str, Any]:
    """What a placement gives: its spec, the block shape on each device and its values."""
    return {"spec": spec_of(x), "layout": layout(x), "values": np.asarray(x)}


def placement(hints: Sequence[Hint], *extra: str) -> Callable[[dict, dict], Verdict]:
    """A judge comparing the spec first, then the layout, any ``extra`` measurements and the
    values, so that a wrong placement is reported by its spec."""
    return same("spec", "layout", *extra, "values", hints=hints)


def placed_on(x: Any) -> dict[str, Any]:
    """A placement with the block of every device and the mesh it is on."""
    return {**placed(x), "blocks": blocks(x), "mesh": mesh_of(x)}


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

# spec_for_block: a call's answer is a spec as plain lists (see spec_entries) or RAISED
RAISED = "ValueError"
NOT_A_SPEC = "not a PartitionSpec"


def _wrong_calls(test: Callable[[Any, Any], bool]) -> Callable[[dict, dict], bool]:
    """True when some call whose answer the judge refuses passes ``test(got, want)``."""
    return guarded(lambda got, want: any(
        test(g, w) for g, w, call in zip(got["result"], want["result"], want["_calls"],
                                         strict=True) if spec_problem(g, w, call)))


def _uses_an_axis_twice(g: Any, w: Any) -> bool:
    names = [n for entry in g for n in entry_axes(entry)]
    return len(names) != len(set(names))


SPEC_HINTS = [
    Hint(_wrong_calls(lambda g, w: isinstance(g, str) and g.startswith(NOT_A_SPEC)),
         hints.HINT_SPEC_NOT_A_SPEC),
    Hint(_wrong_calls(lambda g, w: isinstance(g, list) and _uses_an_axis_twice(g, w)),
         hints.HINT_SPEC_AXIS_TWICE),
    Hint(_wrong_calls(lambda g, w: g == RAISED and any(len(entry_axes(e)) > 1 for e in w)),
         hints.HINT_SPEC_NEEDS_TUPLE),
    Hint(_wrong_calls(lambda g, w: w == RAISED and g != RAISED), hints.HINT_SPEC_NONE_EXISTS),
]


def _same_spec_as(make: Callable[[list, int], list]) -> Callable[[dict, dict], bool]:
    """True when the student's spec is ``make(template's spec entries, template's rank)``,
    and not the right one."""
    return guarded(lambda got, want: got["spec"] != want["spec"]
                   and got["spec"] == make(list(want["_template_spec"]), int(want["_rank"])))


def _padded(entries: list, rank: int) -> list:
    return entries + [None] * (rank - len(entries))


TRANSPOSED_HINTS = [
    not_placed,
    Hint(guarded(lambda got, want: got["values"].shape != want["values"].shape
                 and got["values"].shape == want["values"].shape[::-1]),
         hints.HINT_TRANSPOSED_TWICE),
    Hint(_same_spec_as(lambda spec, rank: _padded(spec[::-1], rank) if len(spec) < rank
                       else None), hints.HINT_TRANSPOSED_PAD),
    Hint(_same_spec_as(_padded), hints.HINT_TRANSPOSED_REVERSE),
    Hint(guarded(lambda got, want: close(got["spec"], want["spec"])
                 and not close(got["mesh"], want["mesh"])), hints.HINT_GIVEN_MESH),
]


def _each_wrong_call(test: Callable[[Any, Any], bool]) -> Callable[[dict, dict], bool]:
    """True when some call gave a wrong list of devices, and every such call passes
    ``test(got, want)``."""

    def applies(got: dict, want: dict) -> bool:
        wrong = [test(_ids(g), _ids(w)) for g, w in zip(got["result"], want["result"],
                                                         strict=True) if not close(g, w)]
        return bool(wrong) and all(wrong)

    return guarded(applies)


def _ids(value: list) -> list[int]:
    """Device ids read back from plain data (where ints are arrays of no dimension)."""
    return [int(v) for v in value]


HOLDING_HINTS = [
    Hint(guarded(lambda got, want: any(isinstance(v, str) for v in _leaves(got["result"]))),
         hints.HINT_HOLDING_IDS),
    Hint(_each_wrong_call(lambda g, w: sorted(g) == w), hints.HINT_HOLDING_SORTED),
    Hint(guarded(lambda got, want: any(
        len(g) == 1 and len(w) > 1 and _ids(g)[0] in _ids(w)
        for g, w in zip(got["result"], want["result"], strict=True))), hints.HINT_HOLDING_ONE),
    Hint(_each_wrong_call(lambda g, w: set(g) > set(w)), hints.HINT_HOLDING_STOP),
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


def spec_entries(spec: Any) -> list | str:
    """A PartitionSpec as plain lists, one entry per dimension it names (an axis name, a
    list of names, or None), or what else was returned."""
    if not isinstance(spec, P):
        return f"{NOT_A_SPEC}: a {type(spec).__name__}"
    return plain_spec(spec)


def block_specs(fn: Callable, calls: Sequence[tuple]) -> dict[str, Any]:
    """``fn`` on every (global_shape, mesh_shape, block_shape): its spec or RAISED, and the
    calls, which the judge reads from the reference's measurements."""
    results = []
    for shape, mesh, block in calls:
        try:
            results.append(spec_entries(fn(shape, dict(mesh), block)))
        except ValueError:
            results.append(RAISED)
    return {"result": results,
            "_calls": [[list(shape), dict(mesh), list(block)] for shape, mesh, block in calls]}


def spec_blocks(shape: Sequence[int], mesh_shape: dict, entries: list) -> list[int] | str:
    """The block shape that the spec ``entries`` gives on a mesh ``{axis: size}``, as
    NamedSharding works it out (on a mesh without devices), or why there is none."""
    text = show_spec(entries)
    if not all(e is None or isinstance(e, str)
               or (isinstance(e, list) and all(isinstance(n, str) for n in e))
               for e in entries):
        return hints.MSG_SPEC_NOT_A_SPEC.format(got=text)
    if len(entries) > len(shape):
        return hints.MSG_SPEC_TOO_LONG.format(got=text)
    names = [n for entry in entries for n in entry_axes(entry)]
    for name in names:
        if name not in mesh_shape:
            return hints.MSG_SPEC_UNKNOWN_AXIS.format(got=text, name=name)
        if names.count(name) > 1:
            return hints.MSG_SPEC_AXIS_TWICE.format(got=text, name=name)
    mesh = AbstractMesh(tuple(int(v) for v in mesh_shape.values()), tuple(mesh_shape))
    spec = P(*(tuple(e) if isinstance(e, list) else e for e in entries))
    try:
        return [int(v) for v in NamedSharding(mesh, spec).shard_shape(
            tuple(int(v) for v in shape))]
    except ValueError:
        return hints.MSG_SPEC_UNEVEN.format(got=text)


def show_spec(entries: Any) -> str:
    """A spec's plain entries written as P(...)."""
    if not isinstance(entries, list):
        return str(entries)
    return repr(P(*(tuple(e) if isinstance(e, list) else e for e in entries)))


def spec_problem(got: Any, want: Any, call: list) -> str | None:
    """Why the answer ``got`` to one call is wrong (the reference answered ``want``), or
    None: any spec whose blocks have the asked shape is right."""
    shape, mesh_shape, block = call
    if isinstance(want, str):
        return None if got == RAISED else hints.MSG_SPEC_SHOULD_RAISE.format(got=show_spec(got))
    if got == RAISED:
        return hints.MSG_SPEC_RAISED.format(want=show_spec(want))
    if not isinstance(got, list):
        return str(got)
    found = spec_blocks(shape, mesh_shape, got)
    if isinstance(found, str):
        return found
    wanted = [int(v) for v in block]
    if found != wanted:
        return hints.MSG_SPEC_OTHER_BLOCKS.format(got=show_spec(got), blocks=tuple(found),
                                                  want=tuple(wanted))
    return None


def specs_giving_the_blocks(spec_hints: Sequence[Hint]) -> Callable[[dict, dict], Verdict]:
    """A judge for :func:`block_specs`: every answer must be a spec giving the asked blocks
    (any of them), or a refusal where the reference refused."""

    def judge(got: dict, want: dict) -> Verdict:
        results, wanted = got.get("result"), want["result"]
        if not isinstance(results, list) or len(results) != len(wanted):
            return same("result")(got, want)
        for g, w, call in zip(results, wanted, want["_calls"], strict=True):
            problem = spec_problem(g, w, call)
            if problem:
                shape, mesh_shape, block = call
                args = (tuple(int(v) for v in shape), {k: int(v) for k, v in mesh_shape.items()},
                        tuple(int(v) for v in block))
                text = hints.MSG_SPEC_CALL.format(call=args, problem=problem)
                return Verdict(False, text,
                               next((h.text for h in spec_hints if h.when(got, want)), None))
        return PASS

    return judge


def transposed_blocks(result: Any, template: jax.Array) -> list[bool] | str:
    """For every device holding part of ``template`` (by id): whether it holds the transpose
    of that block of ``result``."""
    if not isinstance(result, jax.Array):
        return "not a jax.Array"
    theirs = {s.device.id: np.asarray(s.data) for s in result.addressable_shards}
    return [bool(s.device.id in theirs and np.array_equal(theirs[s.device.id],
                                                          np.asarray(s.data).T))
            for s in sorted(template.addressable_shards, key=lambda s: s.device.id)]


def transposed_placement(fn: Callable, template: jax.Array) -> dict[str, Any]:
    """``fn(template's values transposed, template)``: its placement, mesh and blocks, and
    whether each device holds the transpose of its block of the template."""
    result = fn(np.asarray(template).T, template)
    return {**placed_on(result), "each_device_transposed": transposed_blocks(result, template),
            "_template_spec": plain_spec(template.sharding.spec),
            "_rank": template.ndim}


def device_ids(value: Any) -> Any:
    """A list of device ids as ints, whatever kind of int; anything else made readable."""
    if isinstance(value, (list, tuple)):
        return [int(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                else readable(v) for v in value]
    return readable(value)


def holders(fn: Callable, arr: jax.Array, indices: Sequence[tuple[int, ...]]) -> dict:
    """``fn(arr, index)`` for every index."""
    return {"result": [device_ids(fn(arr, tuple(index))) for index in indices]}


def every_index(shape: Sequence[int]) -> list[tuple[int, ...]]:
    """Every element's index of an array of ``shape``."""
    return [tuple(int(i) for i in index) for index in np.ndindex(*shape)]


def shuffled_mesh(shape: tuple[int, ...], names: tuple[str, ...], auto: bool) -> Mesh:
    """A mesh of the first devices in reverse order, so that JAX lists shards out of id
    order: Auto axes from jax.sharding.Mesh, or Explicit ones from jax.make_mesh."""
    devices = jax.devices()[: math.prod(shape)][::-1]
    if auto:
        return Mesh(np.array(devices).reshape(shape), names)
    return jax.make_mesh(shape, names, devices=devices)


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


# --- spec_for_block -------------------------------------------------------------------------
@case("spec_for_block", hidden=False, judge=specs_giving_the_blocks(SPEC_HINTS))
def blocks_some_spec_gives(fn):
    return block_specs(fn, [
        ((8, 6), MESH_4X2, (2, 3)),
        ((8, 6), MESH_4X2, (8, 3)),
        ((8, 6), MESH_4X2, (4, 6)),
        ((16,), MESH_4X2, (2,)),
        ((8, 6), MESH_4X2, (8, 6)),
        ((8, 8), {"x": 2, "y": 2}, (4, 4)),
    ])


@case("spec_for_block", hidden=False, judge=specs_giving_the_blocks(SPEC_HINTS))
def blocks_no_spec_gives(fn):
    return block_specs(fn, [
        ((8, 6), MESH_4X2, (2, 2)),
        ((4, 4), MESH_4X2, (1, 1)),
        ((8, 6), MESH_4X2, (3, 6)),
        ((8, 6), MESH_4X2, (16, 6)),
        ((8, 6), MESH_4X2, (2,)),
    ])


# --- place_transposed -----------------------------------------------------------------------
TRANSPOSED_JUDGE = placement(TRANSPOSED_HINTS, "mesh", "blocks", "each_device_transposed")


def template(shape: tuple[int, ...], mesh: Mesh, spec: P, seed: int) -> jax.Array:
    """An array of ``shape`` placed on ``mesh`` by ``spec``, the layout to transpose."""
    data = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return jax.device_put(data, NamedSharding(mesh, spec))


@case("place_transposed", hidden=False, judge=TRANSPOSED_JUDGE)
def transposes_a_2d_layout(fn):
    n = jax.device_count()
    return transposed_placement(fn, template((2 * n, n), mesh_xy(grid()), P("x", "y"), seed=5))


@case("place_transposed", hidden=False, judge=TRANSPOSED_JUDGE)
def transposes_a_short_spec_on_an_auto_mesh(fn):
    n = jax.device_count()
    mesh = shuffled_mesh(grid(), ("x", "y"), auto=True)
    return transposed_placement(fn, template((2 * n, n, 4), mesh, P("x", "y"), seed=6))


# --- block_map ------------------------------------------------------------------------------
@case("block_map", hidden=False, hints=BLOCK_HINTS)
def blocks_of_a_2d_split(fn):
    rows, cols = grid()
    mesh = mesh_xy((rows, cols))
    x = jax.device_put(matrix((2 * rows, 2 * cols), seed=4), NamedSharding(mesh, P("x", "y")))
    return {"result": readable(fn(x))}


# --- devices_holding ------------------------------------------------------------------------
@case("devices_holding", hidden=False, hints=HOLDING_HINTS)
def copies_along_x_on_a_shuffled_mesh(fn):
    rows, cols = grid()
    arr = template((2, 2 * cols), shuffled_mesh((rows, cols), ("x", "y"), auto=True),
                   P(None, "y"), seed=7)
    return holders(fn, arr, every_index(arr.shape))


@case("devices_holding", hidden=False, hints=HOLDING_HINTS)
def blocks_of_a_2d_split_on_a_shuffled_mesh(fn):
    rows, cols = grid()
    arr = template((2 * rows, 2 * cols), shuffled_mesh((rows, cols), ("x", "y"), auto=False),
                   P("x", "y"), seed=8)
    return holders(fn, arr, every_index(arr.shape))
