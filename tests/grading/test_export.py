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
        roster={"ann": Person("ann", "s1", "Ann Ada", "ann@example.org", lms_id="101"),
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
    """The roster's lms_id (Canvas's user id, which collect matched the download by) is
    Canvas's ID, its id the SIS User ID: Canvas matches a row by either."""
    out, results = graded
    done = export.export(out, "canvas")
    where, count, unmatched = done.where, done.count, done.unmatched
    assert where == out / "canvas.csv" and count == 3 and unmatched == []
    top = max(r.max_total for r in results.values())
    assert rows(where) == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "03_collectives"],
        ["Points Possible", "", "", "", "", f"{top:g}"],
        ["Ann Ada", "101", "s1", "", "", f"{4 * 0.8:g}"],
        ["Bob Bo", "", "s2", "", "", "1"],
        ["Dan Du", "", "s3", "", "", "0"]]


def test_moodle_gets_ids_emails_points_and_a_feedback_line(graded):
    out, results = graded
    done = export.export(out, "moodle")
    where = done.where
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
    done = export.export(out, "csv", tmp_path / "grades.csv")
    where = done.where
    table = rows(where)
    assert table[0] == ["student", "id", "display_name", "email", "assignment", "points",
                        "penalty", "total", "max", "standing", "submitted_at", "hand_in"]
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
    done = export.export(tmp_path / "out", "canvas")
    where, count, unmatched = done.where, done.count, done.unmatched
    assert rows(where)[0][-1] == "course" and len(rows(where)) == 2  # header, points possible
    assert (count, unmatched) == (0, ["ann"])
    assert cli.main(["export", str(tmp_path / "out"), "--format", "moodle"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["warning: left out, 1 student(s) with no id or email on the roster, which "
                   "moodle cannot match to its students (their points are in gradebook.csv: "
                   "add them to the roster and grade with --roster, or enter them in the "
                   "LMS): ann"]
    assert len(rows(tmp_path / "out" / "moodle.csv")) == 1
    done = export.export(tmp_path / "out", "csv")
    where, count, unmatched = done.where, done.count, done.unmatched
    assert rows(where)[1][:2] == ["ann", ""] and (count, unmatched) == (1, [])


def test_a_student_not_on_the_roster_is_named_and_the_column_can_be_named(graded, tmp_path):
    """Is a graded student missing from the roster left out as one Canvas cannot match, and
    does --column name the points column (a name Canvas does not know makes a new
    assignment)?"""
    out, _ = graded
    data = json.loads((out / "results.json").read_text())
    del data["roster"]["bob"]
    (out / "results.json").write_text(json.dumps(data))
    done = export.export(out, "canvas", column="Lesson 3 (12345)")
    where, count, unmatched = done.where, done.count, done.unmatched
    assert (count, unmatched) == (2, ["bob"])
    assert rows(where)[0][-1] == "Lesson 3 (12345)"
    assert [row[0] for row in rows(where)[2:]] == ["Ann Ada", "Dan Du"]


def test_an_empty_or_unreadable_hand_in_is_said_in_every_file_and_named(
        tmp_path, monkeypatch, capsys):
    """A hand-in with nothing to grade and one whose notebook cannot be read score 0, which is
    no answer: does the gradebook's hand_in column say so, the plain CSV too, Moodle's feedback
    column, and does export name them (Canvas's import has no column for it)?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4})
    (batch / "cid").mkdir()
    (batch / "eve").mkdir()
    (batch / "eve" / "03_collectives.ipynb").write_text("{not json")
    people = {n: Person(n, f"s{i}", email=f"{n}@example.org") for i, n in enumerate(
        ("ann", "cid", "dan", "eve"))}
    out = tmp_path / "out"
    grade.grade(batch, out, jobs=1, work=grade.Work(assignments.find("03_collectives"), people))
    with (out / "gradebook.csv").open(newline="") as handle:
        book = {row["student"]: row["hand_in"] for row in csv.DictReader(handle)}
    assert book == {"ann": "read", "cid": "empty", "dan": "missing", "eve": "unreadable"}
    plain = {row[0]: row[-1] for row in rows(export.export(out, "csv").where)[1:]}
    assert plain == book
    feedback = {row[0]: row[-1] for row in rows(export.export(out, "moodle").where)[1:]}
    assert feedback["cid"].endswith(": nothing to grade in what was handed in")
    assert feedback["eve"].startswith("0 / ") and "03_collectives.ipynb" in feedback["eve"]
    assert cli.main(["export", str(out), "--format", "canvas"]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: 2 student(s) whose hand-in was empty or could not be read, whose points are "
        "no answers (see their feedback): cid, eve"]


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
