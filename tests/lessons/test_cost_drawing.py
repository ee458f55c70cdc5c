"""Lesson 7's drawings of cost (grader/lessons/cost_drawing.py), read back from their artists:
the roof where a chip's two rates put it, each operation on it at its intensity and named by the
roof that limits it; each program's memory as bars of the sizes memory_analysis gave, its peak
where it is; and the one-line summaries saying the same."""

from __future__ import annotations

import numpy as np
import pytest
from figures import by_gid
from matplotlib.colors import to_rgba

from grader.lessons.cost_drawing import (
    PARTS,
    attainable,
    memory_figure,
    memory_summary,
    roofline_figure,
    roofline_summary,
)
from grader.lessons.roofline import Chip

# A made-up chip whose ridge is 100 FLOP/byte: 1e15 FLOP/s over 1e13 bytes/s.
CHIP = Chip("test chip", 1e15, 1e13, "made up")
OPS = {"big matmul": 4000.0, "elementwise": 0.25, "just below": 99.0}
# Two programs: the second writes its output over its argument (alias), so it has no output
# buffer of its own, and its peak is lower.
KEPT = {"argument": 4096, "output": 1024, "temp": 2048, "alias": 0, "peak": 6144}
DONATED = {"argument": 4096, "output": 1024, "temp": 3072, "alias": 1024, "peak": 5120}


def test_the_roof_is_the_lower_of_the_two_rates_and_each_operation_sits_on_it():
    """Is the roof bandwidth x intensity left of the ridge and the matrix-product rate right
    of it; is the ridge marked at rate / bandwidth; and is each operation a point on the roof
    at its intensity, coloured and labelled by the roof that limits it?"""
    fig = roofline_figure(CHIP, OPS)
    artists = by_gid(fig)
    [roof] = artists["roof"]
    x, y = roof.get_data()
    assert np.allclose(y, np.minimum(1e15, 1e13 * x))
    assert x.min() < 0.25 / 10 and x.max() > 4000 * 10
    [ridge] = artists["ridge"]
    assert list(ridge.get_xdata()) == [100.0, 100.0]
    labels = []
    for i, intensity in enumerate(OPS.values()):
        [point] = artists[f"op-{i}"]
        assert (point.get_xdata()[0], point.get_ydata()[0]) == (intensity,
                                                                attainable(CHIP, intensity))
        labels.append(artists[f"op-label-{i}"][0].get_text())
    # compute-bound and memory-bound in two colours, each bound in one
    assert to_rgba(artists["op-0"][0].get_color()) != to_rgba(artists["op-1"][0].get_color())
    assert labels == ["big matmul: compute-bound", "elementwise: memory-bound",
                      "just below: memory-bound"]
    assert to_rgba(artists["op-1"][0].get_color()) == to_rgba(artists["op-2"][0].get_color())
    assert "FLOPs per byte" in fig.axes[0].get_xlabel()
    assert fig._repr_png_().startswith(b"\x89PNG")
    assert roofline_summary(CHIP, OPS) == (
        "test chip: ridge 100 FLOP/byte; big matmul 4,000.00 FLOP/byte, compute-bound; "
        "elementwise 0.25 FLOP/byte, memory-bound; just below 99.00 FLOP/byte, memory-bound")


@pytest.mark.parametrize("bad", [{}, {"zero": 0.0}, {"negative": -1.0}])
def test_a_roofline_without_positive_intensities_is_refused(bad):
    with pytest.raises(ValueError, match="positive number of FLOPs per byte"):
        roofline_figure(CHIP, bad)


def test_each_programs_bar_holds_its_parts_and_its_peak():
    """Is each bar, top to bottom in the order given, its arguments, then its outputs less what
    is written over an argument, then its temporaries, laid end to end in bytes, in the
    palette's colours, with its peak a tick at the peak's bytes?"""
    fig = memory_figure({"kept": KEPT, "donated": DONATED}, "one step")
    artists = by_gid(fig)
    for row, held, outputs in ((0, KEPT, 1024), (1, DONATED, 0)):
        sizes = {"argument": held["argument"], "output": outputs, "temp": held["temp"]}
        left = 0
        for part, _, colour in PARTS:
            [bar] = artists[f"bar-{row}-{part}"]
            assert (bar.get_x(), bar.get_width()) == (left, sizes[part])
            assert abs(bar.get_y() + bar.get_height() / 2 - row) < 1e-9
            assert to_rgba(bar.get_facecolor()) == to_rgba(colour)
            left += sizes[part]
        [peak] = artists[f"peak-{row}"]
        assert list(peak.get_xdata()) == [held["peak"]] * 2
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["kept", "donated"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "arguments", "outputs (own buffers)", "temporaries", "peak"]
    assert ax.get_title(loc="left") == "one step"
    assert "4 KiB" in [t.get_text() for t in ax.get_xticklabels()]
    assert fig._repr_png_().startswith(b"\x89PNG")
    assert memory_summary({"kept": KEPT, "donated": DONATED}) == (
        "kept: arguments 4,096 B, outputs 1,024 B, temporaries 2,048 B, peak 6,144 B; "
        "donated: arguments 4,096 B, outputs 0 B, temporaries 3,072 B, peak 5,120 B")


def test_memory_figures_without_programs_or_figures_are_refused():
    with pytest.raises(ValueError, match="at least one program"):
        memory_figure({}, "none")
    with pytest.raises(ValueError, match=r"\['alias', 'peak'\] missing"):
        memory_figure({"partial": {"argument": 1, "output": 1, "temp": 1}}, "partial")
