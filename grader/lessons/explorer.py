"""Three interactive explorers for the lessons, built with ipywidgets.

- :func:`layout_explorer`: choose a mesh (axis names and sizes), an array shape and a
  PartitionSpec entry per dimension; see the layout drawing, the block every device holds, and
  a plain message when the choice is invalid.
- :func:`collective_stepper`: step through a collective device by device: any kind of
  :data:`grader.lessons.collective_drawing.KINDS` (psum, all_gather, psum_scatter, ppermute,
  all_to_all, broadcast, scatter, reduce, gather).
- :func:`bubble_explorer`: choose a pipeline's stages and microbatches; see GPipe's forward
  schedule and its bubble, the share of stage-ticks idle (lesson 8).

Each explorer is a pure model, state in and what to show out (:func:`layout_view`,
:func:`stepper_view`), wrapped in a thin widget that reads its controls, asks the model and
shows the answer. The drawings come from :mod:`grader.lessons.drawing` and
:mod:`grader.lessons.collective_drawing`; they are shown as PNG images, which JupyterLab
renders and replaces on every change.
"""

from __future__ import annotations

import html
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import ipywidgets as widgets

from grader.lessons import texts
from grader.palette import FAILURE_COLOUR, device_colour

#: Dropdown label for "this entry is not in the spec" (a spec may be shorter than the array).
OMIT = "—"
MAX_AXES = 3
MAX_DIMS = 3
MAX_DEVICES = 16
MAX_AXIS_SIZE = MAX_DEVICES
MAX_SIDE = 64
DTYPES = ("float32", "bfloat16", "float16", "float64", "int32", "int8")
DEVICE_COUNTS = (2, 4, 8)

Entry = None | str | tuple[str, ...]


# --- the layout explorer's model ---------------------------------------------------------------
@dataclass(frozen=True)
class LayoutState:
    """What the controls of the layout explorer say, unchecked.

    ``axes`` holds (name, size) per mesh axis in mesh order; ``shape`` is the array shape as
    typed ("8, 6"); ``spec`` one entry per dropdown: None, an axis name, a tuple of axis names,
    or :data:`OMIT` for an entry left out.
    """

    axes: tuple[tuple[str, int], ...]
    shape: str
    spec: tuple[Any, ...]
    dtype: str = "float32"


@dataclass(frozen=True)
class LayoutView:
    """What the layout explorer shows for one :class:`LayoutState`: either the blocks of a
    valid layout or the reason there is none (``error``)."""

    mesh: dict[str, int]
    shape: tuple[int, ...] | None
    spec: tuple[Entry, ...] | None
    dtype: str
    blocks: tuple[Any, ...] = ()
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def code(self) -> str:
        """The choice written as the JAX code that makes it (as far as the choice is known)."""
        if not self.mesh:
            return ""
        lines = [f"mesh = jax.make_mesh({tuple(self.mesh.values())!r}, {tuple(self.mesh)!r})"]
        if self.shape is not None and self.spec is not None:
            spec = ", ".join(map(_entry_label, self.spec))
            lines.append(f"x = jax.device_put(jnp.zeros({self.shape!r}, jnp.{self.dtype}), "
                         f"NamedSharding(mesh, P({spec})))")
        return "\n".join(lines)

    def figure(self):
        """The layout drawing (a matplotlib Figure); only for a valid layout."""
        from grader.lessons.drawing import layout_figure

        if not self.ok:
            raise ValueError(self.error)
        return layout_figure(self.shape, self.mesh, self.spec, dtype=self.dtype)

    def shards_html(self) -> str:
        """A table of the block each device holds, with a line on how much is copied."""
        if not self.ok:
            return ""
        copies = Counter(b.index for b in self.blocks)
        n_copies = max(copies.values())
        first = self.blocks[0]
        total = math.prod(self.shape) * (first.nbytes // math.prod(first.shape))
        held = sum(b.nbytes for b in self.blocks)
        summary = (
            f"{len(self.blocks)} devices, {len(copies)} distinct block(s), "
            f"{'no copies' if n_copies == 1 else f'{n_copies} copies of each block'}; "
            f"the array is {total} bytes, the devices hold {held} bytes together"
        )
        head = "".join(
            f'<th style="text-align:left;padding:0 8px">{h}</th>'
            for h in ("device", "mesh position", "block", "shape", "bytes", "held by")
        )
        rows = "".join(self._row(b, copies) for b in self.blocks)
        return (
            f'<div class="explorer-shards"><p>{html.escape(summary)}</p>'
            f"<table><tr>{head}</tr>{rows}</table></div>"
        )

    def _row(self, block: Any, copies: Counter) -> str:
        swatch = (
            f'<span style="display:inline-block;width:0.9em;height:0.9em;margin-right:4px;'
            f'background:{device_colour(block.device)}"></span>'
        )
        coords = zip(self.mesh, block.mesh_coords, strict=True)
        position = ", ".join(f"{name}={c}" for name, c in coords)
        where = "[" + ", ".join(f"{a}:{b}" for a, b in block.index) + "]"
        holders = copies[block.index]
        cells = (
            f"{swatch}{block.device}",
            position,
            f"<code>{where}</code>",
            f"<code>{tuple(block.shape)}</code>",
            str(block.nbytes),
            "1 device" if holders == 1 else f"{holders} devices",
        )
        return "<tr>" + "".join(f'<td style="padding:0 8px">{c}</td>' for c in cells) + "</tr>"


def layout_view(state: LayoutState) -> LayoutView:
    """Check a :class:`LayoutState` and work out its blocks, or say what is wrong with it."""
    from grader.lessons.drawing import LayoutError, blocks

    mesh: dict[str, int] = {}
    for i, (name, size) in enumerate(state.axes):
        if not name.isidentifier():
            return LayoutView(mesh, None, None, state.dtype, error=texts.EXPLORER_AXIS_NAME.format(
                i=i, name=name))
        if name in mesh:
            return LayoutView(mesh, None, None, state.dtype, error=texts.EXPLORER_AXIS_TWICE.format(
                name=name))
        mesh[name] = size
    n = math.prod(mesh.values())
    if n > MAX_DEVICES:
        too_many = texts.EXPLORER_TOO_MANY_DEVICES.format(n=n, max=MAX_DEVICES)
        return LayoutView(mesh, None, None, state.dtype, error=too_many)
    try:
        shape = parse_shape(state.shape)
        spec = _spec(state.spec)
    except ValueError as e:
        return LayoutView(mesh, None, None, state.dtype, error=str(e))
    try:
        found = tuple(blocks(shape, mesh, spec, dtype=state.dtype))
    except LayoutError as e:
        return LayoutView(mesh, shape, spec, state.dtype, error=str(e))
    return LayoutView(mesh, shape, spec, state.dtype, blocks=found)


def parse_shape(text: str) -> tuple[int, ...]:
    """``"8, 6"`` (or ``"(8, 6)"``, ``"8 6"``, ``"8x6"``) -> ``(8, 6)``; ValueError with a
    learner-facing message otherwise."""
    parts = [p for p in re.split(r"[\s,x×]+", text.strip().strip("()[]")) if p]
    if not 1 <= len(parts) <= MAX_DIMS or not all(p.isdigit() for p in parts):
        raise ValueError(texts.EXPLORER_SHAPE.format(max=MAX_DIMS, text=text))
    shape = tuple(int(p) for p in parts)
    for size in shape:
        if not 1 <= size <= MAX_SIDE:
            raise ValueError(texts.EXPLORER_SHAPE_RANGE.format(max=MAX_SIDE, size=size))
    return shape


def _spec(entries: tuple[Any, ...]) -> tuple[Entry, ...]:
    """Drop the entries left out at the end; one left out before a set entry is an error."""
    entries = list(entries)
    while entries and entries[-1] == OMIT:
        entries.pop()
    if OMIT in entries:
        raise ValueError(texts.EXPLORER_SPEC_GAP.format(i=entries.index(OMIT), omit=OMIT))
    return tuple(entries)


def spec_choices(axis_names: list[str] | tuple[str, ...]) -> list[Entry]:
    """What one spec entry may be on a mesh with these axes: None, each axis, each ordered
    pair of axes."""
    return [None, *axis_names, *itertools.permutations(axis_names, 2)]


def _entry_label(entry: Any) -> str:
    if entry == OMIT:
        return OMIT
    if isinstance(entry, tuple):
        return "(" + ", ".join(repr(n) for n in entry) + ("," if len(entry) == 1 else "") + ")"
    return repr(entry)


# --- the layout explorer's widget ----------------------------------------------------------------
class LayoutExplorer(widgets.VBox):
    """The controls of the layout explorer above what it shows. Build it with
    :func:`layout_explorer`; ``view`` is the :class:`LayoutView` on display."""

    def __repr__(self) -> str:  # shown where the widget cannot be drawn
        return texts.EXPLORER_AS_TEXT

    def __init__(self, shape: tuple[int, ...], mesh: dict[str, int], spec: tuple[Entry, ...],
                 dtype: str):
        if not 1 <= len(mesh) <= MAX_AXES:
            raise ValueError(texts.EXPLORER_AXES_RANGE.format(max=MAX_AXES, mesh=mesh))
        if len(spec) > MAX_DIMS:
            raise ValueError(texts.EXPLORER_SPEC_RANGE.format(max=MAX_DIMS, spec=spec))
        self._quiet = True
        self._entries: dict[str, Any] = {OMIT: OMIT}
        style = {"description_width": "initial"}
        spare = [name for name in ("x", "y", "z", "u", "v", "w") if name not in mesh]
        names = [*mesh, *spare][:MAX_AXES]
        sizes = [*mesh.values(), 1, 1, 1][:MAX_AXES]
        self.n_axes = widgets.Dropdown(options=list(range(1, MAX_AXES + 1)), value=len(mesh),
                                       description="mesh axes", style=style,
                                       layout=widgets.Layout(width="140px"))
        self.axis_names = [
            widgets.Text(value=name, description=f"axis {i} name", continuous_update=False,
                         style=style, layout=widgets.Layout(width="180px"))
            for i, name in enumerate(names)
        ]
        self.axis_sizes = [
            widgets.BoundedIntText(value=size, min=1, max=MAX_AXIS_SIZE, description="size",
                                   style=style, layout=widgets.Layout(width="110px"))
            for size in sizes
        ]
        self.shape = widgets.Text(value=", ".join(map(str, shape)), description="array shape",
                                  continuous_update=False, style=style,
                                  layout=widgets.Layout(width="220px"))
        self.dtype = widgets.Dropdown(options=list(dict.fromkeys([dtype, *DTYPES])), value=dtype,
                                      description="dtype", style=style,
                                      layout=widgets.Layout(width="170px"))
        padded = [*spec, *[OMIT] * (MAX_DIMS - len(spec))]
        self.spec_entries = [
            widgets.Dropdown(description=f"dim {i}", style=style,
                             layout=widgets.Layout(width="200px"))
            for i in range(MAX_DIMS)
        ]
        self._axis_rows = [
            widgets.HBox([name, size])
            for name, size in zip(self.axis_names, self.axis_sizes, strict=True)
        ]
        self.code = widgets.HTML()
        self.message = widgets.HTML()
        self.image = drawing()
        self.shards = widgets.HTML()
        self.view: LayoutView | None = None
        super().__init__([
            widgets.HBox([self.n_axes]),
            *self._axis_rows,
            widgets.HBox([self.shape, self.dtype]),
            widgets.HBox(self.spec_entries),
            self.code, self.message, self.image, self.shards,
        ])
        self._set_options([_entry_label(e) for e in padded], entries=padded)
        for control in (self.n_axes, *self.axis_names, *self.axis_sizes, self.shape,
                        self.dtype, *self.spec_entries):
            control.observe(self._changed, names="value")
        self._quiet = False
        self.refresh()

    def state(self) -> LayoutState:
        """The controls' values as a :class:`LayoutState`."""
        axes = tuple(
            (name.value.strip(), size.value)
            for name, size in zip(self.axis_names[: self.n_axes.value],
                                  self.axis_sizes[: self.n_axes.value], strict=True)
        )
        spec = tuple(self._entries[d.value] for d in self.spec_entries[: self._dims()])
        return LayoutState(axes, self.shape.value, spec, self.dtype.value)

    def _dims(self) -> int:
        """How many spec entries the array's shape has room for (all of them while the
        shape does not read as one, so that the model can say why)."""
        try:
            return min(len(parse_shape(self.shape.value)), MAX_DIMS)
        except ValueError:
            return MAX_DIMS

    def refresh(self) -> None:
        """Ask the model about the current choice and show its answer; offer a spec entry
        for each dimension of the array only."""
        from grader.lessons.drawing import LayoutError

        dims = self._dims()
        for i, dropdown in enumerate(self.spec_entries):
            dropdown.layout.display = None if i < dims else "none"
        view = layout_view(self.state())
        if view.ok:
            try:
                self.image.value = figure_png(view.figure())
            except LayoutError as e:  # a layout too large to draw
                view = replace(view, blocks=(), error=str(e))
        self.view = view
        self.code.value = f'<pre class="explorer-code">{html.escape(view.code)}</pre>'
        if view.ok:
            self.message.value = ""
            self.image.layout.display = None
            self.shards.value = view.shards_html()
        else:
            why = html.escape(texts.EXPLORER_CANNOT.format(why=view.error))
            self.message.value = (
                f'<div class="explorer-error" style="color:{FAILURE_COLOUR};font-weight:bold">'
                f"{why}</div>"
            )
            self.image.layout.display = "none"
            self.shards.value = ""

    def _changed(self, change: dict) -> None:
        if self._quiet:
            return
        if change["owner"] in (self.n_axes, *self.axis_names):
            self._quiet = True
            try:
                self._set_options([d.value for d in self.spec_entries])
            finally:
                self._quiet = False
        self.refresh()

    def _set_options(self, keep: list[str], entries: list[Any] | None = None) -> None:
        """Offer the spec entries of the current axes in every dropdown, keeping each one's
        choice, even one naming an axis that is gone (the model then says so)."""
        for i, row in enumerate(self._axis_rows):
            row.layout.display = None if i < self.n_axes.value else "none"
        names = [n.value.strip() for n in self.axis_names[: self.n_axes.value]]
        if entries is not None:
            self._entries.update((_entry_label(e), e) for e in entries)
        choices = [*spec_choices(names), OMIT]
        self._entries.update((_entry_label(e), e) for e in choices)
        options = list(dict.fromkeys(_entry_label(e) for e in choices))
        for dropdown, label in zip(self.spec_entries, keep, strict=True):
            dropdown.options = options if label in options else [*options, label]
            dropdown.value = label


def layout_explorer(shape: tuple[int, ...] = (8, 6), mesh: dict[str, int] | None = None,
                    spec: tuple[Entry, ...] = ("x", "y"), dtype: str = "float32"
                    ) -> LayoutExplorer:
    """An interactive layout drawing: set the mesh's axes, the array's shape and dtype, and a
    PartitionSpec entry per dimension; see which device holds which block.

    The arguments are the starting choice, e.g. ``layout_explorer((8, 6), {'x': 4, 'y': 2},
    (None, 'y'))``. Display the result (the last line of a cell) to use it.
    """
    entries = tuple(tuple(e) if isinstance(e, list) else e for e in spec)
    return LayoutExplorer(tuple(shape), dict(mesh or {"x": 4, "y": 2}), entries, dtype)


# --- the collective stepper -----------------------------------------------------------------------
@dataclass(frozen=True)
class StepperState:
    """What the controls of the collective stepper say."""

    kind: str
    n_devices: int
    step: int


@dataclass(frozen=True)
class StepperView:
    """What the stepper shows: one step of one collective, and how many steps there are."""

    kind: str
    n_devices: int
    step: int
    steps: int

    @property
    def caption(self) -> str:
        return (f"{self.kind} on {self.n_devices} devices: step {self.step + 1} of "
                f"{self.steps}")

    def png(self) -> bytes:
        """The drawing of this step, as PNG bytes (cached: stepping back is instant)."""
        return _collective_png(self.kind, self.n_devices, self.step)


def stepper_view(state: StepperState) -> StepperView:
    """The step to show, kept within the collective's steps."""
    from grader.lessons.collective_drawing import KINDS, steps

    if state.kind not in KINDS:
        raise ValueError(texts.EXPLORER_UNKNOWN_KIND.format(kind=state.kind, kinds=KINDS))
    total = steps(state.kind, state.n_devices)
    return StepperView(state.kind, state.n_devices, min(max(state.step, 0), total - 1), total)


class CollectiveStepper(widgets.VBox):
    """A collective drawn one step at a time. Build it with :func:`collective_stepper`."""

    def __repr__(self) -> str:  # shown where the widget cannot be drawn
        return texts.STEPPER_AS_TEXT

    def __init__(self, kind: str, n_devices: int):
        from grader.lessons.collective_drawing import KINDS

        self._quiet = True
        style = {"description_width": "initial"}
        self.kind = widgets.Dropdown(options=list(KINDS), value=kind, description="collective",
                                     style=style, layout=widgets.Layout(width="220px"))
        self.n_devices = widgets.Dropdown(
            options=sorted({*DEVICE_COUNTS, n_devices}), value=n_devices, description="devices",
            style=style, layout=widgets.Layout(width="130px"))
        # The slider counts from 1, as the drawing's title does ("step 1 of 4").
        self.step = widgets.IntSlider(value=1, min=1, max=1, description="step", style=style)
        self.back = widgets.Button(description="◀ back", layout=widgets.Layout(width="90px"))
        self.next = widgets.Button(description="next ▶", layout=widgets.Layout(width="90px"))
        self.caption = widgets.HTML()
        self.image = drawing()
        self.view: StepperView | None = None
        super().__init__([
            widgets.HBox([self.kind, self.n_devices]),
            widgets.HBox([self.back, self.step, self.next]),
            self.caption, self.image,
        ])
        self.kind.observe(self._restart, names="value")
        self.n_devices.observe(self._restart, names="value")
        self.step.observe(lambda _: self.refresh(), names="value")
        self.back.on_click(lambda _: self._move(-1))
        self.next.on_click(lambda _: self._move(+1))
        self._quiet = False
        self._restart(None)

    def state(self) -> StepperState:
        return StepperState(self.kind.value, self.n_devices.value, self.step.value - 1)

    def refresh(self) -> None:
        """Show the step the controls select."""
        if self._quiet:
            return
        self.view = view = stepper_view(self.state())
        self.caption.value = f"<b>{html.escape(view.caption)}</b>"
        self.image.value = view.png()
        self.back.disabled = view.step == 0
        self.next.disabled = view.step == view.steps - 1

    def _restart(self, _change: dict | None) -> None:
        """A new collective or device count starts again at step 0."""
        from grader.lessons.collective_drawing import steps

        self._quiet = True
        try:
            self.step.value = 1
            self.step.max = steps(self.kind.value, self.n_devices.value)
        finally:
            self._quiet = False
        self.refresh()

    def _move(self, by: int) -> None:
        self.step.value = min(max(self.step.value + by, self.step.min), self.step.max)


def collective_stepper(kind: str = "psum", n_devices: int = 4) -> CollectiveStepper:
    """Step through a collective device by device: choose the collective and the number of
    devices, then press "next" (or drag the slider) to see what moves at each step.

    ``kind`` is one of :data:`grader.lessons.collective_drawing.KINDS`; broadcast and scatter
    step through the receiving devices, the others through the sending ones.
    """
    return CollectiveStepper(kind, n_devices)


def drawing() -> widgets.Image:
    """An image widget shown at the drawing's own size (at most the notebook's width)."""
    return widgets.Image(format="png", layout=widgets.Layout(align_self="flex-start",
                                                             max_width="100%"))


# --- the bubble explorer -------------------------------------------------------------------------
#: The most stages and microbatches the bubble explorer offers.
MAX_STAGES, MAX_MICROBATCHES = 8, 32


@dataclass(frozen=True)
class BubbleView:
    """What the bubble explorer shows: GPipe's forward schedule for these sizes."""

    stages: int
    microbatches: int

    @property
    def bubble(self) -> float:
        """The idle share of the schedule's stage-ticks, (stages - 1) / (microbatches + stages
        - 1), read from the schedule itself."""
        from grader.lessons.schedule_drawing import gpipe_forward, idle_share

        return idle_share(gpipe_forward(self.stages, self.microbatches), self.stages)

    @property
    def caption(self) -> str:
        return texts.BUBBLE_CAPTION.format(stages=self.stages, microbatches=self.microbatches,
                                           ticks=self.microbatches + self.stages - 1,
                                           bubble=self.bubble)

    def png(self) -> bytes:
        return _bubble_png(self.stages, self.microbatches)


def bubble_view(stages: int, microbatches: int) -> BubbleView:
    """The schedule to show, its sizes kept within the explorer's range."""
    return BubbleView(min(max(stages, 1), MAX_STAGES),
                      min(max(microbatches, 1), MAX_MICROBATCHES))


class BubbleExplorer(widgets.VBox):
    """GPipe's bubble as the microbatches grow. Build it with :func:`bubble_explorer`."""

    def __repr__(self) -> str:  # shown where the widget cannot be drawn
        return texts.BUBBLE_AS_TEXT

    def __init__(self, stages: int, microbatches: int):
        style = {"description_width": "initial"}
        view = bubble_view(stages, microbatches)
        self.stages = widgets.IntSlider(value=view.stages, min=1, max=MAX_STAGES,
                                        description="stages", style=style)
        self.microbatches = widgets.IntSlider(value=view.microbatches, min=1,
                                              max=MAX_MICROBATCHES, description="microbatches",
                                              style=style)
        self.caption = widgets.HTML()
        self.image = drawing()
        self.view: BubbleView | None = None
        super().__init__([widgets.HBox([self.stages, self.microbatches]), self.caption,
                          self.image])
        for control in (self.stages, self.microbatches):
            control.observe(lambda _: self.refresh(), names="value")
        self.refresh()

    def refresh(self) -> None:
        """Show the schedule the sliders select."""
        self.view = view = bubble_view(self.stages.value, self.microbatches.value)
        self.caption.value = f"<b>{html.escape(view.caption)}</b>"
        self.image.value = view.png()


def bubble_explorer(stages: int = 4, microbatches: int = 4) -> BubbleExplorer:
    """Move the sliders to see GPipe's forward schedule and its bubble for any number of
    stages (at most 8) and microbatches (at most 32)."""
    return BubbleExplorer(stages, microbatches)


# --- rendering ------------------------------------------------------------------------------------
def figure_png(figure) -> bytes:
    """A figure as PNG bytes, as the course's drawings show themselves."""
    from grader.lessons.drawing import png

    return png(figure)


@lru_cache(maxsize=128)
def _bubble_png(stages: int, microbatches: int) -> bytes:
    from grader.lessons.schedule_drawing import gpipe_forward, schedule_figure

    name = texts.BUBBLE_NAME.format(microbatches=microbatches)
    return figure_png(schedule_figure({name: gpipe_forward(stages, microbatches)}, stages))


@lru_cache(maxsize=128)
def _collective_png(kind: str, n_devices: int, step: int) -> bytes:
    from grader.lessons.collective_drawing import collective_figure

    return figure_png(collective_figure(kind, n_devices, step=step))
