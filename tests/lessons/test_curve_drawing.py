"""Curves on one plot (grader/lessons/curve_drawing.py): each curve drawn through its own
points, every one visible where they coincide, named in the legend; the summary's first and
last values and the widest gap between curves."""

from __future__ import annotations

import pytest
from figures import by_gid
from matplotlib.colors import to_rgba

from grader.lessons.curve_drawing import curves_figure, curves_summary, widest_gap
from grader.palette import device_colour

CURVES = {"one device": [(0, 1.0), (5, 0.5), (10, 0.25)],
          "split": [(0, 1.0), (5, 0.5), (10, 0.25)],
          "off": [(0, 1.0), (5, 0.6)]}


def test_each_curve_is_drawn_through_its_points_and_named():
    """Is curve i a line through its points in the palette's colour i, the first wide and the
    others dashed and marked (so that coinciding curves all show), with the labels given?"""
    fig = curves_figure(CURVES, x_label="step", y_label="loss", title="three runs")
    artists = by_gid(fig)
    for i, points in enumerate(CURVES.values()):
        [line] = artists[f"curve-{i}"]
        assert list(zip(line.get_xdata(), line.get_ydata(), strict=True)) == points
        assert to_rgba(line.get_color()) == to_rgba(device_colour(i))
    first, *others = (artists[f"curve-{i}"][0] for i in range(3))
    assert first.get_linewidth() > max(o.get_linewidth() for o in others)
    assert all(o.get_linestyle() != "-" and o.get_marker() not in (None, "None") for o in others)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(CURVES)
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title(loc="left")) == ("step", "loss",
                                                                           "three runs")
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_the_summary_gives_each_curves_ends_and_the_widest_gap():
    """Is the widest gap the largest difference at a shared x, and does the summary say it?"""
    assert widest_gap(CURVES) == pytest.approx(0.1)
    assert widest_gap({"alone": [(0, 3.0)]}) == 0
    assert curves_summary(CURVES, "loss") == (
        "loss: one device 1 -> 0.25 (3 points); split 1 -> 0.25 (3 points); off 1 -> 0.6 "
        "(2 points); the curves differ by at most 0.1")


@pytest.mark.parametrize("bad", [{}, {"empty": []}, {"flat": [1.0, 2.0]},
                                 {"nan": [(0, float("nan"))]}])
def test_curves_without_points_are_refused(bad):
    with pytest.raises(ValueError, match="at least one curve|pairs of finite numbers"):
        curves_figure(bad, x_label="x", y_label="y", title="t")
