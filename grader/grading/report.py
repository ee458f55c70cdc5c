"""The gradebook as a table for the terminal: one column per lesson (points earned of the
lesson's maximum), then the total; the points of every exercise are in gradebook.csv."""

from __future__ import annotations

from collections.abc import Sequence

from grader.course import EXERCISES, LESSONS
from grader.results import StudentResult


def table(results: Sequence[StudentResult]) -> str:
    """Students as rows, lessons as columns, then the total."""
    header = ["student", *LESSONS, "total"]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        cells = [r.student]
        for lesson in LESSONS:
            parts = [r.exercises[e.name] for e in EXERCISES
                     if e.lesson == lesson and e.name in r.exercises]
            cells.append(f"{sum(p.points for p in parts):g}/{sum(p.max_points for p in parts):g}")
        rows.append([*cells, f"{r.total:g}/{r.max_total:g}"])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
