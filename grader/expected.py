"""The public tests' expected values, stored so that ``check`` needs no solutions: read here.

The reference solutions produce them in grader workers on 1, 2, 4 and 8 devices, one file
per lesson in ``public/expected/``; ``python -m grader refresh-expected [LESSON ...]``
(:mod:`grader.authoring.refresh_expected`) writes them again, and a test fails when a stored
file no longer matches what the solutions give. Reading them starts no worker.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from grader.course import LESSONS

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
