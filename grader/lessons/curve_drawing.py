"""Curves of one quantity over steps, for runs that should agree or that a formula predicts:
lesson 5's strategies' losses, lesson 8's bubble against microbatches.

:func:`curves_figure` draws each named curve on one plot, every curve visible even where they
coincide: the first a wide pale line, the others thinner, dashed and marked, each in a colour of
the course's palette. :func:`curves_summary` gives the one line a reader without the picture
gets: each curve's first and last values, and how far apart the curves are at most.

Artists carry gids for tests: ``curve-{i}`` for the i-th curve's line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from grader.lessons import texts
from grader.lessons.drawing import Drawing, unframed
from grader.palette import device_colour

#: A curve: its points (x, y), in order.
Curve = Sequence[tuple[float, float]]
#: How each curve after the first is drawn, in turn: dash pattern and marker.
STYLES = (("--", "o"), (":", "s"), ("-.", "^"), ((0, (5, 1)), "D"), ((0, (1, 2)), "v"))


def _checked(curves: Mapping[str, Curve]) -> dict[str, np.ndarray]:
    if not curves or any(len(points) == 0 for points in curves.values()):
        raise ValueError(texts.CURVES_NONE)
    found = {}
    for name, points in curves.items():
        array = np.asarray(points, dtype=float)
        if array.ndim != 2 or array.shape[1] != 2 or not np.isfinite(array).all():
            raise ValueError(texts.CURVES_POINTS.format(name=name))
        found[name] = array
    return found


def widest_gap(curves: Mapping[str, Curve]) -> float:
    """The largest difference between two curves' y at an x they both have (0 for one curve)."""
    found = _checked(curves)
    by_x: dict[float, list[float]] = {}
    for array in found.values():
        for x, y in array:
            by_x.setdefault(float(x), []).append(float(y))
    return max((max(ys) - min(ys) for ys in by_x.values()), default=0.0)


def curves_summary(curves: Mapping[str, Curve], what: str) -> str:
    """One line: each curve's ``what`` from its first point to its last, and the widest gap
    between the curves."""
    found = _checked(curves)
    each = "; ".join(texts.CURVES_EACH.format(name=name, first=array[0, 1], last=array[-1, 1],
                                              points=len(array))
                     for name, array in found.items())
    return texts.CURVES_SUMMARY.format(what=what, each=each, gap=widest_gap(curves))


def curves_figure(curves: Mapping[str, Curve], *, x_label: str, y_label: str,
                  title: str) -> Drawing:
    """Every curve on one plot, with a legend naming them."""
    found = _checked(curves)
    fig = Drawing(figsize=(6.4, 3.2), layout="constrained")
    ax = fig.subplots()
    for i, (name, array) in enumerate(found.items()):
        if i == 0:
            style = {"linewidth": 6, "alpha": 0.45, "solid_capstyle": "round"}
        else:
            dashes, marker = STYLES[(i - 1) % len(STYLES)]
            style = {"linewidth": 1.4, "linestyle": dashes, "marker": marker, "markersize": 4}
        ax.plot(array[:, 0], array[:, 1], color=device_colour(i), label=name, gid=f"curve-{i}",
                **style)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title, fontsize=9, loc="left")
    ax.legend(fontsize=8, frameon=False)
    unframed(ax)
    return fig
