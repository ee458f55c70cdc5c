"""The gradebook as a table for the terminal: one column per lesson graded (points earned of
the lesson's maximum), then the total that counts (after any late penalty) and the standing
when it says more than "handed in"; the points of every exercise are in gradebook.csv."""

from __future__ import annotations

from collections.abc import Sequence

from grader import messages as msg
from grader.course import EXERCISES, LESSONS
from grader.framework.results import StudentResult


def table(results: Sequence[StudentResult]) -> str:
    """Students as rows, lessons as columns, then the total (and the standing)."""
    graded = {name for r in results for name in r.exercises}
    lessons = [lesson for lesson in LESSONS
               if any(e.lesson == lesson and e.name in graded for e in EXERCISES)]
    standing = any(r.standing != msg.HANDED_IN for r in results)
    header = ["student", *lessons, "total", *(["standing"] if standing else [])]
    rows = []
    for r in sorted(results, key=lambda r: r.student):
        cells = [r.student]
        for lesson in lessons:
            parts = [r.exercises[e.name] for e in EXERCISES
                     if e.lesson == lesson and e.name in r.exercises]
            cells.append(f"{sum(p.points for p in parts):g}/{sum(p.max_points for p in parts):g}")
        cells.append(f"{r.final:g}/{r.max_total:g}")
        rows.append([*cells, *([_standing(r)] if standing else [])])
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _standing(r: StudentResult) -> str:
    if r.late and r.late.days:
        return f"{r.standing} {r.late.days} day(s), -{r.penalty:g}"
    return r.standing
