"""Collective drawings: what every device holds before and after a collective, and what moved.

:func:`collective_figure` draws one of :data:`KINDS` on small integer data: device ``i`` starts
with the values ``10 * i + j``, so the tens digit of a value names the device it came from.
Each value is a cell painted in the colour of that device (from :mod:`grader.palette`); a sum is
grey with a band of the colours of the devices it adds up. Arrows show what moved from one
device to another. With ``step=k`` the drawing stops part way: devices ``0 .. k`` have sent
their data, the others not yet, which is what a device-by-device stepper shows.

:func:`draw_shard_map` does the same for a learner's own ``shard_map`` body, run for real.

Artists carry gids for tests: ``before-{device}-{slot}`` and ``after-{device}-{slot}`` for
cells (``device`` is the device id, also in :func:`draw_shard_map`, whose rows follow the
mesh), ``value-before-{device}-{slot}`` and ``value-after-{device}-{slot}`` for their numbers,
``part-{device}-{slot}-{source}`` for a sum's band, ``arrow-{source}-{target}`` for arrows
(``sum`` stands for the adding node of a psum).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from matplotlib import patheffects
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Circle, Rectangle

from grader import messages as msg
from grader.draw import Drawing, LayoutError
from grader.palette import device_colour

KINDS = ("psum", "all_gather", "psum_scatter", "ppermute", "all_to_all")
#: Devices a collective drawing can show.
MAX_DEVICES = 16
#: Elements of one device's block that draw_shard_map can show.
MAX_CELLS = 64

SUM_COLOUR = "#e4e4e4"
#: Room between the before and after columns, for the arrows (in cell widths).
GAP = 3.5
EMPTY_EDGE = "#9a9a9a"

CAPTIONS = {
    "psum": "psum: every device ends with the sum of all devices' values, element by element",
    "all_gather": "all_gather: every device ends with every device's block, in device order",
    "psum_scatter": "psum_scatter: the sum is split up; device i keeps block i of it",
    "ppermute": "ppermute around a ring: device i sends its block to device i + 1",
    "all_to_all": "all_to_all: device i sends its block j to device j, which stores it at slot i",
}

# A cell: its value (None: not arrived yet), the devices whose data it holds, and whether it is
# a sum of their data (a value computed from no known input has no devices and is a sum).
Cell = tuple[Any, tuple[int, ...], bool]


def steps(kind: str, n_devices: int) -> int:
    """How many steps a device-by-device drawing of ``kind`` has: one per sending device."""
    _check(kind, n_devices)
    return n_devices


def collective_figure(kind: str, n_devices: int = 4, *, step: int | None = None) -> Figure:
    """Draw ``kind`` on ``n_devices`` devices: each device's data before and after, with arrows.

    ``step=None`` draws the whole collective; ``step=k`` (``0 <= k < steps(kind, n)``) draws
    the state once devices ``0 .. k`` have sent their data, with the arrows of device ``k``.
    """
    _check(kind, n_devices)
    if step is not None and not 0 <= step < n_devices:
        raise LayoutError(
            msg.MOVE_STEP.format(step=step, kind=kind, n=n_devices, last=n_devices - 1)
        )
    before = _before(kind, n_devices)
    sent = range(n_devices) if step is None else range(step + 1)
    after = _after(kind, n_devices, set(sent))
    moves = [m for m in _moves(kind, n_devices) if step is None or m[0] == step]
    title = CAPTIONS[kind]
    if step is not None:
        sent = "device 0 has sent its" if step == 0 else f"devices 0 to {step} have sent their"
        title += f"\nstep {step + 1} of {n_devices}: {sent} data"
    return _figure(before, after, moves, title, kind == "psum", labels=None)


def _check(kind: str, n_devices: int) -> None:
    if kind not in KINDS:
        raise LayoutError(msg.MOVE_KIND.format(kind=kind, kinds=", ".join(KINDS)))
    if not isinstance(n_devices, int) or not 1 <= n_devices <= MAX_DEVICES:
        raise LayoutError(msg.MOVE_DEVICES.format(max=MAX_DEVICES, n=n_devices))


def _value(device: int, slot: int) -> int:
    return 10 * device + slot


def _before(kind: str, n: int) -> list[list[Cell]]:
    slots = n if kind in ("psum", "psum_scatter", "all_to_all") else 1
    return [[(_value(d, j), (d,), False) for j in range(slots)] for d in range(n)]


def _sum(sources: list[int], slot: int) -> Cell:
    if not sources:
        return (None, (), False)
    return (sum(_value(s, slot) for s in sources), tuple(sources), True)


def _after(kind: str, n: int, sent: set[int]) -> list[list[Cell]]:
    """What each device holds once the devices in ``sent`` have sent their data."""
    done = sorted(sent)
    empty: Cell = (None, (), False)
    if kind == "psum":
        return [[_sum(done, j) for j in range(n)] for _ in range(n)]
    if kind == "psum_scatter":
        return [[_sum(done, d)] for d in range(n)]
    if kind == "all_gather":
        return [[(_value(i, 0), (i,), False) if i in sent else empty for i in range(n)]
                for _ in range(n)]
    if kind == "ppermute":
        return [[(_value((d - 1) % n, 0), ((d - 1) % n,), False) if (d - 1) % n in sent
                 else empty] for d in range(n)]
    # all_to_all: device d, slot i holds block d of device i
    return [[(_value(i, d), (i,), False) if i in sent else empty for i in range(n)]
            for d in range(n)]


def _moves(kind: str, n: int) -> list[tuple[int, Any, int, int]]:
    """(source device, target device or "sum", source slot, target slot) for each arrow."""
    if kind == "psum":
        return [(i, "sum", 0, 0) for i in range(n)]
    if kind == "ppermute":
        return [(i, (i + 1) % n, 0, 0) for i in range(n) if (i + 1) % n != i]
    if kind == "all_gather":
        return [(i, d, 0, i) for i in range(n) for d in range(n) if d != i]
    # psum_scatter and all_to_all: block j of device i goes to device j
    return [(i, j, j, i if kind == "all_to_all" else 0) for i in range(n) for j in range(n)
            if j != i]


# --- drawing ---------------------------------------------------------------------------------
def _figure(before, after, moves, title, via_sum, labels, ids=None) -> Drawing:
    n = len(before)
    width_in, width_out = max(len(r) for r in before), max(len(r) for r in after)
    x_after = width_in + GAP
    fig = Drawing(figsize=(min(1.6 + 0.5 * (width_in + width_out + GAP), 12),
                           1.3 + 0.42 * n), layout="constrained")
    ax = fig.add_subplot()
    ax.set_gid("collective")
    ids = list(range(n)) if ids is None else ids
    for d, device in enumerate(ids):
        for j, cell in enumerate(before[d]):
            _cell(ax, j, d, cell, f"before-{device}-{j}")
        for j, cell in enumerate(after[d]):
            _cell(ax, x_after + j, d, cell, f"after-{device}-{j}")
        name = labels[d] if labels else f"device {device}"
        ax.text(-0.55, d + 0.5, name, ha="right", va="center", fontsize=8)
        ax.add_patch(Rectangle((-0.45, d + 0.3), 0.3, 0.4, facecolor=device_colour(device),
                               edgecolor="none", gid=f"swatch-{device}"))
    hub = (width_in + GAP / 2, n / 2)
    if via_sum:
        ax.add_patch(Circle(hub, 0.45, facecolor="white", edgecolor="#444444", gid="sum-node"))
        ax.text(*hub, "+", ha="center", va="center", fontsize=12, fontweight="bold")
    for source, target, slot_from, slot_to in moves:
        start = (width_in + 0.05, source + (slot_from + 0.5) / max(width_in, 1))
        if target == "sum":
            _arrow(ax, start, (hub[0] - 0.45, hub[1]), source, f"arrow-{source}-sum")
            continue
        end = (x_after - 0.05, target + (slot_to + 0.5) / max(width_out, 1))
        _arrow(ax, start, end, source, f"arrow-{source}-{target}")
    if via_sum and moves:
        for d in range(n):
            _arrow(ax, (hub[0] + 0.45, hub[1]), (x_after - 0.05, d + 0.5), None,
                   f"arrow-sum-{d}")
    ax.text(width_in / 2, -0.3, "before", ha="center", va="bottom", fontsize=9)
    ax.text(x_after + width_out / 2, -0.3, "after", ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-2.4 if labels is None else -4.6, x_after + width_out + 0.2)
    ax.set_ylim(n + 0.2, -0.9)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9.5)
    return fig


def _cell(ax, x: float, y: float, cell: Cell, gid: str) -> None:
    value, sources, summed = cell
    if value is None:
        ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, facecolor="white",
                               edgecolor=EMPTY_EDGE, linestyle="--", linewidth=0.8, gid=gid))
        return
    face = SUM_COLOUR if summed else device_colour(sources[0])
    ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, facecolor=face,
                           edgecolor="#333333", linewidth=0.6, gid=gid))
    if summed and sources:  # a sum: a band in the colour of every device it adds up
        part = 0.92 / len(sources)
        for k, source in enumerate(sources):
            ax.add_patch(Rectangle((x + 0.04 + k * part, y + 0.74), part, 0.18,
                                   facecolor=device_colour(source), edgecolor="none",
                                   gid=f"part-{gid.split('-', 1)[1]}-{source}"))
    text = f"{value:g}" if isinstance(value, float) else str(value)
    ax.text(x + 0.5, y + (0.42 if summed and sources else 0.5), text, ha="center", va="center",
            fontsize=min(9, 26 / max(len(text), 1) + 3), gid=f"value-{gid}")


def _arrow(ax, start, end, source, gid) -> None:
    colour = "#555555" if source is None else device_colour(source)
    arrow = ax.annotate("", xy=end, xytext=start, gid=gid,
                        arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.2,
                                    "shrinkA": 0, "shrinkB": 0})
    red, green, blue, _ = to_rgba(colour)
    if 0.299 * red + 0.587 * green + 0.114 * blue > 0.7:  # a thin outline keeps yellow visible
        arrow.arrow_patch.set_path_effects(
            [patheffects.withStroke(linewidth=2.2, foreground="#8a8a8a"), patheffects.Normal()]
        )


# --- a learner's shard_map ---------------------------------------------------------------------
def draw_shard_map(fn: Callable, x: Any, mesh: Any, in_specs: Any, out_specs: Any) -> Figure:
    """Run ``jax.shard_map(fn, ...)`` on ``x`` and draw what each device held before and after.

    ``x`` is small data (or a shape, for ``arange`` integers of that shape); ``in_specs`` is the
    PartitionSpec of ``x`` (or a one-element tuple of it), ``out_specs`` that of ``fn``'s
    single output. An output value equal to an input value is painted in the colour of the
    device that held it, with an arrow when it changed device; any other value (a sum, say)
    is grey. Use distinct values, as the default ``arange`` data has, so that this matching
    is unambiguous.
    """
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    if isinstance(x, tuple) and all(isinstance(d, int) for d in x):
        x = np.arange(math.prod(x), dtype=np.int32).reshape(x)
    elif not isinstance(x, jax.Array):
        x = np.asarray(x)
    spec = in_specs[0] if isinstance(in_specs, (tuple, list)) and not isinstance(
        in_specs, PartitionSpec) else in_specs
    placed = jax.device_put(x, NamedSharding(mesh, spec))
    run = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=(spec,), out_specs=out_specs))
    out = run(placed)
    if not isinstance(out, jax.Array):
        raise LayoutError(msg.SHARD_MAP_OUTPUT.format(
            name=getattr(fn, "__name__", "the function"), kind=type(out).__name__))
    order = [int(d) for d in np.asarray(mesh.device_ids).flat]
    held_before = _held(placed, order)
    held_after = _held(out, order)
    biggest = max(b.size for b in held_before + held_after)
    if biggest > MAX_CELLS:
        raise LayoutError(msg.SHARD_MAP_TOO_BIG.format(size=biggest, max=MAX_CELLS))
    holders: dict[Any, list[int]] = {}
    for row, block in enumerate(held_before):
        for value in block.ravel().tolist():
            holders.setdefault(value, []).append(row)
    before = [[(v, (order[r],), False) for v in block.ravel().tolist()]
              for r, block in enumerate(held_before)]
    after, moves = [], set()
    for r, block in enumerate(held_after):
        cells = []
        for value in block.ravel().tolist():
            rows = holders.get(value, [])
            if not rows:
                cells.append((value, (), True))  # computed: a sum, or anything else
                continue
            source = r if r in rows else rows[0]
            cells.append((value, (order[source],), False))
            if source != r:
                moves.add((source, r))
        after.append(cells)
    labels = [_device_label(order[r], r, mesh) for r in range(len(order))]
    title = (f"shard_map of {getattr(fn, '__name__', 'fn')}: in_specs {spec}, "
             f"out_specs {out_specs}\nglobal shape {tuple(x.shape)} -> {tuple(out.shape)}")
    return _shard_map_figure(before, after, sorted(moves), title, labels, order)


def _held(arr: Any, order: list[int]) -> list[np.ndarray]:
    by_device = {s.device.id: np.asarray(s.data) for s in arr.addressable_shards}
    return [by_device[d] for d in order]


def _device_label(device: int, row: int, mesh: Any) -> str:
    coords = np.unravel_index(row, tuple(mesh.shape.values()))
    where = ", ".join(f"{name}={int(c)}" for name, c in zip(mesh.shape, coords, strict=True))
    return f"device {device} ({where})"


def _shard_map_figure(before, after, moves, title, labels, order) -> Drawing:
    # Rows follow the mesh; arrows join rows, named by the device ids of those rows.
    fig = _figure(before, after, [], title, False, labels, ids=order)
    ax = fig.axes[0]
    width_in = max(len(r) for r in before)
    x_after = width_in + GAP
    for source, target in moves:
        _arrow(ax, (width_in + 0.05, source + 0.5), (x_after - 0.05, target + 0.5),
               order[source], f"arrow-{order[source]}-{order[target]}")
    return fig
