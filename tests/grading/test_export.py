"""`export`: the gradebook in the columns Canvas's and Moodle's grade imports expect, and as
plain CSV, for a small class with a late submission and a student who handed nothing in."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
import stand_in

from grader import assignments, cli
from grader.assignments import LatePolicy
from grader.grading import export, grade
from grader.grading.roster import Person

DUE = datetime(2027, 1, 29, 23, 59, tzinfo=UTC)


@pytest.fixture
def graded(tmp_path, monkeypatch):
    """ann (full marks, two days late: -20%), bob (1 of 4 on halo_difference, on time), dan (on the
    roster, nothing handed in)."""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1})
    work = grade.Work(
        replace(assignments.find("03_collectives"), due=DUE, late=LatePolicy(10, 0, 50)),
        roster={"ann": Person("ann", "s1", "Ann Ada", "ann@example.org"),
                "bob": Person("bob", "s2", "Bob Bo", "bob@example.org"),
                "dan": Person("dan", "s3", "Dan Du", "dan@example.org")},
        times={"ann": DUE + timedelta(days=1, hours=1), "bob": DUE - timedelta(days=1)})
    out = tmp_path / "out"
    results = grade.grade(batch, out, jobs=1, work=work)
    return out, {r.student: r for r in results}


def rows(path):
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


def test_canvas_gets_its_gradebook_columns_and_a_points_possible_row(graded):
    out, results = graded
    where, count, unmatched = export.export(out, "canvas")
    assert where == out / "canvas.csv" and count == 3 and unmatched == []
    top = max(r.max_total for r in results.values())
    assert rows(where) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_collectives"],
        ["Points Possible", "", "", "", "", f"{top:g}"],
        ["Ann Ada", "", "s1", "", "", f"{4 * 0.8:g}"],
        ["Bob Bo", "", "s2", "", "", "1"],
        ["Dan Du", "", "s3", "", "", "0"]]


def test_moodle_gets_ids_emails_points_and_a_feedback_line(graded):
    out, results = graded
    where, _, _ = export.export(out, "moodle")
    top = f"{results['ann'].max_total:g}"
    assert rows(where) == [
        ["Full name", "ID number", "Email address", "03_collectives",
         "Feedback: 03_collectives"],
        ["Ann Ada", "s1", "ann@example.org", "3.2",
         f"3.2 / {top} (4 earned, less 0.8 for 2 day(s) late)"],
        ["Bob Bo", "s2", "bob@example.org", "1", f"1 / {top}"],
        ["Dan Du", "s3", "dan@example.org", "0", "nothing handed in"]]


def test_plain_csv_has_everything(graded, tmp_path):
    out, results = graded
    where, _, _ = export.export(out, "csv", tmp_path / "grades.csv")
    table = rows(where)
    assert table[0] == ["student", "id", "display_name", "email", "assignment", "points",
                        "penalty", "total", "max", "standing", "submitted_at"]
    assert table[1][:10] == ["ann", "s1", "Ann Ada", "ann@example.org", "03_collectives", "4",
                             "0.8", "3.2", f"{results['ann'].max_total:g}", "late"]
    assert table[1][10] == "2027-01-31T00:59:00+00:00"
    assert table[3][:10] == ["dan", "s3", "Dan Du", "dan@example.org", "03_collectives", "0",
                             "0", "0", f"{results['dan'].max_total:g}", "missing"]


def test_without_a_roster_students_are_their_entry_names_and_a_warning(
        tmp_path, monkeypatch, capsys):
    """Without a roster no LMS can match anyone: are the students left out of the Canvas and
    Moodle files and named in a warning (they were exported with empty ids and no word),
    and kept in the plain CSV by their entry names?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4})
    grade.grade(batch, tmp_path / "out", jobs=1)
    where, count, unmatched = export.export(tmp_path / "out", "canvas")
    assert rows(where)[0][-1] == "course" and len(rows(where)) == 2  # header, points possible
    assert (count, unmatched) == (0, ["ann"])
    assert cli.main(["export", str(tmp_path / "out"), "--format", "moodle"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: left out, 1 student(s) with no id or email on the roster, which "
                   "moodle cannot match to its students (their points are in gradebook.csv: "
                   "add them to the roster and grade with --roster, or enter them in the "
                   "LMS): ann"]
    assert len(rows(tmp_path / "out" / "moodle.csv")) == 1
    where, count, unmatched = export.export(tmp_path / "out", "csv")
    assert rows(where)[1][:2] == ["ann", ""] and (count, unmatched) == (1, [])


def test_a_student_not_on_the_roster_is_named_and_the_column_can_be_named(graded, tmp_path):
    """Is a graded student missing from the roster left out as one Canvas cannot match, and
    does --column name the points column (a name Canvas does not know makes a new
    assignment)?"""
    out, _ = graded
    data = json.loads((out / "results.json").read_text())
    del data["roster"]["bob"]
    (out / "results.json").write_text(json.dumps(data))
    where, count, unmatched = export.export(out, "canvas", column="Lesson 3 (12345)")
    assert (count, unmatched) == (2, ["bob"])
    assert rows(where)[0][-1] == "Lesson 3 (12345)"
    assert [row[0] for row in rows(where)[2:]] == ["Ann Ada", "Dan Du"]


@pytest.mark.parametrize(("args", "says"), [
    (["--format", "blackboard"], "unknown format 'blackboard'; formats: canvas, moodle, csv"),
    (["--format", "csv", "--to", "/proc/nowhere/x.csv"], "No such file"),
])
def test_bad_exports_are_one_line_errors(graded, capsys, args, says):
    out, _ = graded
    assert cli.main(["export", str(out), *args]) == cli.USAGE_ERROR
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and says in err


def test_a_folder_that_is_not_graded_is_refused(tmp_path, capsys):
    assert cli.main(["export", str(tmp_path), "--format", "csv"]) == cli.USAGE_ERROR
    assert "holds no results.json" in capsys.readouterr().err
