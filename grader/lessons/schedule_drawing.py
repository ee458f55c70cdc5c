"""Pipeline schedules: which stage works on which microbatch at each tick, and where it waits.

:func:`schedule_figure` draws one or more schedules, each a grid of stages (rows) by ticks
(columns), from what a program or a simulation did: ``{(stage, tick): (kind, microbatch)}``,
``kind`` being ``"F"`` (forward) or ``"B"`` (backward). A busy cell is painted in the colour of
its microbatch (from :mod:`grader.palette`'s colour-blind-safe list, microbatch ``k`` in the
colour device ``k`` has elsewhere), a backward hatched, and labelled ``F3`` or ``B3`` (up to
:data:`MAX_LABELLED` ticks); an idle
cell, the bubble, is left white with a dashed edge. Each schedule's title says its idle share.
:func:`from_log` reads lesson 8's log (row ``t`` the tick, column ``s`` the stage, the
microbatch or -1 for idle) and :func:`summary` gives the one line a reader without the picture
gets.

Artists carry gids for tests: ``op-{panel}-{stage}-{tick}`` for a busy cell,
``label-{panel}-{stage}-{tick}`` for its text, ``idle-{panel}-{stage}-{tick}`` for an idle cell;
each panel's axes has the gid ``schedule-{panel}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.patches import Rectangle

from grader.lessons import texts
from grader.lessons.drawing import Drawing, unframed
from grader.palette import device_colour

#: A schedule: (stage, tick) -> (kind, microbatch), kind "F" or "B"; a missing cell is idle.
Schedule = Mapping[tuple[int, int], tuple[str, int]]
KINDS = ("F", "B")
#: The most ticks a drawing shows: beyond, cells are too thin to read.
MAX_TICKS = 64
#: The most ticks of a schedule whose cells are labelled (``F3``); a longer one shows its
#: microbatches by colour alone.
MAX_LABELLED = 32


def from_log(log: np.ndarray | Sequence[Sequence[int]]) -> dict[tuple[int, int], tuple[str, int]]:
    """The schedule of a forward log: ``log[t][s]`` is the microbatch stage ``s`` works on at
    tick ``t``, or a negative number for idle."""
    return {(s, t): ("F", int(k)) for t, row in enumerate(np.asarray(log))
            for s, k in enumerate(row) if k >= 0}


def gpipe_forward(stages: int, microbatches: int) -> dict[tuple[int, int], tuple[str, int]]:
    """GPipe's forward pass by its rule: stage ``s`` works on microbatch ``k`` at tick
    ``s + k``, so ``microbatches + stages - 1`` ticks in all."""
    return {(s, s + k): ("F", k) for s in range(stages) for k in range(microbatches)}


def shape(schedule: Schedule, stages: int | None = None) -> tuple[int, int]:
    """(stages, ticks) a schedule spans: ``stages`` if given, else its highest stage + 1."""
    if not schedule:
        return stages or 1, 1
    return (stages or max(s for s, _ in schedule) + 1, max(t for _, t in schedule) + 1)


def idle_share(schedule: Schedule, stages: int | None = None) -> float:
    """The share of (stage, tick) cells with nothing to do: the bubble."""
    rows, ticks = shape(schedule, stages)
    return 1 - len(schedule) / (rows * ticks)


def summary(name: str, schedule: Schedule, stages: int | None = None) -> str:
    """One line for a reader without the picture: size, busy and idle cells, the idle share."""
    rows, ticks = shape(schedule, stages)
    return texts.SCHEDULE_SUMMARY.format(name=name, stages=rows, ticks=ticks,
                                         busy=len(schedule), idle=rows * ticks - len(schedule),
                                         share=idle_share(schedule, stages))


def schedule_figure(schedules: Mapping[str, Schedule], stages: int | None = None) -> Drawing:
    """Draw each named schedule as a stages-by-ticks grid, one under the other on a shared
    time axis. ``stages`` fixes the number of rows (a stage with no work still shows)."""
    if not schedules:
        raise ValueError(texts.SCHEDULE_NONE)
    for name, schedule in schedules.items():
        bad = [op for op in schedule.values() if op[0] not in KINDS or op[1] < 0]
        if bad:
            raise ValueError(texts.SCHEDULE_OP.format(name=name, op=bad[0], kinds=KINDS))
    sizes = {name: shape(schedule, stages) for name, schedule in schedules.items()}
    ticks = max(t for _, t in sizes.values())
    if ticks > MAX_TICKS:
        raise ValueError(texts.SCHEDULE_TOO_LONG.format(ticks=ticks, most=MAX_TICKS))
    heights = [rows for rows, _ in sizes.values()]
    fig = Drawing(figsize=(min(1.5 + 0.3 * ticks, 10), 0.9 + sum(0.26 * h + 0.5 for h in heights)),
                  layout="constrained")
    axes = fig.subplots(len(schedules), 1, squeeze=False, sharex=True,
                        gridspec_kw={"height_ratios": heights})[:, 0]
    for panel, (ax, (name, schedule)) in enumerate(zip(axes, schedules.items(), strict=True)):
        _panel(ax, panel, name, schedule, *sizes[name], stages)
        ax.set_xlim(0, ticks)  # one time axis for all: a shorter schedule ends sooner
    axes[-1].set_xlabel(texts.SCHEDULE_TICKS)
    return fig


def _panel(ax, panel: int, name: str, schedule: Schedule, rows: int, ticks: int,
           stages: int | None) -> None:
    """One schedule's grid: its own ``rows`` stages and ``ticks`` ticks."""
    ax.set_gid(f"schedule-{panel}")
    for s in range(rows):
        for t in range(ticks):
            op = schedule.get((s, t))
            if op is None:
                ax.add_patch(Rectangle((t, s), 1, 1, facecolor="white", edgecolor="#9e9e9e",
                                       linestyle="--", linewidth=0.6,
                                       gid=f"idle-{panel}-{s}-{t}"))
                continue
            kind, k = op
            ax.add_patch(Rectangle((t, s), 1, 1, facecolor=device_colour(k), edgecolor="white",
                                   linewidth=1.0, hatch="//" if kind == "B" else None,
                                   gid=f"op-{panel}-{s}-{t}"))
            if ticks <= MAX_LABELLED:
                ax.text(t + 0.5, s + 0.5, f"{kind}{k}", ha="center", va="center", fontsize=7,
                        gid=f"label-{panel}-{s}-{t}")
    ax.set_ylim(rows, 0)  # stage 0 on top, as the data flows down the pipe
    ax.set_yticks([s + 0.5 for s in range(rows)], [f"stage {s}" for s in range(rows)],
                  fontsize=8)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_aspect("auto")
    unframed(ax)
    ax.set_title(texts.SCHEDULE_TITLE.format(name=name, share=idle_share(schedule, stages)),
                 fontsize=9, loc="left")
