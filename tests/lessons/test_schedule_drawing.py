"""Pipeline schedule drawings (grader/lessons/schedule_drawing.py): every busy cell where the
schedule puts it, in its microbatch's colour and with its label, every idle cell drawn as idle,
and the idle share said in the title and in the summary line."""

from __future__ import annotations

import numpy as np
import pytest
from figures import by_gid
from matplotlib.colors import to_rgba

from grader.lessons.schedule_drawing import (
    MAX_LABELLED,
    MAX_TICKS,
    from_log,
    gpipe_forward,
    idle_share,
    schedule_figure,
    summary,
)
from grader.palette import device_colour

# Two stages, two microbatches, forward only: the log lesson 8's pipeline writes.
LOG = [[0, -1], [1, 0], [-1, 1]]
# The same two stages with a backward after each forward (stage 1 first, then stage 0).
STEP = {(0, 0): ("F", 0), (1, 1): ("F", 0), (1, 2): ("B", 0), (0, 3): ("B", 0)}


def test_a_log_becomes_the_schedule_it_records():
    """Is each entry of the log a forward of that microbatch at (stage, tick), -1 nothing?"""
    assert from_log(LOG) == {(0, 0): ("F", 0), (0, 1): ("F", 1), (1, 1): ("F", 0),
                             (1, 2): ("F", 1)}
    assert idle_share(from_log(LOG)) == pytest.approx(2 / 6)
    assert idle_share(STEP, stages=3) == pytest.approx(1 - 4 / 12)


def test_every_cell_of_each_schedule_is_drawn_where_and_as_it_is():
    """Read back from the artists: a busy cell at (tick, stage) in its microbatch's colour,
    hatched for a backward, labelled kind and microbatch; every other cell of the panel's own
    span idle; each panel titled with its idle share; the time axis shared."""
    fig = schedule_figure({"forward": from_log(LOG), "one step": STEP})
    artists = by_gid(fig)
    for panel, (schedule, ticks) in enumerate(((from_log(LOG), 3), (STEP, 4))):
        for s in range(2):
            for t in range(ticks):
                if (s, t) in schedule:
                    kind, k = schedule[s, t]
                    [cell] = artists[f"op-{panel}-{s}-{t}"]
                    assert cell.get_xy() == (t, s)
                    assert to_rgba(cell.get_facecolor()) == to_rgba(device_colour(k))
                    assert bool(cell.get_hatch()) == (kind == "B")
                    assert artists[f"label-{panel}-{s}-{t}"][0].get_text() == f"{kind}{k}"
                else:
                    assert f"idle-{panel}-{s}-{t}" in artists
                    assert f"op-{panel}-{s}-{t}" not in artists
        assert f"idle-{panel}-0-{ticks}" not in artists  # nothing past its own span
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["forward: idle 33% of stage-ticks (white: the bubble)",
                      "one step: idle 50% of stage-ticks (white: the bubble)"]
    assert [ax.get_xlim() for ax in fig.axes] == [(0, 4), (0, 4)]
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_a_long_schedule_shows_its_microbatches_by_colour_alone():
    """Past MAX_LABELLED ticks, are the cells still drawn and coloured, with no labels?"""
    long = {(0, t): ("F", t % 3) for t in range(MAX_LABELLED + 1)}
    artists = by_gid(schedule_figure({"long": long}))
    assert to_rgba(artists["op-0-0-4"][0].get_facecolor()) == to_rgba(device_colour(1))
    assert not any(gid.startswith("label-") for gid in artists)


def test_a_stage_with_no_work_still_has_its_row():
    """With ``stages`` given, is a stage that never works drawn as a row of idle cells, and
    counted in the idle share?"""
    fig = schedule_figure({"forward": from_log(LOG)}, stages=3)
    artists = by_gid(fig)
    assert all(f"idle-0-2-{t}" in artists for t in range(3))
    assert summary("forward", from_log(LOG), stages=3) == (
        "forward: 3 stages x 3 ticks, 4 busy and 5 idle (bubble 0.556)")


@pytest.mark.parametrize(("schedules", "message"), [
    ({}, "at least one schedule"),
    ({"x": {(0, 0): ("X", 0)}}, "kind one of"),
    ({"x": {(0, 0): ("F", -1)}}, "microbatch 0 or more"),
    ({"x": {(0, MAX_TICKS): ("F", 0)}}, "too long to draw"),
])
def test_a_schedule_that_cannot_be_drawn_says_why(schedules, message):
    """Is an empty set of schedules, an unknown kind, a negative microbatch or a schedule too
    long to read refused with a sentence?"""
    with pytest.raises(ValueError, match=message):
        schedule_figure(schedules)


def test_the_lessons_forward_log_gives_the_bubble_formula():
    """For a log of n stages and m microbatches as lesson 8's pipeline writes it (microbatch k
    at stage s at tick k + s), is the idle share (n - 1) / (m + n - 1)?"""
    for n, m in ((8, 4), (4, 1), (2, 8)):
        log = np.full((m + n - 1, n), -1)
        for k in range(m):
            for s in range(n):
                log[k + s, s] = k
        assert idle_share(from_log(log), n) == pytest.approx((n - 1) / (m + n - 1))


def test_gpipes_forward_by_its_rule_is_the_schedule_a_pipeline_logs():
    """Is stage s on microbatch k at tick s + k: the log lesson 8's pipeline writes for 2
    stages and 2 microbatches?"""
    assert gpipe_forward(2, 2) == from_log(LOG)
    assert idle_share(gpipe_forward(4, 12), 4) == pytest.approx(3 / 15)
