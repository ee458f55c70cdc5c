"""The course's visual language: one colour per device and one per grading status.

Layout drawings, collective drawings, the explorer, the inspector, in-notebook feedback and the
batch summary all take their colours from here, so device 3 and "failed" look the same
everywhere.
"""

from __future__ import annotations

from grader import messages as msg

#: One colour per device for up to 16 devices (the most any drawing or explorer shows):
#: Okabe-Ito's seven colour-blind-safe colours first (devices 0-6), then nine more chosen so
#: that every pair of the sixteen is at least 17 apart in CIEDE2000
#: (tests/lessons/test_drawing.py checks 15), all light enough for black text, and none close
#: to the grey of a sum or an empty cell.
#: Device ``i`` gets ``DEVICE_COLOURS[i % 16]``.
DEVICE_COLOURS: tuple[str, ...] = (
    "#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#FCCDE5",
    "#8DD3C7", "#D62728", "#98DF8A", "#984EA3", "#999933", "#9C755F", "#008695", "#FB9A99",
)

#: "Not found" and "not attempted" are both an exercise not handed in: grey, not red, in the
#: notebook's feedback as in the batch summary ("not attempted is not wrong").
STATUS_COLOURS: dict[str, str] = {
    msg.PASSED: "#1e7b34",
    msg.PARTIAL: "#a86400",
    msg.NOT_ATTEMPTED: "#5f6368",
    msg.NOT_FOUND: "#5f6368",
}
#: Every other status (failed, error, timeout, crashed) is a failure.
FAILURE_COLOUR = "#b3261e"


def device_colour(device: int) -> str:
    """The colour of device ``device`` (its id) in every drawing."""
    return DEVICE_COLOURS[device % len(DEVICE_COLOURS)]


def status_colour(status: str) -> str:
    """The colour a grading status is shown in."""
    return STATUS_COLOURS.get(status, FAILURE_COLOUR)
