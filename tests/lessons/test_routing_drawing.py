"""Tokens routed to experts (grader/lessons/routing_drawing.py), read back from the artists:
each token in the slot its expert's buffer gives it, kept in its device's colour below the
capacity and drawn as dropped above it; the slots and the summary as the lesson counts them."""

from __future__ import annotations

import numpy as np
import pytest
from figures import by_gid
from matplotlib.colors import to_rgba

from grader.lessons.routing_drawing import routing_figure, routing_summary, slots
from grader.palette import device_colour

# Two devices, three experts, capacity 2: device 0 sends three tokens to expert 1 (one is
# dropped), device 1 two to expert 0 and one to expert 2 (none dropped).
CHOSEN = np.array([[1, 0, 1, 1], [0, 2, 0, 1]])


def test_a_tokens_slot_counts_the_earlier_tokens_of_its_device_with_its_expert():
    assert slots(CHOSEN).tolist() == [[0, 0, 1, 2], [0, 0, 1, 0]]


def test_each_token_is_drawn_in_its_slot_kept_or_dropped_at_the_capacity():
    """Is token t of device d the cell (expert, slot) of d's panel, in d's colour while the
    slot is under the capacity and drawn as dropped past it; is the capacity line where it is;
    do the titles and the summary count the dropped tokens?"""
    fig = routing_figure(CHOSEN, 3, 2)
    artists = by_gid(fig)
    for d, row in enumerate(CHOSEN):
        for t, (e, s) in enumerate(zip(row, slots(CHOSEN)[d], strict=True)):
            gid = f"{'token' if s < 2 else 'dropped'}-{d}-{t}"
            [cell] = artists[gid]
            assert cell.get_xy() == (e, s)
            colour = device_colour(d) if s < 2 else "white"
            assert to_rgba(cell.get_facecolor()) == to_rgba(colour)
        [line] = artists[f"capacity-{d}"]
        assert list(line.get_ydata()) == [2, 2]
    assert sorted(g for g in artists if g.startswith("dropped")) == ["dropped-0-3"]
    assert [ax.get_title() for ax in fig.axes] == ["device 0: 1 dropped", "device 1: 0 dropped"]
    assert routing_summary(CHOSEN, 3, 2) == ("capacity 2: device 0 3 kept, 1 dropped, device 1 "
                                             "4 kept, 0 dropped; 7 kept and 1 dropped in all")
    assert fig._repr_png_().startswith(b"\x89PNG")


@pytest.mark.parametrize(("chosen", "experts", "capacity"), [
    ([1, 0], 2, 1),  # one row: not one per device
    ([[0, 3]], 3, 1),  # an expert out of range
    ([[0.5, 1]], 2, 1),  # not whole numbers
    ([[0, 1]], 2, -1),  # a negative capacity
])
def test_routings_that_are_not_one_row_of_experts_per_device_are_refused(chosen, experts,
                                                                         capacity):
    with pytest.raises(ValueError, match="one row per device"):
        routing_figure(chosen, experts, capacity)
