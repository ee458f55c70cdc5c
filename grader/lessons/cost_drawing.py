"""What a program costs, drawn for lesson 7: where operations sit on a chip's roofline, and
what one device holds during a compiled call.

:func:`roofline_figure` draws a chip's roof on log-log axes: the attainable FLOP/s at each
arithmetic intensity (FLOPs per byte of memory traffic), the bandwidth's slope up to the ridge
and the matrix-product rate after it, the ridge marked, and each named operation placed on the
roof at its intensity, labelled compute-bound or memory-bound. :func:`memory_figure` draws
``compiled.memory_analysis()``'s figures per program as stacked bars: the arguments, the outputs
in buffers of their own (an output written over a donated argument has none) and the
temporaries, with each program's peak as a tick. Each has a one-line summary for a reader
without the picture (:func:`roofline_summary`, :func:`memory_summary`).

Artists carry gids for tests: ``roof`` (the line), ``ridge`` (its marker), ``op-{i}`` (the i-th
operation's point) and ``op-label-{i}``; ``bar-{row}-{part}`` for a part of a bar, ``peak-{row}``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from matplotlib.patches import Rectangle
from matplotlib.ticker import MultipleLocator

from grader.lessons import texts
from grader.lessons.drawing import Drawing, unframed
from grader.palette import device_colour

#: The parts of a program's memory, drawn left to right: (the key ``memory_analysis`` gives,
#: the words shown, a colour of the course's palette).
PARTS = (("argument", texts.MEMORY_ARGUMENTS, device_colour(4)),
         ("output", texts.MEMORY_OUTPUTS, device_colour(0)),
         ("temp", texts.MEMORY_TEMPORARIES, device_colour(2)))


def bound(chip, intensity: float) -> str:
    """Which roof limits an operation of this many FLOPs per byte on the chip: "compute"
    (its matrix-product rate) past the ridge, else "memory"."""
    return "compute" if intensity > chip.ridge else "memory"


def attainable(chip, intensity: float) -> float:
    """The FLOP/s the roofline allows at this intensity: the lower of the two roofs."""
    return min(chip.matmul_flops, chip.bandwidth * intensity)


def roofline_summary(chip, intensities: Mapping[str, float]) -> str:
    """One line: the ridge, then each operation's intensity and which roof limits it."""
    placed = "; ".join(texts.ROOFLINE_PLACED.format(name=name, intensity=value,
                                                    bound=bound(chip, value))
                       for name, value in intensities.items())
    return texts.ROOFLINE_SUMMARY.format(chip=chip.name, ridge=chip.ridge, placed=placed)


def roofline_figure(chip, intensities: Mapping[str, float]) -> Drawing:
    """The chip's roof on log-log axes, from a hundredth of the lowest intensity (or of 1) to
    a hundred times the highest (or the ridge), each operation a point on it."""
    if not intensities or any(not value > 0 for value in intensities.values()):
        raise ValueError(texts.ROOFLINE_INTENSITIES.format(got=dict(intensities)))
    low = min(1.0, *intensities.values()) / 100
    high = max(chip.ridge, *intensities.values()) * 100
    x = np.geomspace(low, high, 200)
    fig = Drawing(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.loglog(x, [attainable(chip, i) for i in x], color="black", linewidth=1.5, gid="roof")
    ax.axvline(chip.ridge, color="#5f6368", linestyle="--", linewidth=0.8, gid="ridge")
    ax.annotate(texts.ROOFLINE_RIDGE.format(ridge=chip.ridge),
                (chip.ridge, math.sqrt(attainable(chip, low) * chip.matmul_flops)),
                xytext=(-4, 0), textcoords="offset points", ha="right", fontsize=8,
                color="#5f6368")
    for i, (name, value) in enumerate(intensities.items()):
        colour = device_colour(5 if bound(chip, value) == "compute" else 4)
        ax.plot([value], [attainable(chip, value)], "o", color=colour, markersize=7,
                gid=f"op-{i}")
        ax.annotate(texts.ROOFLINE_LABEL.format(name=name, bound=bound(chip, value)),
                    (value, attainable(chip, value)), xytext=(-4, 8), ha="right",
                    textcoords="offset points", fontsize=8, gid=f"op-label-{i}")
    ax.set_xlim(low, high)
    ax.set_ylim(attainable(chip, low) / 3, chip.matmul_flops * 4)
    ax.set_xlabel(texts.ROOFLINE_X)
    ax.set_ylabel(texts.ROOFLINE_Y)
    ax.set_title(texts.ROOFLINE_TITLE.format(chip=chip.name), fontsize=9, loc="left")
    unframed(ax)
    return fig


def _parts(held: Mapping[str, int]) -> dict[str, int]:
    """The bytes of each drawn part of one program: an output aliased to an argument has no
    buffer of its own."""
    missing = [key for key in ("argument", "output", "temp", "alias", "peak") if key not in held]
    if missing:
        raise ValueError(texts.MEMORY_KEYS.format(missing=missing, got=sorted(held)))
    return {"argument": held["argument"], "output": held["output"] - held["alias"],
            "temp": held["temp"]}


def memory_summary(programs: Mapping[str, Mapping[str, int]]) -> str:
    """One line per program: the bytes of each part, and the peak."""
    return "; ".join(texts.MEMORY_SUMMARY.format(name=name, peak=held["peak"], **_parts(held))
                     for name, held in programs.items())


def memory_figure(programs: Mapping[str, Mapping[str, int]], title: str) -> Drawing:
    """One horizontal bar per program (top to bottom in the order given), its parts stacked
    in bytes, its peak a black tick across the bar."""
    if not programs:
        raise ValueError(texts.MEMORY_NONE)
    rows = {name: _parts(held) for name, held in programs.items()}
    widest = max(max(sum(parts.values()), programs[name]["peak"]) for name, parts in rows.items())
    fig = Drawing(figsize=(6.4, 0.9 + 0.45 * len(rows)), layout="constrained")
    ax = fig.subplots()
    for row, (name, parts) in enumerate(rows.items()):
        left = 0
        for part, words, colour in PARTS:
            ax.add_patch(Rectangle((left, row - 0.35), parts[part], 0.7, facecolor=colour,
                                   edgecolor="white", label=words if row == 0 else None,
                                   gid=f"bar-{row}-{part}"))
            left += parts[part]
        peak = programs[name]["peak"]
        ax.plot([peak, peak], [row - 0.45, row + 0.45], color="black", linewidth=2,
                gid=f"peak-{row}", label=texts.MEMORY_PEAK if row == 0 else None)
    ax.set_xlim(0, widest * 1.05)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_yticks(range(len(rows)), list(rows), fontsize=8)
    ax.set_xlabel(texts.MEMORY_X)
    ax.xaxis.set_major_locator(MultipleLocator(2 ** max(0, math.floor(math.log2(widest / 5)))))
    ax.xaxis.set_major_formatter(lambda value, _: _bytes(value))
    ax.set_title(title, fontsize=9, loc="left")
    ax.legend(fontsize=7, loc="lower right", ncols=4, frameon=False,
              bbox_to_anchor=(1, 1.0 + 0.35 / max(1, len(rows))))
    unframed(ax)
    return fig


def _bytes(value: float) -> str:
    """12288 -> "12 KiB"."""
    if value < 1024:
        return f"{value:.0f} B"
    power = min(int(math.log(value, 1024)), 3)
    return f"{value / 1024**power:g} {('B', 'KiB', 'MiB', 'GiB')[power]}"
