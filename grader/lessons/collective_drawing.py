"""Collective drawings: what every device holds before and after a collective, and what moved.

:func:`collective_figure` draws one of :data:`KINDS` on small integer data: device ``i`` starts
with the values ``10 * i + j + 1`` (none is 0, so every value that moves shows), and the tens
digit of a value names the device it came from.
Each value is a cell painted in the colour of that device (from :mod:`grader.palette`); a sum is
grey with a band of the colours of the devices it adds up; a dashed cell holds nothing that
matters (not received yet, or not used). Arrows show what moved from one device to another:
each starts at the cell that holds the value and ends at the cell it lands in (an arrow that
would cross other cells of its row runs along the gap below the row instead). A reduction
onto several devices (``psum``, ``reduce``) goes through one adding node, "+". With ``step=k``
the drawing stops part way, which is what a device-by-device stepper shows.
:mod:`grader.lessons.shard_map_drawing` draws a learner's own ``shard_map`` body the same way.

Four of the kinds are collectives of message passing with no JAX function of their own; in a
``shard_map`` over axis ``a`` they are written with the others (``ROOT`` is device 0):

- ``broadcast``: ``psum(where(axis_index(a) == ROOT, x, 0), a)``;
- ``scatter``: ``psum_scatter(where(axis_index(a) == ROOT, x, 0), a, tiled=True)``;
- ``reduce``: ``psum(x, a)``, kept by the root only;
- ``gather``: ``all_gather(x, a, tiled=True)``, kept by the root only.

Artists carry gids for tests: ``before-{device}-{slot}`` and ``after-{device}-{slot}`` for
cells (``device`` is the device id), ``value-before-{device}-{slot}`` and
``value-after-{device}-{slot}`` for their numbers, ``part-{device}-{slot}-{source}`` for a
sum's band, ``arrow-{source}-{target}`` for arrows
(``sum`` stands for the adding node). An arrow is an annotation; one that runs along the gaps
between rows has its first legs in a line with the gid ``route-{source}-{target}``, whose
first point is where the arrow starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from matplotlib import patheffects
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Circle, Rectangle

from grader.lessons import texts
from grader.lessons.drawing import (
    Drawing,
    LayoutError,
)
from grader.palette import device_colour

KINDS = ("psum", "all_gather", "psum_scatter", "ppermute", "all_to_all",
         "broadcast", "scatter", "reduce", "gather")
#: The device that broadcast and scatter send from, and reduce and gather collect on.
ROOT = 0
#: Devices a collective drawing can show.
MAX_DEVICES = 16

SUM_COLOUR = "#e4e4e4"
#: Room between the before and after columns, for the arrows (in cell widths).
GAP = 3.5
EMPTY_EDGE = "#9a9a9a"
#: Where the lanes in the gap below a row start, and how far apart they are (in cell heights).
LANE_START = 0.2
LANE_STEP = 0.12

CAPTIONS = {
    "psum": "psum: every device ends with the sum of all devices' values, element by element",
    "all_gather": "all_gather: every device ends with every device's block, in device order",
    "psum_scatter": "psum_scatter: the sum is split up; device i keeps block i of it",
    "ppermute": "ppermute around a ring: device i sends its block to device i + 1",
    "all_to_all": "all_to_all: device i sends its block j to device j, which stores it at slot i",
    "broadcast": f"broadcast: device {ROOT}'s block is copied to every device",
    "scatter": f"scatter: device {ROOT}'s array is split up; device i receives block i of it",
    "reduce": f"reduce: device {ROOT} ends with the sum of all devices' values, element by element",
    "gather": f"gather: device {ROOT} ends with every device's block, in device order",
}
#: Kinds whose results add up the values of several devices.
REDUCTIONS = frozenset({"psum", "psum_scatter", "reduce"})
#: Kinds drawn with their arrows through the adding node.
VIA_SUM = frozenset({"psum", "reduce"})
#: Kinds in which the root sends to every device: a step is one receiving device.
FROM_ROOT = frozenset({"broadcast", "scatter"})

# A cell: its value (None: nothing there), the devices whose data it holds, and whether it is
# computed from their data (a sum, say; computed from no input: no devices).
Cell = tuple[Any, tuple[int, ...], bool]


@dataclass(frozen=True)
class Flow:
    """One value of a collective: slot ``slot_from`` of device ``source`` ends up in (or is
    added into) slot ``slot_to`` of device ``target``, at the step of device ``actor``."""

    source: int
    slot_from: int
    target: int
    slot_to: int
    actor: int


@dataclass(frozen=True)
class Arrow:
    """An arrow between rows: from a cell (``slot_from``) or a whole block (None) of row
    ``source``, to a cell or a block of row ``target``; a row of None is the adding node.
    ``colour`` is the device whose colour it has (None: grey)."""

    source: int | None
    slot_from: int | None
    target: int | None
    slot_to: int | None
    colour: int | None
    gid: str


def steps(kind: str, n_devices: int) -> int:
    """How many steps a device-by-device drawing of ``kind`` has: one per sending device (for
    broadcast and scatter, one per receiving device)."""
    _check(kind, n_devices)
    return n_devices


def collective_figure(kind: str, n_devices: int = 4, *, step: int | None = None) -> Figure:
    """Draw ``kind`` on ``n_devices`` devices: each device's data before and after, with arrows.

    ``step=None`` draws the whole collective; ``step=k`` (``0 <= k < steps(kind, n)``) draws
    the state once devices ``0 .. k`` have sent their data (for broadcast and scatter: once
    the root has sent to devices ``0 .. k``), with the arrows of that step.
    """
    _check(kind, n_devices)
    if step is not None and not 0 <= step < n_devices:
        raise LayoutError(
            texts.MOVE_STEP.format(step=step, kind=kind, n=n_devices, last=n_devices - 1)
        )
    everything = flows(kind, n_devices)
    done = set(range(n_devices) if step is None else range(step + 1))
    shown = [f for f in everything if step is None or f.actor == step]
    before = _before(everything, n_devices)
    after = _after(everything, n_devices, done, kind in REDUCTIONS)
    title = CAPTIONS[kind]
    if step is not None:
        title += f"\nstep {step + 1} of {n_devices}: {_step_text(kind, step)}"
    return figure(before, after, _arrows(kind, shown, everything), title, labels=None,
                   ids=list(range(n_devices)), every_arrow=_arrows(kind, everything, everything))


def flows(kind: str, n: int) -> list[Flow]:
    """Every value of ``kind`` on ``n`` devices: where it starts, where it ends, at which step.

    This is the one description of each collective; the cells, the arrows and the steps of
    its drawing are all read from it.
    """
    _check(kind, n)
    if kind == "psum":
        moves = [(i, s, t, s) for t in range(n) for s in range(n) for i in range(n)]
    elif kind == "reduce":
        moves = [(i, s, ROOT, s) for s in range(n) for i in range(n)]
    elif kind == "psum_scatter":
        moves = [(i, t, t, 0) for t in range(n) for i in range(n)]
    elif kind == "all_gather":
        moves = [(i, 0, t, i) for t in range(n) for i in range(n)]
    elif kind == "gather":
        moves = [(i, 0, ROOT, i) for i in range(n)]
    elif kind == "ppermute":
        moves = [((t - 1) % n, 0, t, 0) for t in range(n)]
    elif kind == "all_to_all":
        moves = [(i, t, t, i) for t in range(n) for i in range(n)]
    elif kind == "broadcast":
        moves = [(ROOT, 0, t, 0) for t in range(n)]
    else:  # scatter
        moves = [(ROOT, t, t, 0) for t in range(n)]
    return [Flow(i, j, t, s, t if kind in FROM_ROOT else i) for i, j, t, s in moves]


def _check(kind: str, n_devices: int) -> None:
    if kind not in KINDS:
        raise LayoutError(texts.MOVE_KIND.format(kind=kind, kinds=", ".join(KINDS)))
    if not isinstance(n_devices, int) or not 1 <= n_devices <= MAX_DEVICES:
        raise LayoutError(texts.MOVE_DEVICES.format(max=MAX_DEVICES, n=n_devices))


def _step_text(kind: str, step: int) -> str:
    if kind in FROM_ROOT:
        if step == 0:
            return f"device {ROOT} keeps its own part; the others have received nothing yet"
        return f"device {ROOT} has sent to device{'s 1 to' if step > 1 else ''} {step}"
    if step == 0:
        return "device 0 has sent its data"
    return f"devices 0 to {step} have sent their data"


def _value(device: int, slot: int) -> int:
    return 10 * device + slot + 1


def _before(everything: list[Flow], n: int) -> list[list[Cell]]:
    """Each device's data; a device that sends nothing holds nothing that matters."""
    width = 1 + max(f.slot_from for f in everything)
    senders = {f.source for f in everything}
    empty: Cell = (None, (), False)
    return [[(_value(d, j), (d,), False) if d in senders else empty for j in range(width)]
            for d in range(n)]


def _after(everything: list[Flow], n: int, done: set[int], adds: bool) -> list[list[Cell]]:
    """What each device holds once the flows of the actors in ``done`` have arrived."""
    width = 1 + max(f.slot_to for f in everything)
    arrived: dict[tuple[int, int], list[Flow]] = {}
    for f in everything:
        if f.actor in done:
            arrived.setdefault((f.target, f.slot_to), []).append(f)
    rows = []
    for t in range(n):
        row = []
        for s in range(width):
            got = sorted(arrived.get((t, s), []), key=lambda f: f.source)
            if not got:
                row.append((None, (), False))
            elif adds:
                row.append((sum(_value(f.source, f.slot_from) for f in got),
                            tuple(f.source for f in got), True))
            else:
                (f,) = got
                row.append((_value(f.source, f.slot_from), (f.source,), False))
        rows.append(row)
    return rows


def _arrows(kind: str, shown: list[Flow], everything: list[Flow]) -> list[Arrow]:
    if kind in VIA_SUM:
        if not shown:
            return []
        sources = sorted({f.source for f in shown})
        targets = sorted({f.target for f in everything})
        return ([Arrow(i, None, None, None, i, f"arrow-{i}-sum") for i in sources]
                + [Arrow(None, None, t, None, None, f"arrow-sum-{t}") for t in targets])
    return [Arrow(f.source, f.slot_from, f.target, f.slot_to, f.source,
                  f"arrow-{f.source}-{f.target}") for f in shown if f.source != f.target]


# --- drawing ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Grid:
    """Where the cells are: the x of each before and after slot, and the rows' pitch."""

    before_x: tuple[float, ...]
    after_x: tuple[float, ...]
    pitch: float
    rows: int

    @property
    def right(self) -> float:  # the right edge of the before column
        return self.before_x[-1] + 1

    @property
    def left(self) -> float:  # the left edge of the after column
        return self.after_x[0]

    def top(self, row: int) -> float:
        return row * self.pitch

    def middle(self, row: int) -> float:
        return row * self.pitch + 0.5

    def bottom(self, row: int) -> float:  # the bottom edge of the row's cells
        return row * self.pitch + 0.92

    @property
    def height(self) -> float:
        return (self.rows - 1) * self.pitch + 1


def figure(before, after, arrows, title, labels, ids, groups=None,
            every_arrow=None) -> Drawing:
    """Draw the rows of cells, their labels and the arrows.

    ``groups`` names the inputs when a row's before cells are several blocks: a list of
    (name, number of cells), drawn with a little room between blocks. The lanes below the
    rows are laid out for ``every_arrow`` (default: ``arrows``), so that every step of a
    collective has the same layout.
    """
    n = len(before)
    width_in, width_out = max(len(r) for r in before), max(len(r) for r in after)
    before_x: list[float] = []
    for k, (_, size) in enumerate(groups or [("", width_in)]):
        start = before_x[-1] + 1 + 0.5 * (k > 0) if before_x else 0.0
        before_x += [start + j for j in range(size)]
    x_after = before_x[-1] + 1 + GAP
    lanes = _lanes(arrows if every_arrow is None else every_arrow, width_in)
    busiest = max([len(v) for v in lanes.values()] + [0])
    gutter = 0.0 if not busiest else LANE_START + LANE_STEP * (busiest - 1) + 0.12
    grid = _Grid(tuple(before_x), tuple(x_after + j for j in range(width_out)),
                 1.0 + gutter, n)
    span = grid.right + GAP + width_out
    fig = Drawing(figsize=(min(1.6 + 0.5 * span, 12), round(1.3 + 0.42 * n * grid.pitch, 2)),
                  layout="constrained")
    ax = fig.add_subplot()
    ax.set_gid("collective")
    for d, device in enumerate(ids):
        for j, cell in enumerate(before[d]):
            _cell(ax, grid.before_x[j], grid.top(d), cell, f"before-{device}-{j}")
        for j, cell in enumerate(after[d]):
            _cell(ax, grid.after_x[j], grid.top(d), cell, f"after-{device}-{j}")
        name = labels[d] if labels else f"device {device}"
        ax.text(-0.55, grid.middle(d), name, ha="right", va="center", fontsize=8)
        ax.add_patch(Rectangle((-0.45, grid.top(d) + 0.3), 0.3, 0.4,
                               facecolor=device_colour(device), edgecolor="none",
                               gid=f"swatch-{device}"))
    hub = (grid.right + GAP / 2, grid.height / 2)
    if any(a.source is None or a.target is None for a in arrows):
        ax.add_patch(Circle(hub, 0.45, facecolor="white", edgecolor="#444444", gid="sum-node"))
        ax.text(*hub, "+", ha="center", va="center", fontsize=12, fontweight="bold")
    for arrow in arrows:
        points = _route(arrow, grid, lanes, hub)
        colour = "#555555" if arrow.colour is None else device_colour(ids[arrow.colour])
        _arrow(ax, points, colour, arrow.gid)
    top_label = -0.3 if not groups or len(groups) == 1 else -0.55
    if groups and len(groups) > 1:
        for k, (name, size) in enumerate(groups):
            first = sum(s for _, s in groups[:k])
            middle = (grid.before_x[first] + grid.before_x[first + size - 1] + 1) / 2
            ax.text(middle, -0.1, name, ha="center", va="bottom", fontsize=8,
                    fontstyle="italic", gid=f"input-{k}")
    ax.text(grid.right / 2, top_label, "before", ha="center", va="bottom", fontsize=9)
    ax.text(x_after + width_out / 2, top_label, "after", ha="center", va="bottom", fontsize=9)
    ax.set_xlim(-2.4 if labels is None else -4.6, x_after + width_out + 0.2)
    ax.set_ylim(n * grid.pitch + 0.2, top_label - 0.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title, fontsize=9.5)
    return fig


def _lanes(arrows: list[Arrow], width_in: int) -> dict[tuple[str, int], dict[int, int]]:
    """The lane (0: nearest the row) in the gap below each row for every arrow that cannot
    leave or enter its cell sideways: ("out", row) -> {slot: lane}, ("in", row) -> same.

    An arrow leaves the last before cell and enters the first after cell directly; from any
    other cell it would cross its neighbours, so it drops into a lane below the row. Cells
    further right get the nearer lanes when leaving and the further ones when arriving, so
    that the lanes of one row never cross.
    """
    leaving: dict[int, set[int]] = {}
    entering: dict[int, set[int]] = {}
    for a in arrows:
        if a.source is not None and a.slot_from is not None and a.slot_from < width_in - 1:
            leaving.setdefault(a.source, set()).add(a.slot_from)
        if a.target is not None and a.slot_to is not None and a.slot_to > 0:
            entering.setdefault(a.target, set()).add(a.slot_to)
    lanes: dict[tuple[str, int], dict[int, int]] = {}
    for row, slots in leaving.items():
        lanes[("out", row)] = {s: k for k, s in enumerate(sorted(slots, reverse=True))}
    for row, slots in entering.items():
        lanes[("in", row)] = {s: k for k, s in enumerate(sorted(slots))}
    return lanes


def _route(arrow: Arrow, grid: _Grid, lanes, hub) -> list[tuple[float, float]]:
    """The points an arrow passes through, from the cell it leaves to the cell it enters."""
    def lane_y(row: int, lane: int) -> float:
        return grid.bottom(row) + LANE_START + LANE_STEP * lane

    leaving = lanes.get(("out", arrow.source), {})
    if arrow.source is None:
        points = [(hub[0] + 0.45, hub[1])]
    elif arrow.slot_from in leaving:
        x = grid.before_x[arrow.slot_from] + 0.5
        y = lane_y(arrow.source, leaving[arrow.slot_from])
        points = [(x, grid.bottom(arrow.source)), (x, y), (grid.right + 0.25, y)]
    else:
        points = [(grid.right - 0.04, grid.middle(arrow.source))]
    if arrow.target is None:
        return [*points, (hub[0] - 0.45, hub[1])]
    entering = lanes.get(("in", arrow.target), {})
    if arrow.slot_to in entering:
        x = grid.after_x[arrow.slot_to] + 0.5
        y = lane_y(arrow.target, entering[arrow.slot_to])
        return [*points, (grid.left - 0.25, y), (x, y), (x, grid.bottom(arrow.target))]
    return [*points, (grid.left + 0.04, grid.middle(arrow.target))]


def _cell(ax, x: float, y: float, cell: Cell, gid: str) -> None:
    value, sources, summed = cell
    if value is None:
        ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, facecolor="white",
                               edgecolor=EMPTY_EDGE, linestyle="--", linewidth=0.8, gid=gid))
        return
    face = SUM_COLOUR if summed else device_colour(sources[0])
    ax.add_patch(Rectangle((x + 0.04, y + 0.08), 0.92, 0.84, facecolor=face,
                           edgecolor="#333333", linewidth=0.6, gid=gid))
    if summed and sources:  # computed: a band in the colour of every device it comes from
        part = 0.92 / len(sources)
        for k, source in enumerate(sources):
            ax.add_patch(Rectangle((x + 0.04 + k * part, y + 0.74), part, 0.18,
                                   facecolor=device_colour(source), edgecolor="none",
                                   gid=f"part-{gid.split('-', 1)[1]}-{source}"))
    text = f"{value:g}" if isinstance(value, float) else str(value)
    ax.text(x + 0.5, y + (0.42 if summed and sources else 0.5), text, ha="center", va="center",
            fontsize=min(9, 26 / max(len(text), 1) + 3), gid=f"value-{gid}")


def _arrow(ax, points: list[tuple[float, float]], colour: str, gid: str) -> None:
    """An arrow along ``points``: its last leg is an annotation with the head, the legs before
    it (if any) a line of the same colour."""
    red, green, blue, _ = to_rgba(colour)
    light = 0.299 * red + 0.587 * green + 0.114 * blue > 0.7
    edge = (0.55 * red, 0.55 * green, 0.55 * blue)  # a darker edge keeps yellow visible
    outline = ([patheffects.withStroke(linewidth=2.0, foreground=edge),
                patheffects.Normal()] if light else [])
    if len(points) > 2:
        xs, ys = zip(*points[:-1], strict=True)
        ax.add_line(Line2D(xs, ys, color=colour, linewidth=1.2, solid_joinstyle="round",
                           gid=gid.replace("arrow-", "route-", 1), path_effects=outline))
    arrow = ax.annotate("", xy=points[-1], xytext=points[-2], gid=gid,
                        arrowprops={"arrowstyle": "-|>", "color": colour, "linewidth": 1.2,
                                    "shrinkA": 0, "shrinkB": 0})
    arrow.arrow_patch.set_path_effects(outline)
