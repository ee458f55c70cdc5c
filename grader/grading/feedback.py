"""Feedback for each student, in two renderings of the same result: ``OUT/feedback/NAME.md``
(one section per exercise with what passed, what failed and why, and the hint) and
``OUT/feedback/NAME.html``, a page to open in a browser or send, in the course's colours: each
exercise drawn as ``check`` draws it in the notebook, yours next to expected."""

from __future__ import annotations

from grader import messages as msg
from grader.framework.results import ExerciseResult, StudentResult
from grader.grading import safe
from grader.palette import status_colour

#: The files written per student.
SUFFIXES = (".md", ".html")
#: How each status is marked in Markdown: partial credit is not a failure.
_MARK = {msg.PASSED: "✅", msg.PARTIAL: "🟡", msg.NOT_ATTEMPTED: "⬜", msg.NOT_FOUND: "⬜"}
FAILURE_MARK = "❌"


def mark(status: str) -> str:
    return _MARK.get(status, FAILURE_MARK)


#: How each status is marked on the HTML page: a small drawing in the status's colour (a
#: tick, half a disc, a ring, a cross), since the emoji of the Markdown show as empty boxes
#: where no emoji font is installed.
_SHAPE = {
    msg.PASSED: '<path d="M2 6.5l2.5 2.5L10 3" fill="none" stroke="{c}" stroke-width="2"/>',
    msg.PARTIAL: '<circle cx="6" cy="6" r="4.5" fill="none" stroke="{c}" stroke-width="1.5"/>'
                 '<path d="M6 1.5a4.5 4.5 0 0 1 0 9z" fill="{c}"/>',
    msg.NOT_ATTEMPTED: '<circle cx="6" cy="6" r="4.5" fill="none" stroke="{c}" '
                       'stroke-width="1.5"/>',
}
_SHAPE[msg.NOT_FOUND] = _SHAPE[msg.NOT_ATTEMPTED]
_FAILURE_SHAPE = '<path d="M3 3l6 6M9 3l-6 6" stroke="{c}" stroke-width="2"/>'


def html_mark(status: str) -> str:
    """The page's mark of a status: an inline drawing, no font needed."""
    shape = _SHAPE.get(status, _FAILURE_SHAPE).format(c=status_colour(status))
    return (f'<svg width="12" height="12" viewBox="0 0 12 12" aria-hidden="true">{shape}'
            "</svg>")


def points_line(result: StudentResult) -> str:
    """The total as the student should read it: with the late penalty, when there is one."""
    line = f"Total: {result.final:g} / {result.max_total:g} points"
    if result.late and result.late.days:
        line += (f" ({result.total:g} earned, less {result.penalty:g} for handing in "
                 f"{result.late.days} day(s) late: {result.late.percent:g}%)")
    return line


def when_line(result: StudentResult) -> str | None:
    """When it was handed in against the due date (which counts any extension)."""
    if result.late is None:
        return None
    late = result.late
    said = f" ({late.said_by} marked it {result.standing})" if late.said_by else ""
    return f"Handed in {late.submitted}, due {late.due}: {result.standing}{said}."


def markdown(result: StudentResult) -> str:
    """A student's feedback as Markdown."""
    lines = [f"# Feedback for {safe.markdown(result.student)}", "",
             f"**{points_line(result)}**", ""]
    if when := when_line(result):
        lines += [when, ""]
    lines += ["| exercise | status | points |", "| --- | --- | --- |"]
    for e in result.exercises.values():
        lines.append(f"| `{e.name}` | {mark(e.status)} {e.status} | "
                     f"{e.points:g} / {e.max_points:g} |")
    if result.problems:
        lines += ["", "## Problems running your code", ""]
        lines += [f"- {_inline(p)}" for p in result.problems]
    for e in result.exercises.values():
        if e.status != msg.PASSED or e.adjustments:
            lines += ["", *_exercise(e)]
    return "\n".join(lines) + "\n"


def _exercise(e: ExerciseResult) -> list[str]:
    lines = [f"## `{e.name}`: {e.status} ({e.points:g} / {e.max_points:g})", ""]
    if e.adjustments:
        lines += [*(f"- **{_inline(line)}**" for line in e.adjusted_lines()), ""]
    if e.status in (msg.NOT_FOUND, msg.NOT_ATTEMPTED):
        return [*lines, _inline(e.message)]
    for t in e.tests:
        kind = "hidden test" if t.hidden else "test"
        devices = f" on {', '.join(map(str, t.devices))} device(s)" if t.devices else ""
        if t.status == msg.PASSED:
            lines.append(f"- ✅ {kind} `{t.test}`{devices}")
            continue
        lines.append(f"- {FAILURE_MARK} {kind} `{t.test}`{devices}: {_inline(t.message)}")
        if t.got is not None:
            lines.append(f"  - yours: `{_code(t.got)}`")
        if t.want is not None:
            lines.append(f"  - expected: `{_code(t.want)}`")
    if e.hint:
        lines += ["", f"**Hint:** {e.hint}"]
    return lines


def _inline(text: str) -> str:
    """One line of Markdown prose showing ``text`` as typed (a student's error message may
    hold anything: HTML, Markdown, escapes, lone surrogates)."""
    return safe.markdown(" ".join(str(text).split()))


def _code(text: str) -> str:
    """The inside of a code span showing ``text`` on one line."""
    return safe.code_span(" ".join(str(text).split()))


def page(result: StudentResult) -> str:
    """A student's feedback as a standalone HTML page (no script, nothing fetched)."""
    e = safe.html
    rows = "".join(
        f'<tr><td><a href="#{e(x.name)}"><code>{e(x.name)}</code></a></td>'
        f'<td style="color:{status_colour(x.status)};font-weight:bold">{html_mark(x.status)} '
        f"{e(x.status)}</td><td>{x.points:g} / {x.max_points:g}</td></tr>"
        for x in result.exercises.values())
    problems = "".join(f"<li>{e(p)}</li>" for p in result.problems)
    sections = "".join(f'<section id="{e(x.name)}">{x._repr_html_()}</section>'
                       for x in result.exercises.values())
    when = when_line(result)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Feedback for {e(result.student)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Feedback for {e(result.student)}</h1><p><b>{e(points_line(result))}</b></p>"
        + (f"<p>{e(when)}</p>" if when else "")
        + f"<table><tr><th>exercise</th><th>status</th><th>points</th></tr>{rows}</table>"
        + (f"<h2>Problems running your code</h2><ul>{problems}</ul>" if problems else "")
        + f"<h2>Each exercise</h2>{sections}</body></html>\n"
    )


_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;"
    "line-height:1.4}table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;"
    "vertical-align:top}code{font-size:90%;white-space:pre-wrap;word-break:break-all}"
)
