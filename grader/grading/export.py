"""``python -m grader export OUT --format canvas|moodle|csv``: the gradebook of an output
folder (its ``results.json``) in the columns a learning management system imports.

One row per student, those on the roster who handed in nothing included (0 points); the
points are the total that counts, after any late penalty. Students are identified from the
roster given to ``grade`` (id, display name, email, lms_id). A student the LMS cannot match
(not on the roster, or no roster given) is left out of its file and returned, for the command
line to name them; their points stay in the gradebook and the ``csv`` format. So are those
whose hand-in was empty or could not be read (:func:`grader.grading.outputs.hand_in`), whose
zeros are no answers: they are in the file, and named.

- **canvas**: Canvas's gradebook import, the columns of its own gradebook export:
  ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column named after the
  assignment or ``--column`` (a name Canvas does not know yet creates the assignment), and
  a first row ``Points Possible`` with its maximum. The roster's ``lms_id`` (Canvas's user
  id, which ``collect`` matched the download by) goes to ``ID`` and its ``id`` to
  ``SIS User ID``: Canvas matches a row by either.
- **moodle**: Moodle's "Import grades, CSV file": ``Full name, ID number, Email address``,
  then the assignment's points and a feedback column (which says when the hand-in was empty
  or unreadable); on import, identify users by email address or ID number, and map the
  points column to a grade item.
- **csv**: everything, for anything else: student, id, display name, email, points earned,
  penalty, total, maximum, standing, when handed in, what came of the hand-in.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.framework.results import StudentResult
from grader.grading import safe, texts
from grader.grading.outputs import OutputError, hand_in, read, write_atomic


class ExportError(Exception):
    """The folder cannot be exported; the message says why."""


@dataclass
class Exported:
    """What ``export`` wrote: where, how many students, those left out because the LMS cannot
    match them (no id on the roster, and for Moodle no email either; the ``csv`` format leaves
    nobody out), and those written whose hand-in was empty or could not be read."""

    where: Path
    count: int
    unmatched: list[str]
    not_read: list[str]


def export(out: Path, form: str, to: Path | None = None,
           column: str | None = None) -> Exported:
    """Write ``out``'s gradebook in format ``form`` to ``to`` (default ``OUT/<form>.csv``),
    the points in a column named ``column`` (default: the assignment's name)."""
    if form not in FORMATS:
        raise ExportError(texts.EXPORT_UNKNOWN_FORMAT.format(form=form, known=", ".join(FORMATS)))
    try:
        graded = read(out)
    except OutputError as exc:
        raise ExportError(str(exc)) from None
    if graded.batch.shard.count > 1:
        raise ExportError(texts.EXPORT_A_SLICE.format(out=out, shard=graded.batch.shard))
    title = column or graded.batch.assignment or texts.EXPORT_WHOLE_COURSE
    keys = MATCHED_BY.get(form, ())
    results, unmatched = [], []
    for r in sorted(graded.results, key=lambda r: r.student):
        if keys and not any(_person(r, graded.batch.people)[key] for key in keys):
            unmatched.append(r.student)  # a row the LMS would refuse or take for a stranger
        else:
            results.append(r)
    rows = WRITERS[form](results, title, graded.batch.people)
    text = io.StringIO()
    csv.writer(text, lineterminator="\n").writerows(safe.csv_rows(rows))
    target = to or out / f"{form}.csv"
    write_atomic(target, text.getvalue())
    not_read = [r.student for r in results if hand_in(r) in (texts.HAND_IN_EMPTY,
                                                             texts.HAND_IN_UNREADABLE)]
    return Exported(target, len(results), unmatched, not_read)


def _person(result: StudentResult, people: dict[str, dict[str, str]]) -> dict[str, str]:
    found = people.get(result.student, {})
    return {"id": found.get("id", ""), "email": found.get("email", ""),
            "lms_id": found.get("lms_id", ""),
            "display_name": found.get("display_name") or result.student}


def canvas(results: Sequence[StudentResult], title: str,
           people: dict[str, dict[str, str]]) -> list[list[str]]:
    top = max((r.max_total for r in results), default=0.0)
    rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", title],
            ["Points Possible", "", "", "", "", f"{top:g}"]]
    for r in results:
        person = _person(r, people)
        rows.append([person["display_name"], person["lms_id"], person["id"], "", "",
                     f"{r.final:g}"])
    return rows


def moodle(results: Sequence[StudentResult], title: str,
           people: dict[str, dict[str, str]]) -> list[list[str]]:
    rows = [["Full name", "ID number", "Email address", title, f"Feedback: {title}"]]
    for r in results:
        person = _person(r, people)
        rows.append([person["display_name"], person["id"], person["email"], f"{r.final:g}",
                     _comment(r)])
    return rows


def plain(results: Sequence[StudentResult], title: str,
          people: dict[str, dict[str, str]]) -> list[list[str]]:
    rows = [["student", "id", "display_name", "email", "assignment", "points", "penalty",
             "total", "max", "standing", "submitted_at", "hand_in"]]
    for r in results:
        person = _person(r, people)
        rows.append([r.student, person["id"], person["display_name"], person["email"], title,
                     f"{r.total:g}", f"{r.penalty:g}", f"{r.final:g}", f"{r.max_total:g}",
                     r.standing, r.late.submitted if r.late else "", hand_in(r)])
    return rows


def _comment(r: StudentResult) -> str:
    """One line for the LMS's feedback field: the points, and the penalty if any."""
    if r.missing:
        return texts.EXPORT_MISSING
    line = f"{r.final:g} / {r.max_total:g}"
    read = hand_in(r)
    if read == texts.HAND_IN_EMPTY:
        line += f": {texts.EXPORT_EMPTY}"
    elif read == texts.HAND_IN_UNREADABLE:
        line += ": " + texts.EXPORT_UNREADABLE.format(what="; ".join(r.unreadable))[:300]
    if r.penalty:
        line += texts.EXPORT_PENALTY.format(points=r.total, penalty=r.penalty,
                                            days=r.late.days if r.late else 0)
    return line


#: The formats, each with the rows it writes: the one registry (the command line's help and
#: its error for an unknown format read it).
WRITERS: dict[str, Callable[..., list[list[str]]]] = {
    "canvas": canvas, "moodle": moodle, "csv": plain}
#: What each LMS matches a row to one of its students by (the roster's fields).
MATCHED_BY: dict[str, tuple[str, ...]] = {"canvas": ("lms_id", "id"), "moodle": ("id", "email")}
FORMATS = tuple(WRITERS)
