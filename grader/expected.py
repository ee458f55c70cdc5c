"""The public tests' expected values, stored so that ``check`` needs no solutions.

The reference solutions produce them in grader workers on 1, 2, 4 and 8 devices, one file
per lesson in ``public/expected/``; ``python -m grader refresh-expected [LESSON ...]`` writes
them again, and a test fails when a stored file no longer matches what the solutions give.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from grader import cases
from grader.course import BY_NAME, LESSONS
from grader.grading import submission
from grader.workers.runner import DEFAULT_LIMITS, Limits, run

FOLDER = Path(__file__).resolve().parent / "public" / "expected"
#: Device counts the public expected values are stored for.
DEVICE_COUNTS = (1, 2, 4, 8)


def path(lesson: str) -> Path:
    return FOLDER / f"{lesson}.json"


@cache
def load() -> dict[str, dict[str, dict]]:
    """Stored reference outcomes of every lesson: ``{case id: {device count: outcome}}``."""
    table: dict[str, dict[str, dict]] = {}
    for lesson in LESSONS:
        if path(lesson).exists():
            table.update(json.loads(path(lesson).read_text())["cases"])
    return table


def compute(solutions: Path, lesson: str, limits: Limits = DEFAULT_LIMITS) -> dict:
    """Run the public cases of one lesson on the reference solutions, for every device
    count stored."""
    from grader.grading.grade import GradingError

    public = [c for c in cases.load(hidden=False) if BY_NAME[c.exercise].lesson == lesson]
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


def refresh(lessons: Sequence[str] = (), solutions: Path | None = None) -> list[Path]:
    """Recompute and store the expected values of some lessons (all by default)."""
    from grader.grading.grade import SOLUTIONS

    FOLDER.mkdir(exist_ok=True)
    written = []
    for lesson in lessons or LESSONS:
        if lesson not in LESSONS:
            raise ValueError(f"unknown lesson {lesson!r}; lessons: {', '.join(LESSONS)}")
        path(lesson).write_text(render(compute(solutions or SOLUTIONS, lesson)))
        written.append(path(lesson))
    load.cache_clear()
    return written
