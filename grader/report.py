"""The gradebook as a table for the terminal."""

from __future__ import annotations

from collections.abc import Sequence

from grader.course import EXERCISES
from grader.results import StudentResult


def table(results: Sequence[StudentResult]) -> str:
    """Students as rows, exercises as columns (points earned), then the total."""
    header = ["student", *(e.name for e in EXERCISES), "total"]
    rows = [
        [r.student, *(f"{r.exercises[e.name].points:g}" for e in EXERCISES),
         f"{r.total:g}/{r.max_total:g}"]
        for r in sorted(results, key=lambda r: r.student)
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
