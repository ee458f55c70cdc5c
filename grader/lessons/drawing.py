"""Layout drawings: which device holds which block of an array, and which blocks are copies.

:func:`blocks` works the layout out from plain numbers (a shape, the mesh's axis sizes and a
PartitionSpec), so it needs no devices; :func:`layout_figure` draws it and :func:`draw_layout`
draws the layout of a real ``jax.Array``. The drawing is a matplotlib ``Figure``: the array cut
into its blocks, each painted in the colour of the device holding it (from
:mod:`grader.palette`), a block held by several devices painted in stripes of all their
colours; the mesh beside it with its axis names; and a title with the block shape and the bytes
each device stores.

:func:`strategies_figure` draws several placed arrays per strategy, a row each, their blocks
painted the same way (lessons 2 and 5), and :func:`processes_figure` one mesh axis spanning
several processes (lesson 6); each has a one-line summary for a reader without the picture.

Every patch that shows data carries a gid, so tests (and curious readers) can find it:
``block-{device}`` for a device's share of a block, ``block-edge`` for a block's outline and
``mesh-{device}`` for a device's cell in the mesh. Array panels have the gid ``array`` and the
mesh panel ``mesh``; a strategy's panels ``strategy-{row}-{column}``; a mesh position over
processes ``position-{i}``, and a process's band ``process-{p}``.
"""

from __future__ import annotations

import functools
import inspect
import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from grader.lessons import texts
from grader.palette import device_colour

#: Panels a drawing may have (one per block of the leading dimensions of a 3-D or larger array).
MAX_PANELS = 16
#: Panels per row of the drawing.
PANELS_PER_ROW = 4
#: Resolution of the PNG a drawing shows in a notebook.
DPI = 100
#: The colours of a drawing's PNG: the sixteen devices', a few more, and the shades of the
#: antialiased edges of text and lines.
COLOURS = 256


class LayoutError(ValueError):
    """A shape, mesh and spec that do not make a layout; the message says why, for a learner."""


@dataclass(frozen=True)
class Block:
    """The block of an array one device holds.

    ``device`` is the device's id (for :func:`blocks`, its position in the mesh, row-major),
    ``mesh_coords`` its position along each mesh axis, ``index`` the (start, stop) of the block
    along each dimension of the array, ``shape`` the block's shape and ``nbytes`` its size.
    """

    device: int
    mesh_coords: tuple[int, ...]
    index: tuple[tuple[int, int], ...]
    shape: tuple[int, ...]
    nbytes: int


def png(figure: Figure) -> bytes:
    """A figure as the course shows its drawings: a PNG at :data:`DPI` in :data:`COLOURS`
    colours (a drawing's flat areas need no more), a third of the bytes of a full-colour PNG
    in the notebooks that store it and the widgets that send it."""
    from PIL import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    image = Image.open(buffer).convert("RGB").quantize(COLOURS, Image.Quantize.MEDIANCUT)
    small = io.BytesIO()
    image.save(small, format="png", optimize=True)
    return small.getvalue()


def unframed(ax, sides: Sequence[str] = ("top", "right")) -> None:
    """Hide these sides of an axes' frame, as the course's plots and grids show them."""
    for side in sides:
        ax.spines[side].set_visible(False)


class Drawing(Figure):
    """A matplotlib Figure that shows itself as a PNG in a notebook, with or without pyplot
    (:func:`png`)."""

    def _repr_png_(self) -> bytes:
        return png(self)


# --- the layout, from plain numbers -----------------------------------------------------------
def blocks(
    shape: Sequence[int], mesh_shape: Mapping[str, int], spec: Iterable[Any], *,
    dtype: Any = "float32",
) -> list[Block]:
    """The block each device holds when an array of ``shape`` is split by ``spec``.

    ``mesh_shape`` maps each mesh axis name to its size, in mesh order; ``spec`` has one entry
    per leading dimension: None (not split), an axis name, or a tuple of axis names (split over
    all of them, the first one major). Devices are numbered 0, 1, ... in row-major mesh order,
    as ``jax.make_mesh`` numbers them. Devices that hold the same block (copies along the mesh
    axes the spec leaves out) have equal ``index``. Raises :class:`LayoutError` with a
    learner-facing message when the three do not fit together.
    """
    shape = _check_shape(shape)
    mesh_shape = _check_mesh(mesh_shape)
    entries = normalise_spec(spec, len(shape), mesh_shape)
    for dim, (size, axes) in enumerate(zip(shape, entries, strict=True)):
        parts = math.prod(mesh_shape[a] for a in axes)
        if size % parts:
            raise LayoutError(
                texts.LAYOUT_UNEVEN.format(dim=dim, size=size, parts=parts,
                                           axes=" and ".join(map(repr, axes)))
            )
    itemsize = _itemsize(dtype)
    names, sizes = list(mesh_shape), list(mesh_shape.values())
    block_shape = tuple(
        size // math.prod(mesh_shape[a] for a in axes)
        for size, axes in zip(shape, entries, strict=True)
    )
    found = []
    for device, coords in enumerate(np.ndindex(*sizes)):
        position = dict(zip(names, coords, strict=True))
        index = []
        for length, axes in zip(block_shape, entries, strict=True):
            k = 0
            for axis in axes:  # the first axis is the major one
                k = k * mesh_shape[axis] + position[axis]
            index.append((k * length, (k + 1) * length))
        found.append(
            Block(
                device=device,
                mesh_coords=tuple(int(c) for c in coords),
                index=tuple(index),
                shape=block_shape,
                nbytes=math.prod(block_shape) * itemsize,
            )
        )
    return found


def normalise_spec(
    spec: Iterable[Any], rank: int, mesh_shape: Mapping[str, int]
) -> tuple[tuple[str, ...], ...]:
    """One tuple of axis names per dimension (empty: not split), after checking the spec."""
    try:
        raw = tuple(spec)
    except TypeError:
        raise LayoutError(texts.LAYOUT_SPEC_TYPE.format(spec=spec)) from None
    if len(raw) > rank:
        raise LayoutError(
            texts.LAYOUT_SPEC_TOO_LONG.format(
                entries=len(raw), s="y" if len(raw) == 1 else "ies", rank=rank,
                dims="dimension" if rank == 1 else "dimensions",
            )
        )
    entries: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for entry in raw + (None,) * (rank - len(raw)):
        axes = () if entry is None else (entry,) if isinstance(entry, str) else entry
        if not isinstance(axes, tuple) or not all(isinstance(a, str) for a in axes):
            raise LayoutError(texts.LAYOUT_SPEC_ENTRY.format(entry=entry))
        for axis in axes:
            if axis not in mesh_shape:
                raise LayoutError(
                    texts.LAYOUT_UNKNOWN_AXIS.format(axis=axis, axes=_names(mesh_shape))
                )
            if axis in seen:
                raise LayoutError(texts.LAYOUT_AXIS_TWICE.format(axis=axis))
            seen.add(axis)
        entries.append(axes)
    return tuple(entries)


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    try:
        dims = tuple(shape)
    except TypeError:
        raise LayoutError(texts.LAYOUT_SHAPE.format(shape=shape)) from None
    if not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0
               for d in dims):
        raise LayoutError(texts.LAYOUT_SHAPE.format(shape=shape))
    return tuple(int(d) for d in dims)


def _check_mesh(mesh_shape: Mapping[str, int]) -> dict[str, int]:
    if not isinstance(mesh_shape, Mapping) or not mesh_shape:
        raise LayoutError(texts.LAYOUT_MESH.format(mesh=mesh_shape))
    for name, size in mesh_shape.items():
        if not isinstance(name, str) or not isinstance(size, (int, np.integer)) or size < 1:
            raise LayoutError(texts.LAYOUT_MESH.format(mesh=mesh_shape))
    return {name: int(size) for name, size in mesh_shape.items()}


def _itemsize(dtype: Any) -> int:
    try:
        return np.dtype(dtype).itemsize
    except TypeError:
        import ml_dtypes  # installed with jax: bfloat16 and the float8 types

        try:
            return np.dtype(getattr(ml_dtypes, str(dtype))).itemsize
        except (AttributeError, TypeError):
            raise LayoutError(texts.LAYOUT_DTYPE.format(dtype=dtype)) from None


def _names(mesh_shape: Mapping[str, int]) -> str:
    return ", ".join(repr(name) for name in mesh_shape)


def _dtype_name(dtype: Any) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return str(dtype)


def spec_text(spec: Iterable[Any]) -> str:
    """A PartitionSpec as a learner writes it: ``P('x')``, ``P(None, ('x', 'y'))``, ``P()``
    (JAX's own repr adds a trailing comma to a one-entry spec, ``P('x',)``)."""
    def entry(e: Any) -> str:
        if isinstance(e, tuple) and len(e) > 1:
            return "(" + ", ".join(repr(a) for a in e) + ")"
        return repr(e[0]) if isinstance(e, tuple) and e else repr(e)

    return "P(" + ", ".join(entry(e) for e in tuple(spec)) + ")"


def function_name(fn: Any) -> str:
    """A readable name for a function in a title: its own name, that of a partial's (or a jitted
    function's) function, or "a lambda"."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    if name == "<lambda>":
        return "a lambda"
    return name or type(fn).__name__


def parameter_names(f: Callable, count: int, unknown: str = "args[{i}]") -> list[str]:
    """The names of the first ``count`` positional parameters of ``f`` or, for a jitted ``f``,
    of the function it wraps, without following any further wrapper (a shard_map's wrapper
    has no names: its body's describe blocks); ``unknown`` (a template of ``i``) where a
    parameter has none."""
    names = [unknown.format(i=i) for i in range(count)]
    compiled = getattr(f, "__wrapped__", f) if hasattr(f, "lower") else f
    try:
        parameters = list(inspect.signature(compiled, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, parameter in enumerate(parameters[:count]):
        if parameter.kind not in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            break
        names[i] = parameter.name
    return names


# --- the drawings ---------------------------------------------------------------------------
def layout_figure(
    shape: Sequence[int], mesh_shape: Mapping[str, int], spec: Iterable[Any], *,
    dtype: Any = "float32",
) -> Figure:
    """Draw how ``spec`` splits an array of ``shape`` over a mesh of ``mesh_shape``.

    The arguments are those of :func:`blocks` (which raises :class:`LayoutError` for a layout
    that does not exist). Devices are numbered 0, 1, ... in row-major mesh order.
    """
    found = blocks(shape, mesh_shape, spec, dtype=dtype)
    mesh_shape = _check_mesh(mesh_shape)
    entries = normalise_spec(spec, len(found[0].index), mesh_shape)
    ids = np.arange(len(found)).reshape(tuple(mesh_shape.values()))
    return _render(
        tuple(int(d) for d in shape), mesh_shape, entries, spec_text(spec), found,
        _dtype_name(dtype), ids,
    )


def draw_layout(x: Any) -> Figure:
    """Draw the layout of ``x``, a ``jax.Array`` placed with a ``NamedSharding``.

    The mesh, the spec and the dtype come from the array; the blocks are those JAX reports
    (``sharding.devices_indices_map``), labelled with the real device ids.
    """
    shape, mesh_shape, entries, found, ids = _placed(x)
    return _render(shape, mesh_shape, entries, spec_text(x.sharding.spec), found,
                   str(x.dtype), ids)


def _placed(x: Any) -> tuple:
    """The layout of a placed ``jax.Array`` as JAX reports it: its shape, its mesh's axis
    sizes, its spec's entries, its :class:`Block` on each device in mesh order, and the device
    ids in the mesh's shape."""
    from jax.sharding import NamedSharding

    sharding = getattr(x, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        raise LayoutError(texts.LAYOUT_NOT_NAMED.format(kind=type(sharding).__name__))
    mesh = sharding.mesh
    mesh_shape = {str(name): int(size) for name, size in mesh.shape.items()}
    shape = tuple(int(d) for d in x.shape)
    entries = normalise_spec(sharding.spec, len(shape), mesh_shape)
    ids = np.asarray(mesh.device_ids).reshape(tuple(mesh_shape.values()))
    index_of = {d.id: index for d, index in sharding.devices_indices_map(shape).items()}
    found = []
    for coords in np.ndindex(*ids.shape):
        device = int(ids[coords])
        index = tuple(
            tuple(part.indices(size)[:2])
            for part, size in zip(index_of[device], shape, strict=True)
        )
        block_shape = tuple(stop - start for start, stop in index)
        found.append(
            Block(device, tuple(int(c) for c in coords), index, block_shape,
                  math.prod(block_shape) * x.dtype.itemsize)
        )
    return shape, mesh_shape, entries, found, ids


def strategies_figure(strategies: Mapping[str, Mapping[str, Any]]) -> Drawing:
    """Draw, for each strategy (a row), where each of its placed arrays (a column, a matrix
    or a vector of at most 2 dimensions) lives: its blocks in the colours of the devices that
    hold them, as :func:`draw_layout` paints them, each panel titled with the array's name,
    spec and bytes on one device, each row with the bytes one device holds of them all."""
    if not strategies or not all(strategies.values()):
        raise LayoutError(texts.STRATEGIES_NONE)
    names = list(next(iter(strategies.values())))
    if any(list(arrays) != names for arrays in strategies.values()):
        raise LayoutError(texts.STRATEGIES_NAMES.format(names=names))
    fig = Drawing(figsize=(1.9 * len(names) + 1.2, 1.45 * len(strategies) + 0.3),
                  layout="constrained")
    axes = fig.subplots(len(strategies), len(names), squeeze=False)
    for row, (strategy, arrays) in enumerate(strategies.items()):
        held = 0
        for col, (name, x) in enumerate(arrays.items()):
            shape, _, entries, found, _ = _placed(x)
            if len(shape) > 2:
                raise LayoutError(texts.STRATEGIES_RANK.format(name=name, shape=shape))
            ax = axes[row, col]
            ax.set_gid(f"strategy-{row}-{col}")
            view = (1, shape[0]) if len(shape) == 1 else shape
            aspect = 0.16 if len(shape) < 2 else min(max(view[0] / view[1], 0.3), 1.2)
            ax.set_box_aspect(aspect)
            _draw_panel(ax, shape, entries, found, view, 1.7 / max(aspect, 1))
            held += found[0].nbytes
            ax.set_title(texts.STRATEGIES_PANEL.format(name=name, spec=spec_text(x.sharding.spec),
                                                       nbytes=found[0].nbytes), fontsize=7)
        axes[row, 0].set_ylabel(texts.STRATEGIES_ROW.format(strategy=strategy, held=held),
                                fontsize=8)
    return fig


def strategies_summary(strategies: Mapping[str, Mapping[str, Any]]) -> str:
    """One line per strategy: each array's spec and block shape, and the bytes one device
    holds of them all."""
    lines = []
    for strategy, arrays in strategies.items():
        placed = {name: _placed(x)[3][0] for name, x in arrays.items()}
        parts = ", ".join(f"{name} {spec_text(x.sharding.spec)} "
                          f"{'x'.join(map(str, placed[name].shape)) or 'scalar'}"
                          for name, x in arrays.items())
        lines.append(texts.STRATEGIES_SUMMARY.format(
            strategy=" ".join(strategy.split()), parts=parts,
            held=sum(b.nbytes for b in placed.values())))
    return "\n".join(lines)


def processes_figure(blocks: Sequence[Mapping[str, Any]], axis: str = "data") -> Drawing:
    """Draw one mesh axis spanning several processes: a cell per mesh position, in that
    position's colour, with the id of the device there and the rows of the array it holds,
    and under the cells a band per process over the positions whose devices it drives.
    ``blocks``: one per device, ``{"position", "device", "process", "rows": (start, stop)}``,
    as each process reports its own (``addressable_shards``)."""
    found = sorted(blocks, key=lambda b: b["position"])
    if not found or [b["position"] for b in found] != list(range(len(found))):
        raise LayoutError(texts.PROCESSES_POSITIONS.format(got=[b.get("position") for b in found]))
    processes = sorted({b["process"] for b in found})
    fig = Drawing(figsize=(max(1.0 * len(found) + 0.6, 4), 2.0), layout="constrained")
    ax = fig.subplots()
    ax.set_gid("processes")
    for b in found:
        x, (start, stop) = b["position"], b["rows"]
        ax.add_patch(Rectangle((x, 0), 1, 1, facecolor=device_colour(x), edgecolor="white",
                               linewidth=2, gid=f"position-{x}"))
        rows = f"row {start}" if stop - start == 1 else f"rows {start}-{stop - 1}"
        ax.text(x + 0.5, 0.5, f"device\n{b['device']}\n{rows}", ha="center", va="center",
                fontsize=7, gid=f"position-label-{x}")
    for p in processes:
        mine = [b["position"] for b in found if b["process"] == p]
        ax.add_patch(Rectangle((min(mine) + 0.05, 1.15), max(mine) - min(mine) + 0.9, 0.4,
                               facecolor="#e8eaed", edgecolor="#5f6368", gid=f"process-{p}"))
        ax.text((min(mine) + max(mine) + 1) / 2, 1.35, texts.PROCESSES_BAND.format(
            process=p, devices=len(mine)), ha="center", va="center", fontsize=8,
            gid=f"process-label-{p}")
    ax.set_xlim(0, len(found))
    ax.set_ylim(1.6, 0)
    ax.set_xticks([x + 0.5 for x in range(len(found))], [str(x) for x in range(len(found))],
                  fontsize=7)
    ax.set_xlabel(texts.PROCESSES_X.format(axis=axis), fontsize=8)
    ax.set_yticks([])
    unframed(ax, ("top", "right", "left"))
    ax.set_title(texts.PROCESSES_TITLE.format(axis=axis, size=len(found),
                                              processes=len(processes)), fontsize=9, loc="left")
    return fig


def processes_summary(blocks: Sequence[Mapping[str, Any]], axis: str = "data") -> str:
    """One line: for each process, the mesh positions, devices and rows it holds."""
    found = sorted(blocks, key=lambda b: b["position"])
    each = "; ".join(texts.PROCESSES_EACH.format(
        process=p, positions=[b["position"] for b in found if b["process"] == p],
        devices=[b["device"] for b in found if b["process"] == p],
        rows=[tuple(b["rows"]) for b in found if b["process"] == p])
        for p in sorted({b["process"] for b in found}))
    return texts.PROCESSES_SUMMARY.format(axis=axis, size=len(found), each=each)


def _render(
    shape: tuple[int, ...], mesh_shape: dict[str, int], entries: tuple[tuple[str, ...], ...],
    spec_label: str, found: list[Block], dtype: str, ids: np.ndarray,
) -> Drawing:
    rank = len(shape)
    lead = max(rank - 2, 0)
    panels = sorted({b.index[:lead] for b in found})
    if len(panels) > MAX_PANELS:
        raise LayoutError(
            texts.LAYOUT_TOO_MANY_PANELS.format(
                dims=", ".join(map(str, range(lead))), panels=len(panels), max=MAX_PANELS
            )
        )
    rows, cols = (1, 1) if rank == 0 else (1, shape[0]) if rank == 1 else shape[-2:]
    per_row = min(len(panels), PANELS_PER_ROW)
    panel_rows = math.ceil(len(panels) / per_row)
    aspect = 0.16 if rank <= 1 else min(max(rows / max(cols, 1), 0.3), 1.4)
    panel_width = min(5.2 / per_row, 3.2)
    panel_height = panel_width * aspect + (0.75 if rank >= 2 else 0.55)
    mesh_rows = math.prod(list(mesh_shape.values())[:-1])
    mesh_cols = list(mesh_shape.values())[-1]
    mesh_width = min(0.4 * mesh_cols + 1.2, 3.0)
    mesh_height = min(0.4 * mesh_rows, 3.0) + 1.0
    height = max(panel_rows * panel_height, mesh_height) + 1.1
    fig = Drawing(figsize=(max(per_row * panel_width + mesh_width + 0.4, 6.4), height),
                  layout="constrained")
    grid = fig.add_gridspec(panel_rows, per_row + 1,
                            width_ratios=[panel_width] * per_row + [mesh_width])
    for k, panel in enumerate(panels):
        ax = fig.add_subplot(grid[k // per_row, k % per_row])
        ax.set_gid("array")
        ax.set_box_aspect(aspect)
        mine = [b for b in found if b.index[:lead] == panel]
        _draw_panel(ax, shape, entries, mine, (rows, cols), panel_width)
        if lead:
            ax.set_title("[" + ", ".join([f"{a}:{b}" for a, b in panel] + [":", ":"]) + "]",
                         fontsize=9)
        first_column, bottom = k % per_row == 0, k + per_row >= len(panels)
        if rank >= 1 and bottom:
            ax.set_xlabel(_dim_label(rank - 1, shape[-1], entries[-1]), fontsize=8)
        if rank >= 2 and first_column:
            ax.set_ylabel(_dim_label(rank - 2, shape[-2], entries[-2]), fontsize=8)
    mesh_ax = fig.add_subplot(grid[:, -1])
    mesh_ax.set_gid("mesh")
    _draw_mesh(mesh_ax, mesh_shape, ids, entries)
    fig.suptitle(_title(shape, mesh_shape, entries, spec_label, found, dtype), fontsize=10)
    return fig


def _dim_label(dim: int, size: int, axes: tuple[str, ...]) -> str:
    if not axes:
        return f"dim {dim} ({size}): whole"
    over = repr(axes[0]) if len(axes) == 1 else "(" + ", ".join(map(repr, axes)) + ")"
    return f"dim {dim} ({size}): split over {over}"


def _view(index: tuple[tuple[int, int], ...], rank: int) -> tuple[tuple[int, int], ...]:
    if rank == 0:
        return ((0, 1), (0, 1))
    if rank == 1:
        return ((0, 1), index[0])
    return index[-2:]


def _draw_panel(ax, shape, entries, found, view_shape, panel_width) -> None:
    rows, cols = view_shape
    holders: dict[tuple[tuple[int, int], ...], list[int]] = {}
    for b in found:
        holders.setdefault(_view(b.index, len(shape)), []).append(b.device)
    for ((r0, r1), (c0, c1)), devices in sorted(holders.items()):
        devices = sorted(devices)
        stripe = (c1 - c0) / len(devices)
        for k, device in enumerate(devices):
            ax.add_patch(Rectangle((c0 + k * stripe, r0), stripe, r1 - r0,
                                   facecolor=device_colour(device), edgecolor="none",
                                   gid=f"block-{device}"))
        ax.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, fill=False, edgecolor="#222222",
                               linewidth=1.2, gid="block-edge"))
        width_inches = panel_width * 0.8 * (c1 - c0) / max(cols, 1)
        label, size = _fit_label(devices, width_inches)
        ax.text((c0 + c1) / 2, (r0 + r1) / 2, label, ha="center", va="center", fontsize=size,
                gid="block-label",
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "alpha": 0.85,
                      "edgecolor": "none"})
    ax.set_xlim(0, max(cols, 1))
    ax.set_ylim(max(rows, 1), 0)
    ax.tick_params(labelsize=7, length=2)
    _boundary_ticks(ax.xaxis, {c for (_, cs) in holders for c in cs})
    if len(shape) >= 2:
        _boundary_ticks(ax.yaxis, {r for (rs, _) in holders for r in rs})
    else:
        ax.set_yticks([])


def _boundary_ticks(axis, boundaries: set[int]) -> None:
    if len(boundaries) <= 10:
        axis.set_ticks(sorted(boundaries))
    else:
        axis.set_major_locator(MaxNLocator(nbins=8, integer=True))


def _fit_label(devices: list[int], width_inches: float) -> tuple[str, float]:
    """The device ids of a block, small enough to fit its width."""
    label = ",".join(map(str, devices))
    consecutive = devices == list(range(devices[0], devices[0] + len(devices)))
    for text in (label, f"{devices[0]}–{devices[-1]}" if consecutive else f"×{len(devices)}"):
        size = min(9.0, width_inches * 72 / (0.62 * len(text) + 0.6))
        if size >= 5:
            return text, size
    return text, 5.0


def _draw_mesh(ax, mesh_shape: dict[str, int], ids: np.ndarray, entries) -> None:
    names, sizes = list(mesh_shape), list(mesh_shape.values())
    grid = ids.reshape(-1, sizes[-1])
    for (r, c), device in np.ndenumerate(grid):
        ax.add_patch(Rectangle((c, r), 1, 1, facecolor=device_colour(int(device)),
                               edgecolor="white", linewidth=2, gid=f"mesh-{int(device)}"))
        ax.text(c + 0.5, r + 0.5, str(int(device)), ha="center", va="center", fontsize=9,
                gid="mesh-label")
    ax.set_xlim(0, grid.shape[1])
    ax.set_ylim(grid.shape[0], 0)
    ax.set_aspect("equal")
    ax.tick_params(labelsize=7, length=0)
    role = {axis: f"splits dim {d}" for d, axes in enumerate(entries) for axis in axes}
    ax.set_xticks([c + 0.5 for c in range(grid.shape[1])], [str(c) for c in range(sizes[-1])])
    ax.xaxis.set_label_position("top")
    ax.xaxis.tick_top()
    ax.set_xlabel(f"{names[-1]!r} →  {role.get(names[-1], 'holds copies')}", fontsize=8)
    if len(names) == 1:
        ax.set_yticks([])
    else:
        coords = list(np.ndindex(*sizes[:-1]))
        ax.set_yticks([r + 0.5 for r in range(len(coords))],
                      [",".join(map(str, c)) for c in coords])
        rows = ", ".join(f"{n!r} ({role.get(n, 'holds copies')})" for n in names[:-1])
        ax.set_ylabel(f"{rows}  ↓", fontsize=8)
    ax.set_title("mesh " + ", ".join(f"{n!r}: {s}" for n, s in mesh_shape.items()) +
                 "\n(device ids)", fontsize=9)


def _title(shape, mesh_shape, entries, spec_label, found, dtype) -> str:
    first = found[0]
    copy_axes = [n for n in mesh_shape if not any(n in axes for axes in entries)]
    copies = math.prod(mesh_shape[n] for n in copy_axes)
    distinct = len({b.index for b in found})
    total = sum(b.nbytes for b in found)
    block = ("a scalar" if not first.shape else f"{first.shape[0]} elements"
             if len(first.shape) == 1 else "×".join(map(str, first.shape)))
    where = (
        "no copies" if copies == 1 else
        f"{copies} copies of each (along {', '.join(map(repr, copy_axes))})"
    )
    lines = [
        f"{dtype}[{','.join(map(str, shape))}] with {spec_label}",
        f"block per device: {block} = {first.nbytes} bytes",
        f"{distinct} distinct block{'s' if distinct != 1 else ''}, {where}: "
        f"{total} bytes stored for a {first.nbytes * distinct}-byte array",
    ]
    lead = max(len(shape) - 2, 0)
    if lead:
        panels = "; ".join(_dim_label(d, shape[d], entries[d]) for d in range(lead))
        lines.append(f"one panel per block of {panels}")
    return "\n".join(lines)
