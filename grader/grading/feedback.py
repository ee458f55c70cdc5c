"""Feedback for each student: ``OUT/feedback/<student>.md``, one section per exercise with
what passed, what failed and why, and the hint."""

from __future__ import annotations

from grader import messages as msg
from grader.results import ExerciseResult, StudentResult

_MARK = {msg.PASSED: "✅", msg.NOT_ATTEMPTED: "⬜", msg.NOT_FOUND: "⬜"}


def markdown(result: StudentResult) -> str:
    """A student's feedback as Markdown."""
    lines = [
        f"# Feedback for {result.student}",
        "",
        f"**Total: {result.total:g} / {result.max_total:g} points**",
        "",
        "| exercise | status | points |",
        "| --- | --- | --- |",
    ]
    for e in result.exercises.values():
        mark = _MARK.get(e.status, "❌")
        lines.append(f"| `{e.name}` | {mark} {e.status} | {e.points:g} / {e.max_points:g} |")
    if result.problems:
        lines += ["", "## Problems running your code", ""]
        lines += [f"- {_inline(p)}" for p in result.problems]
    for e in result.exercises.values():
        if e.status != msg.PASSED:
            lines += ["", *_exercise(e)]
    return "\n".join(lines) + "\n"


def _exercise(e: ExerciseResult) -> list[str]:
    lines = [f"## `{e.name}`: {e.status} ({e.points:g} / {e.max_points:g})", ""]
    if e.status in (msg.NOT_FOUND, msg.NOT_ATTEMPTED):
        return [*lines, _inline(e.message)]
    for t in e.tests:
        kind = "hidden test" if t.hidden else "test"
        devices = f" on {', '.join(map(str, t.devices))} device(s)" if t.devices else ""
        if t.status == msg.PASSED:
            lines.append(f"- ✅ {kind} `{t.test}`{devices}")
            continue
        lines.append(f"- ❌ {kind} `{t.test}`{devices}: {_inline(t.message)}")
        if t.got is not None:
            lines.append(f"  - yours: `{_inline(t.got)}`")
        if t.want is not None:
            lines.append(f"  - expected: `{_inline(t.want)}`")
    if e.hint:
        lines += ["", f"**Hint:** {e.hint}"]
    return lines


def _inline(text: str) -> str:
    """One line of Markdown-safe text (a student's error message may hold anything)."""
    return " ".join(str(text).split()).replace("`", "'").replace("|", "\\|")
