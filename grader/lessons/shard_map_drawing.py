"""A learner's own ``shard_map`` body drawn as the collectives are: what each device holds
before and after, and what moved (:mod:`grader.lessons.collective_drawing` draws the cells and
arrows, with the same colours and gids; rows follow the mesh's devices).

The body is run for real. What moved is not guessed from equal values: the body is
differentiated, so an output value that is one input value (derivative 1, and nothing else)
moved or stayed, and one that depends on the values of several devices was combined from them
(a sum, say) and goes through "+".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from grader.lessons import texts
from grader.lessons.collective_drawing import Arrow, figure
from grader.lessons.drawing import LayoutError, function_name, parameter_names, spec_text

#: Elements of one device's blocks (all inputs together) that draw_shard_map can show.
MAX_CELLS = 64


def draw_shard_map(fn: Callable, x: Any, mesh: Any, in_specs: Any, out_specs: Any) -> Figure:
    """Run ``jax.shard_map(fn, ...)`` on ``x`` and draw what each device held before and after.

    ``in_specs`` is a PartitionSpec, or a tuple with one PartitionSpec per input of ``fn``;
    ``x`` is the input (small data, or a shape for ``arange`` integers of that shape), or a
    tuple of inputs, one per spec. ``out_specs`` is that of ``fn``'s single output.

    An output value that is one input value moved (or stayed) is painted in the colour of the
    device that held it, with an arrow when it changed device; a value computed from the data
    of several devices is grey with a band of their colours, its arrows going through the
    adding node; a value computed from nothing (a constant, the zeros a device receives when
    no one sends to it) is plain grey. Where each value comes from is found by differentiating
    ``fn``, on a float copy of the data, never from equal values; a function JAX cannot
    differentiate is drawn without arrows, and the title says why.
    """
    import jax
    from jax.sharding import NamedSharding

    specs = _in_specs(in_specs)
    inputs = _inputs(x, len(specs))
    placed = [jax.device_put(v, NamedSharding(mesh, s))
              for v, s in zip(inputs, specs, strict=True)]
    run = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=specs, out_specs=out_specs))
    out = run(*placed)
    name = function_name(fn)
    if not isinstance(out, jax.Array):
        raise LayoutError(texts.SHARD_MAP_OUTPUT.format(name=name, kind=type(out).__name__))
    order = [int(d) for d in np.asarray(mesh.device_ids).flat]
    by_input = [_held(v, order) for v in placed]
    held_before = [[blocks[r] for blocks in by_input] for r in range(len(order))]
    held_after = _held(out, order)
    biggest = max([sum(b.size for b in row) for row in held_before]
                  + [b.size for b in held_after])
    if biggest > MAX_CELLS:
        raise LayoutError(texts.SHARD_MAP_TOO_BIG.format(size=biggest, max=MAX_CELLS))
    before = [[(v, (order[r],), False) for block in row for v in block.ravel().tolist()]
              for r, row in enumerate(held_before)]
    origins, why = _origins(fn, name, mesh, held_before, held_after)
    after = []
    for r, block in enumerate(held_after):
        values = block.ravel().tolist()
        if origins is None:
            after.append([(v, (), True) for v in values])
            continue
        after.append([(v, tuple(order[s] for s in rows), not moved)
                      for v, (rows, moved) in zip(values, origins[r], strict=True)])
    arrows = [] if origins is None else _shard_map_arrows(origins, order)
    shapes = ", ".join(str(tuple(v.shape)) for v in placed)
    spec_line = spec_text(specs[0]) if len(specs) == 1 else (
        "(" + ", ".join(spec_text(s) for s in specs) + ")")
    title = (f"shard_map of {name}: in_specs {spec_line}, out_specs {spec_text(out_specs)}\n"
             f"global shape{'s' if len(specs) > 1 else ''} {shapes} -> {tuple(out.shape)}")
    if why:
        title += "\n" + texts.SHARD_MAP_NO_TRACE.format(why=why)
    labels = [_device_label(order[r], r, mesh) for r in range(len(order))]
    groups = None
    if len(specs) > 1:
        names = parameter_names(fn, len(specs), unknown="input {i}")
        groups = [(names[k], held_before[0][k].size) for k in range(len(specs))]
    return figure(before, after, arrows, title, labels, order, groups)


def _in_specs(in_specs: Any) -> tuple[Any, ...]:
    from jax.sharding import PartitionSpec

    if isinstance(in_specs, PartitionSpec) or not isinstance(in_specs, (tuple, list)):
        return (in_specs,)
    return tuple(in_specs)


def _inputs(x: Any, count: int) -> list[Any]:
    """One array per input: ``x`` itself for one input (unwrapped from a one-element tuple),
    else the items of the tuple ``x``; a tuple of whole numbers is a shape."""
    if count == 1:
        if isinstance(x, (tuple, list)) and len(x) == 1 and not isinstance(
                x[0], (int, float, np.number)):
            x = x[0]
        return [_data(x)]
    if not isinstance(x, (tuple, list)) or len(x) != count:
        got = f"a tuple of {len(x)}" if isinstance(x, (tuple, list)) else type(x).__name__
        raise LayoutError(texts.SHARD_MAP_INPUTS.format(specs=count, got=got))
    return [_data(v) for v in x]


def _data(x: Any) -> Any:
    import jax

    if isinstance(x, tuple) and x and all(isinstance(d, int) for d in x):
        return np.arange(math.prod(x), dtype=np.int32).reshape(x)
    return x if isinstance(x, jax.Array) else np.asarray(x)


def _held(arr: Any, order: list[int]) -> list[np.ndarray]:
    by_device = {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}
    return [by_device[d] for d in order]


Origin = tuple[tuple[int, ...], bool]


def _origins(fn: Callable, name: str, mesh: Any, held_before: list[list[np.ndarray]],
             held_after: list[np.ndarray]) -> tuple[list[list[Origin]] | None, str | None]:
    """Where every output value of every row comes from: (the rows whose input it depends on,
    whether it is exactly one input value), or None and the reason when that is not known.

    The body runs once more, on each device's blocks stacked along a new leading axis split
    over every mesh axis (so each device gets exactly its own blocks, replicated or not), and
    is differentiated: the Jacobian says which input values each output value depends on.
    """
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec

    rows = len(held_before)
    stacked = [np.stack([held_before[r][k] for r in range(rows)]).astype(np.float32)
               for k in range(len(held_before[0]))]
    every_axis = PartitionSpec(tuple(mesh.axis_names))
    # The stacked blocks arrive unplaced: on an Explicit mesh (jax.make_mesh's default) a
    # shard_map refuses them, so the probe runs on the same devices with Auto axes.
    auto = jax.sharding.Mesh(mesh.devices, mesh.axis_names,
                             axis_types=(jax.sharding.AxisType.Auto,) * len(mesh.axis_names))

    def body(*blocks):
        return fn(*[b[0] for b in blocks])[None]

    probe = jax.shard_map(body, mesh=auto, in_specs=(every_axis,) * len(stacked),
                          out_specs=every_axis, check_vma=False)
    cuts = np.cumsum([s.size for s in stacked])[:-1]

    def flat(v):
        parts = jnp.split(v, cuts)
        return probe(*[p.reshape(s.shape) for p, s in zip(parts, stacked, strict=True)]).ravel()

    start = np.concatenate([s.ravel() for s in stacked])
    try:
        value = np.asarray(jax.jit(flat)(start))
        jacobian = np.asarray(jax.jit(jax.jacfwd(flat))(start))
    except Exception as e:  # noqa: BLE001 (any failure of JAX on the learner's function)
        return None, texts.SHARD_MAP_NOT_TRACED.format(name=name, error=type(e).__name__)
    real = np.concatenate([b.ravel() for b in held_after]).astype(np.float64)
    if value.shape != real.shape or not np.allclose(value, real, rtol=1e-5, atol=1e-6):
        return None, texts.SHARD_MAP_DIFFERS_ON_FLOATS.format(name=name)
    # the row of every input value, in the order of ``start``
    row_of = np.concatenate([np.repeat(np.arange(rows), s[0].size) for s in stacked])
    per_row = held_after[0].size
    origins = []
    for r in range(rows):
        found = []
        for o in range(r * per_row, (r + 1) * per_row):
            depends = np.flatnonzero(jacobian[o])
            moved = len(depends) == 1 and jacobian[o, depends[0]] == 1.0
            found.append((tuple(sorted({int(row_of[m]) for m in depends})), moved))
        origins.append(found)
    return origins, None


def _shard_map_arrows(origins: list[list[Origin]], order: list[int]) -> list[Arrow]:
    """A block arrow for each pair of devices between which values moved; for values combined
    from several devices, arrows into the adding node and out of it."""
    pairs, into, out_of = set(), set(), set()
    for target, cells in enumerate(origins):
        for rows, _ in cells:
            if len(rows) == 1 and rows[0] != target:
                pairs.add((rows[0], target))
            elif len(rows) > 1:
                into.update(rows)
                out_of.add(target)
    return ([Arrow(s, None, t, None, s, f"arrow-{order[s]}-{order[t]}") for s, t in sorted(pairs)]
            + [Arrow(s, None, None, None, s, f"arrow-{order[s]}-sum") for s in sorted(into)]
            + [Arrow(None, None, t, None, None, f"arrow-sum-{order[t]}")
               for t in sorted(out_of)])


def _device_label(device: int, row: int, mesh: Any) -> str:
    coords = np.unravel_index(row, tuple(mesh.shape.values()))
    where = ", ".join(f"{name}={int(c)}" for name, c in zip(mesh.shape, coords, strict=True))
    return f"device {device} ({where})"
