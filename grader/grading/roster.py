"""Who is in the class, and when each one handed in.

The **roster** (``--roster FILE``, CSV with a header) lists the students: ``name`` (the name
of their entry in the submissions folder), and optionally ``id``, ``display_name``, ``email``,
``lms_id`` (the id an LMS's download of submissions names them by: :mod:`collect`),
``extension_days`` (days added to every due date) and ``extension_days:ASSIGNMENT`` (days
added to that assignment's, instead). Someone on it who handed in nothing gets a row with zero
points, "missing"; a submission whose name is not on it is graded, and named in a warning.

The **times** (``--times FILE``, CSV ``name,submitted_at`` with a header) say when each
submission came in, as an LMS export records it; without them, a submission's time is the
newest modification time of its files (unzip and copies can change those: prefer the LMS's),
unless the LMS marked it late or on time (Canvas, through ``collect``'s manifest), which
decides.

Each mistake in either file is one :class:`RosterError` naming the file and the line.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path

from grader import messages as msg
from grader.assignments import Assignment
from grader.framework import cases as case_registry
from grader.framework.results import ExerciseResult, Late, StudentResult, TestResult
from grader.grading import texts
from grader.grading.submission import files_of

COLUMNS = ("name", "id", "display_name", "email", "lms_id", "extension_days")
EXTENSION = "extension_days"


class RosterError(ValueError):
    """A mistake in the roster or the times file; the message starts with ``FILE:LINE:``."""


@dataclass(frozen=True)
class Person:
    """One student on the roster."""

    name: str
    id: str = ""
    display_name: str = ""
    email: str = ""
    #: Days added to due dates: under "" for every assignment, else under its name.
    extensions: dict[str, float] = field(default_factory=dict)
    #: The id the LMS's download of submissions names them by (Canvas's user id, Moodle's
    #: participant id): ``collect`` names their folder after them by it.
    lms_id: str = ""

    def extension(self, assignment: str) -> timedelta:
        days = self.extensions.get(assignment, self.extensions.get("", 0.0))
        return timedelta(days=days)

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "display_name": self.display_name, "email": self.email,
                "lms_id": self.lms_id}


def csv_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and the rows (with their line numbers) of a CSV file."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle, restkey="\0", strict=True)
            header = [name.strip() for name in reader.fieldnames or []]
            reader.fieldnames = header
            rows = [(reader.line_num, row) for row in reader]
    except OSError as exc:
        raise RosterError(f"{path}: {exc.strerror or exc}") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: {texts.CSV_UNREADABLE.format(why=exc)}") from None
    if not header:
        raise RosterError(f"{path}:1: {texts.CSV_EMPTY}")
    for line, row in rows:
        if "\0" in row:
            raise RosterError(f"{path}:{line}: {texts.CSV_TOO_MANY_CELLS}")
    return header, rows


def read_roster(path: Path, assignments: tuple[str, ...] = ()) -> dict[str, Person]:
    """The students of a roster file, by submission name. ``assignments``: the names an
    ``extension_days:NAME`` column may give."""
    header, rows = csv_rows(path)
    for column in header:
        name = column.removeprefix(f"{EXTENSION}:")
        if column not in COLUMNS and not (column.startswith(f"{EXTENSION}:")
                                          and name in assignments):
            raise RosterError(f"{path}:1: " + texts.ROSTER_UNKNOWN_COLUMN.format(
                column=column, known=", ".join(COLUMNS),
                assignments=", ".join(assignments) or "none"))
    if "name" not in header:
        raise RosterError(f"{path}:1: {texts.ROSTER_NO_NAME}")
    people: dict[str, Person] = {}
    for line, row in rows:
        name = (row.get("name") or "").strip()
        if not name:
            raise RosterError(f"{path}:{line}: {texts.ROSTER_EMPTY_NAME}")
        if name in people:
            raise RosterError(f"{path}:{line}: {texts.ROSTER_DUPLICATE.format(name=name)}")
        extensions = {}
        for column in header:
            if column.startswith(EXTENSION) and (row.get(column) or "").strip():
                try:
                    days = float(row[column])
                except ValueError:
                    days = -1.0
                if not 0 <= days < 10_000:
                    raise RosterError(f"{path}:{line}: " + texts.ROSTER_BAD_DAYS.format(
                        column=column, value=row[column]))
                extensions[column.removeprefix(EXTENSION).removeprefix(":")] = days
        people[name] = Person(name, *((row.get(c) or "").strip()
                                      for c in ("id", "display_name", "email")), extensions,
                              (row.get("lms_id") or "").strip())
    return people


def read_times(path: Path, zone: tzinfo | None) -> dict[str, datetime]:
    """When each submission came in, by name; a time without an offset is in ``zone`` (the
    course's time zone), which must then be set."""
    header, rows = csv_rows(path)
    if header[:2] != ["name", "submitted_at"] or len(header) > 2:
        raise RosterError(f"{path}:1: {texts.TIMES_HEADER}")
    times: dict[str, datetime] = {}
    for line, row in rows:
        name, text = (row.get("name") or "").strip(), (row.get("submitted_at") or "").strip()
        if not name:
            raise RosterError(f"{path}:{line}: {texts.ROSTER_EMPTY_NAME}")
        if name in times:
            raise RosterError(f"{path}:{line}: {texts.ROSTER_DUPLICATE.format(name=name)}")
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise RosterError(f"{path}:{line}: {texts.TIMES_BAD.format(value=text)}") from None
        if when.tzinfo is None:
            if zone is None:
                raise RosterError(f"{path}:{line}: {texts.TIMES_NO_ZONE.format(value=text)}")
            when = when.replace(tzinfo=zone)
        times[name] = when
    return times


def modified(entry: Path) -> datetime:
    """When a submission was last changed: the newest modification time of its files (links
    not followed), as an aware time."""
    stamps = [path.lstat().st_mtime for path in files_of(entry)] or [entry.lstat().st_mtime]
    return datetime.fromtimestamp(max(stamps)).astimezone()


def lateness(assignment: Assignment, submitted: datetime, person: Person | None,
             said: tuple[str, bool] | None = None) -> Late | None:
    """How late a submission is against the assignment's due date (moved by the student's
    extension); None when the assignment has no due date. ``said``: the LMS that marked it,
    and whether late (:func:`grader.grading.collect.said_late`): its mark decides whether it
    is late (at least a day if so), unless the roster moves this student's due date, which
    the LMS does not know."""
    if assignment.due is None:
        return None
    extension = person.extension(assignment.name) if person else timedelta()
    due = assignment.due + extension
    days = assignment.late.days_late(submitted, due)
    by = ""
    if said is not None and not extension:
        by, late = said
        days = max(days, 1) if late else 0
    return Late(submitted.isoformat(timespec="seconds"), due.isoformat(timespec="seconds"),
                days, assignment.late.percent(days), by)


def absent(name: str, exercises: tuple[str, ...]) -> StudentResult:
    """The result of someone on the roster who handed nothing in: every exercise not found,
    with its full points at stake."""
    stakes: dict[str, float] = dict.fromkeys(exercises, 0.0)
    for case in case_registry.load(hidden=True):
        if case.exercise in stakes:
            stakes[case.exercise] += case.points
    return StudentResult(name, {
        exercise: ExerciseResult(exercise, [TestResult(
            "handed in", 0, points, msg.NOT_FOUND, msg.MSG_MISSING)])
        for exercise, points in stakes.items()}, missing=True)
