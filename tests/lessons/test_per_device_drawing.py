"""Values per device (grader/lessons/per_device_drawing.py), read back from the artists: each
value written in its device's row and its column, each row labelled with its device in the
device's colour, the distinct rows counted in the title and the summary."""

from __future__ import annotations

import numpy as np
import pytest
from figures import by_gid
from matplotlib.colors import to_rgba

from grader.lessons.per_device_drawing import (
    distinct_rows,
    per_device_figure,
    per_device_summary,
)
from grader.palette import device_colour

COPIES = np.tile([0.25, 0.5, 0.75], (4, 1))
OWN = np.arange(12, dtype=float).reshape(4, 3) / 12


def test_each_value_is_written_in_its_devices_row_and_the_distinct_rows_counted():
    fig = per_device_figure({"copies": COPIES, "own": OWN})
    artists = by_gid(fig)
    for panel, values in enumerate((COPIES, OWN)):
        for (d, j), value in np.ndenumerate(values):
            [text] = artists[f"value-{panel}-{d}-{j}"]
            assert text.get_position() == (j, d) and text.get_text() == f"{value:.2f}"
        labels = fig.axes[panel].get_yticklabels()
        assert [t.get_text() for t in labels] == [f"device {d}" for d in range(4)]
        assert [to_rgba(t.get_bbox_patch().get_facecolor()) for t in labels] == [
            to_rgba(device_colour(d)) for d in range(4)]
    assert [ax.get_title() for ax in fig.axes] == ["copies\n1 distinct row(s) of 4",
                                                   "own\n4 distinct row(s) of 4"]
    assert distinct_rows(COPIES) == 1 and distinct_rows(OWN) == 4
    assert per_device_summary({"copies": COPIES, "own": OWN}) == (
        "copies: 1 distinct block(s) of 4; own: 4 distinct block(s) of 4")
    assert fig._repr_png_().startswith(b"\x89PNG")


@pytest.mark.parametrize("bad", [{}, {"flat": np.zeros(4)}, {"nan": np.full((2, 2), np.nan)},
                                 {"tall": np.zeros((17, 2))}])
def test_panels_that_are_not_a_row_per_device_are_refused(bad):
    with pytest.raises(ValueError, match="at least one panel|a row per device"):
        per_device_figure(bad)
