"""`adjust`: an instructor's points by hand, with a comment, on top of the tests
(adjustments.csv): in the gradebook, the feedback, the summary and the LMS exports, kept by
every later grading into the folder, replaced when the file changes; a mistake in the file is a
one-line error and nothing is written."""

from __future__ import annotations

import csv
import json

import pytest
import stand_in

from grader import cli
from grader.grading import export, grade

HEADER = "student,exercise,points,comment\n"


@pytest.fixture
def graded(tmp_path, monkeypatch):
    """ann 4/4 and bob 1/4 on halo_difference (lesson 3 graded), with the stand-in."""
    stand_in.use(monkeypatch)
    folder = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1})
    out = tmp_path / "out"
    grade.grade(folder, out, jobs=1, work=grade.Work(_lesson3()))
    return folder, out


def _lesson3():
    from grader import assignments

    return assignments.find("03_collectives")


def gradebook(out):
    with (out / "gradebook.csv").open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def adjust(out, text, tmp_path, capsys):
    path = tmp_path / "mine.csv"
    path.write_text(HEADER + text)
    code = cli.main(["adjust", str(out), str(path)])
    return code, capsys.readouterr()


def test_an_adjustment_moves_the_points_and_the_student_reads_why(graded, tmp_path, capsys):
    """Do +2 for bob and -1 for ann reach the gradebook, the results, the feedback (with the
    comment, also on a passed exercise), the summary and the Moodle export?"""
    _, out = graded
    code, said = adjust(out, "bob,halo_difference,2,the edge case was right on paper\n"
                        "ann,halo_difference,-1,hard-coded the mesh shape\n", tmp_path, capsys)
    assert code == 0, said.err
    assert "2 adjustment(s) applied" in said.out
    book = gradebook(out)
    assert book["bob"]["halo_difference"] == "3" and book["ann"]["halo_difference"] == "3"
    stored = json.loads((out / "results.json").read_text())["students"]
    bob = stored["bob"]["exercises"]["halo_difference"]
    assert bob["points"] == 3 and bob["tests"][0]["points"] == 1
    assert bob["adjustments"] == [{"points": 2, "comment": "the edge case was right on paper"}]
    ann = stored["ann"]["exercises"]["halo_difference"]
    assert (ann["points"], ann["status"]) == (3, "partial")  # not the tests' green "passed"
    feedback = (out / "feedback" / "ann.md").read_text()
    assert "-1 point(s): hard-coded the mesh shape" in feedback
    assert "## `halo_difference`: partial (3 / 4)" in feedback
    assert "hard-coded the mesh shape" in (out / "feedback" / "ann.html").read_text()
    assert "adjustments (adjustments.csv) of 2 exercise(s) of 2 student(s)" in (
        out / "summary.md").read_text()
    done = export.export(out, "csv")
    where = done.where
    with where.open(newline="") as handle:
        points = {row["student"]: row["points"] for row in csv.DictReader(handle)}
    assert points == {"ann": "3", "bob": "3"}


def test_an_exercise_stays_between_zero_and_its_points(graded, tmp_path, capsys):
    _, out = graded
    code, said = adjust(out, "bob,halo_difference,-5,copied\nann,halo_difference,3,bonus\n",
                        tmp_path, capsys)
    assert code == 0, said.err
    book = gradebook(out)
    assert book["bob"]["halo_difference"] == "0" and book["ann"]["halo_difference"] == "4"
    stored = json.loads((out / "results.json").read_text())["students"]
    assert {n: stored[n]["exercises"]["halo_difference"]["status"] for n in stored} == {
        "ann": "passed", "bob": "failed"}


def test_regrading_keeps_the_adjustments_and_a_new_file_replaces_them(graded, tmp_path,
                                                                      capsys):
    """Does a later grade into the folder (bob's work changed, so graded again) apply the file
    again, and does adjust with another file drop what the first said?"""
    folder, out = graded
    adjust(out, "bob,halo_difference,2,partial credit by hand\n", tmp_path, capsys)
    (folder / "bob.py").write_text("2")
    grade.grade(folder, out, jobs=1, work=grade.Work(_lesson3()))
    assert gradebook(out)["bob"]["halo_difference"] == "4"
    assert (out / "adjustments.csv").read_text().endswith("partial credit by hand\n")
    code, said = adjust(out, "ann,halo_difference,-1,late notebook\n", tmp_path, capsys)
    assert code == 0, said.err
    book = gradebook(out)
    assert book["bob"]["halo_difference"] == "2" and book["ann"]["halo_difference"] == "3"
    assert "partial credit" not in (out / "feedback" / "bob.md").read_text()


@pytest.mark.parametrize("text, reason", [
    ("bob,halo_difference,two,x\n", ":2: points is 'two': a number"),
    ("bob,halo_difference,nan,x\n", ":2: points is 'nan': a number"),
    ("bob,halo_difference,1,\n", ":2: a row without a comment"),
    ("bob,,1,x\n", ":2: a row without a student or an exercise"),
    ("eve,halo_difference,1,x\n", ":2: no student 'eve' is graded here"),
    ("bob,ring_shift,1,x\n", ":2: 'ring_shift' is not an exercise graded here"),
    ("bob,halo_difference,1,x,extra\n", ":2: more cells than the header has columns"),
])
def test_a_mistake_in_the_file_is_one_line_and_nothing_is_written(graded, tmp_path, capsys,
                                                                 text, reason):
    _, out = graded
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    code, said = adjust(out, text, tmp_path, capsys)
    assert code == 2 and reason in said.err and said.err.count("\n") == 1
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


def test_a_wrong_header_and_a_missing_file_are_named(graded, tmp_path, capsys):
    _, out = graded
    path = tmp_path / "mine.csv"
    path.write_text("name,points\nbob,1\n")
    assert cli.main(["adjust", str(out), str(path)]) == 2
    assert "the header must be exactly: student,exercise,points,comment" in (
        capsys.readouterr().err)
    assert cli.main(["adjust", str(out)]) == 2
    assert "adjustments.csv does not exist" in capsys.readouterr().err


def test_grading_refuses_a_broken_file_before_grading(graded, capsys):
    """Does `grade` read OUT/adjustments.csv before it grades anyone, so that a typo costs no
    wait?"""
    folder, out = graded
    (out / "adjustments.csv").write_text(HEADER + "bob,halo_difference,lots,x\n")
    assert cli.main(["grade", str(folder), "--out", str(out)]) == 2
    assert "adjustments.csv:2: points is 'lots'" in capsys.readouterr().err


def test_merged_slices_keep_the_adjustments_each_was_written_with(tmp_path, monkeypatch,
                                                                   capsys):
    """Does a slice apply its file to its own students only, unwarned about the others, and a
    merge into a new folder (no file there) keep what each slice wrote?"""
    from grader.grading import merge
    from grader.grading.outputs import Shard

    stand_in.use(monkeypatch)
    folder = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1})
    slices = [tmp_path / "one", tmp_path / "two"]
    for k, out in enumerate(slices, start=1):
        out.mkdir()
        (out / "adjustments.csv").write_text(HEADER + "bob,halo_difference,2,by hand\n")
        grade.grade(folder, out, jobs=1, work=grade.Work(_lesson3()), shard=Shard(k, 2))
    assert "match no graded exercise" not in capsys.readouterr().err
    merge.merge(slices, tmp_path / "all")
    book = gradebook(tmp_path / "all")
    assert book["bob"]["halo_difference"] == "3" and book["ann"]["halo_difference"] == "4"
