"""The public tests' expected values, stored so that ``check`` needs no solutions.

The reference solutions produce them in grader workers on 1, 2, 4 and 8 devices;
``python -m grader refresh-expected`` writes them again, and a test fails when the stored
file no longer matches what the solutions give.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from grader import cases, submission
from grader.runner import DEFAULT_LIMITS, Limits, run

PATH = Path(__file__).resolve().parent / "public" / "expected.json"
#: Device counts the public expected values are stored for.
DEVICE_COUNTS = (1, 2, 4, 8)


@cache
def load() -> dict[str, dict[str, dict]]:
    """Stored reference outcomes: ``{case id: {device count: outcome}}``."""
    return json.loads(PATH.read_text())["cases"]


def compute(solutions: Path, limits: Limits = DEFAULT_LIMITS) -> dict[str, dict[str, dict]]:
    """Run the public cases on the reference solutions for every stored device count."""
    from grader.grade import GradingError

    public = cases.load(hidden=False)
    sources = submission.load(solutions).sources
    table: dict[str, dict[str, dict]] = {c.id: {} for c in public}
    for devices in DEVICE_COUNTS:
        measured = run(sources, public, devices, limits)
        for case_id, outcome in measured.outcomes.items():
            if not outcome.get("ok"):
                raise GradingError(f"the reference fails {case_id} on {devices} devices")
            table[case_id][str(devices)] = outcome
    return table


def render(table: dict[str, dict[str, dict]]) -> str:
    return json.dumps({"cases": table}, indent=1, sort_keys=True) + "\n"


def refresh(solutions: Path | None = None) -> Path:
    """Recompute and store the expected values; return the file written."""
    from grader.grade import SOLUTIONS

    PATH.write_text(render(compute(solutions or SOLUTIONS)))
    load.cache_clear()
    return PATH
