"""What each device computed, row by row, for lesson 4: whether the devices' blocks are copies
of one another or each its own.

:func:`per_device_figure` draws one or more named panels, each a grid of values with a row per
device (its label in the device's colour, as every drawing of the course paints devices) and a
column per value, shaded by value on a colour-blind-safe scale and written out; the title says
how many of the rows are distinct. :func:`per_device_summary` gives the one line a reader
without the picture gets.

Artists carry gids for tests: ``value-{panel}-{device}-{column}`` for a value's text,
``device-{panel}-{device}`` for a row's label; each panel's axes has the gid ``values-{panel}``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from grader.lessons import texts
from grader.lessons.drawing import Drawing
from grader.palette import device_colour

#: The most devices (rows) and values per device (columns) a panel shows readably.
MAX_ROWS, MAX_COLUMNS = 16, 12


def _checked(panels: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    if not panels:
        raise ValueError(texts.PER_DEVICE_NONE)
    found = {}
    for name, values in panels.items():
        array = np.asarray(values, dtype=float)
        if (array.ndim != 2 or not 0 < array.shape[0] <= MAX_ROWS
                or not 0 < array.shape[1] <= MAX_COLUMNS or not np.isfinite(array).all()):
            raise ValueError(texts.PER_DEVICE_SHAPE.format(name=name, shape=array.shape,
                                                           rows=MAX_ROWS, columns=MAX_COLUMNS))
        found[name] = array
    return found


def distinct_rows(values: np.ndarray) -> int:
    """How many of the devices' rows differ from one another."""
    return len({tuple(row) for row in np.asarray(values).tolist()})


def per_device_summary(panels: Mapping[str, np.ndarray]) -> str:
    """One line: for each panel, how many of its devices' rows are distinct."""
    return "; ".join(texts.PER_DEVICE_SUMMARY.format(name=name, distinct=distinct_rows(a),
                                                     devices=len(a))
                     for name, a in _checked(panels).items())


def per_device_figure(panels: Mapping[str, np.ndarray]) -> Drawing:
    """Each panel's values, ``values[d, j]`` the j-th value device ``d`` computed, panels side
    by side on one colour scale."""
    found = _checked(panels)
    low = min(a.min() for a in found.values())
    high = max(max(a.max() for a in found.values()), low + 1e-12)
    rows = max(len(a) for a in found.values())
    fig = Drawing(figsize=(1.0 + sum(0.62 * a.shape[1] + 0.9 for a in found.values()),
                           0.9 + 0.28 * rows), layout="constrained")
    axes = fig.subplots(1, len(found), squeeze=False)[0]
    for panel, (ax, (name, values)) in enumerate(zip(axes, found.items(), strict=True)):
        ax.set_gid(f"values-{panel}")
        ax.imshow(values, cmap="cividis", vmin=low, vmax=high, aspect="auto")
        for (d, j), value in np.ndenumerate(values):
            light = (value - low) / (high - low) > 0.6
            ax.text(j, d, f"{value:.2f}", ha="center", va="center", fontsize=7,
                    color="black" if light else "white", gid=f"value-{panel}-{d}-{j}")
        ax.set_yticks(range(len(values)), [f"device {d}" for d in range(len(values))],
                      fontsize=7)
        for d, label in enumerate(ax.get_yticklabels()):
            label.set_color("black")
            label.set_bbox({"facecolor": device_colour(d), "edgecolor": "none", "pad": 1.5})
            label.set_gid(f"device-{panel}-{d}")
        ax.set_xticks([])
        ax.set_title(texts.PER_DEVICE_TITLE.format(name=name, distinct=distinct_rows(values),
                                                   devices=len(values)), fontsize=8)
    return fig
