"""Grading in slices (`grade --shard K/N`) and putting them together (`merge`).

Grading itself is replaced by a stand-in here (each submission's text is its points for
`halo_difference`): these tests are about which students each slice holds, what it records, and
what `merge` makes of the slices. tests/test_cli.py grades real slices end to end.
"""

from __future__ import annotations

import json
import random
import shutil
from dataclasses import asdict
from pathlib import Path

import pytest

from grader import assignments, cli
from grader.course import EXERCISES
from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import grade, outputs, submission
from grader.grading.outputs import Batch, Shard
from grader.grading.roster import Person
from grader.workers.sandbox import Limits

PREFIX = "python -m grader: error: "
# Names sort as Python sorts strings: capitals before lower case.
CLASS = {"ann": 4, "Bob": 0, "cid": 2, "dee": 4, "eve": 1, "fay": 0, "gus": 3}


def fake_result(entry: Path) -> StudentResult:
    """What the stand-in grader makes of a submission: its text is the points of halo_difference
    (out of 4); every other exercise is not found."""
    exercises = {e.name: ExerciseResult(e.name, [TestResult("t", 0, 1, "not found")])
                 for e in EXERCISES}
    points = float(entry.read_text())
    status = "passed" if points == 4 else "partial" if points else "failed"
    exercises["halo_difference"] = ExerciseResult("halo_difference",
                                                  [TestResult("t", points, 4, status)])
    return StudentResult(submission.student_name(entry), exercises)


@pytest.fixture
def fake_grading(monkeypatch):
    """grade.grade with the stand-in in place of the workers."""
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *args, **kwargs: fake_result(entry))


@pytest.fixture
def class_folder(tmp_path) -> Path:
    folder = tmp_path / "class"
    folder.mkdir()
    for name, points in CLASS.items():
        (folder / f"{name}.py").write_text(str(points))
    return folder


def files_in(out: Path) -> dict[str, bytes]:
    """Every file of an output folder but the resume store, by relative name."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and ".results" not in p.parts}


# --- slices -----------------------------------------------------------------------------------
@pytest.mark.parametrize("text, shard", [("1/1", Shard(1, 1)), ("2/3", Shard(2, 3)),
                                         (" 3 / 3 ", Shard(3, 3))])
def test_a_shard_is_read_from_k_slash_n(text, shard):
    """Is K/N read as the K-th of N slices?"""
    assert Shard.parse(text) == shard and str(shard) == text.replace(" ", "")


@pytest.mark.parametrize("text, reason", [
    ("2", "--shard takes K/N, two whole numbers such as 2/4, not '2'"),
    ("a/b", "--shard takes K/N, two whole numbers such as 2/4, not 'a/b'"),
    ("1/2/3", "--shard takes K/N, two whole numbers such as 2/4, not '1/2/3'"),
    ("0/2", "--shard 0/2: K must be between 1 and N"),
    ("3/2", "--shard 3/2: K must be between 1 and N"),
    ("1/0", "--shard 1/0: K must be between 1 and N"),
    ("-1/2", "--shard -1/2: K must be between 1 and N"),
])
def test_a_malformed_shard_says_why(text, reason):
    """Is anything but 1 <= K <= N refused with the reason?"""
    with pytest.raises(ValueError) as refused:
        Shard.parse(text)
    assert str(refused.value) == reason


def test_slices_are_round_robin_over_sorted_names_whatever_the_listing_order():
    """Does slice K hold the sorted names at places K, K + N, ..., the same for any order of
    the listing, every name in exactly one slice, sizes differing by one at most?"""
    names = list(CLASS)
    assert Shard(1, 3).select(names) == ["Bob", "dee", "gus"]
    assert Shard(2, 3).select(names) == ["ann", "eve"]
    assert Shard(3, 3).select(names) == ["cid", "fay"]
    for seed in range(5):
        shuffled = random.Random(seed).sample(names, len(names))
        assert [Shard(k, 3).select(shuffled) for k in (1, 2, 3)] == [
            Shard(k, 3).select(names) for k in (1, 2, 3)]
    assert Shard(5, 9).select(["ann", "bob"]) == []


def test_a_slice_grades_and_records_only_its_students(fake_grading, class_folder, tmp_path):
    """Does `grade --shard 2/3` grade the students of that slice only, and record the slice,
    the whole class and the grader in results.json?"""
    out = tmp_path / "slice"
    graded = grade.grade(class_folder, out, shard=Shard(2, 3))
    assert [r.student for r in graded] == ["ann", "eve"]
    report = json.loads((out / "results.json").read_text())
    assert report["shard"] == "2/3"
    assert report["class"] == sorted(CLASS)
    assert list(report["students"]) == ["ann", "eve"]
    assert len(report["grader"]) == 64
    assert report["limits"] == {"exercise": 60.0, "cell": 60.0, "start": 120.0,
                                "memory": 4 * 2**30, "run": 900.0}  # data, not a repr
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["ann", "eve"]
    assert sorted(p.name for p in (out / "feedback").iterdir()) == [
        "ann.html", "ann.md", "eve.html", "eve.md"]


def test_grading_in_slices_then_merging_equals_grading_in_one_go(
        fake_grading, class_folder, tmp_path):
    """Are the merged gradebook, results.json, feedback and summary byte for byte those of
    grading the whole class at once?"""
    whole = tmp_path / "whole"
    grade.grade(class_folder, whole)
    slices = [tmp_path / f"slice{k}" for k in (1, 2, 3)]
    for k, out in enumerate(slices, start=1):
        grade.grade(class_folder, out, shard=Shard(k, 3))
    merged = tmp_path / "merged"
    assert cli.main(["merge", *map(str, reversed(slices)), "--out", str(merged)]) == 0
    assert files_in(merged) == files_in(whole)
    assert sorted(files_in(whole)) == [
        *(f"feedback/{name}{suffix}" for name in sorted(CLASS) for suffix in (".html", ".md")),
        "gradebook.csv", "results.json", "similarity.html", "summary.md", "summary.png"]


def test_the_same_slice_given_twice_is_merged_once(fake_grading, class_folder, tmp_path):
    """Is a slice given twice (the same results) taken once, not refused?"""
    one = tmp_path / "one"
    grade.grade(class_folder, one, shard=Shard(1, 2))
    copy = tmp_path / "copy"
    shutil.copytree(one, copy)
    two = tmp_path / "two"
    grade.grade(class_folder, two, shard=Shard(2, 2))
    merged = tmp_path / "merged"
    assert cli.main(["merge", str(one), str(copy), str(two), "--out", str(merged)]) == 0
    assert sorted(json.loads((merged / "results.json").read_text())["students"]) == sorted(CLASS)


# --- malformed merges: one line each ------------------------------------------------------------
def fake_result_of(student: str, points: float) -> StudentResult:
    tests = [TestResult("t", points, 4, "passed" if points == 4 else "failed")]
    exercises = {e.name: ExerciseResult(e.name, [TestResult("t", 0, 1, "not found")])
                 for e in EXERCISES}
    exercises["halo_difference"] = ExerciseResult("halo_difference", tests)
    return StudentResult(student, exercises)


def write_slice(out: Path, k: int, n: int, points: dict[str, float], *, grader: str = "g" * 64,
                limits: dict | None = None,
                roster: tuple[str, ...] = ("ann", "bob", "cid")) -> Path:
    """An output folder as `grade --shard k/n` writes it, holding ``points``' students."""
    results = [fake_result_of(name, p) for name, p in points.items()]
    limits = asdict(Limits()) if limits is None else limits
    outputs.write(out, results, Batch(grader, limits, Shard(k, n), roster))
    return out


def refused(capsys, *args) -> str:
    """Run `merge`; it must fail with exit code 2 and exactly one line on stderr."""
    code = cli.main(["merge", *map(str, args)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX), err
    return lines[0][len(PREFIX):]


@pytest.fixture
def good(tmp_path) -> tuple[Path, Path]:
    """Two slices that make a whole: ann and cid in 1/2, bob in 2/2."""
    return (write_slice(tmp_path / "s1", 1, 2, {"ann": 4, "cid": 1}),
            write_slice(tmp_path / "s2", 2, 2, {"bob": 0}))


def test_the_good_slices_do_merge(capsys, good, tmp_path):
    """(The slices the refusals below start from are mergeable as they are.)"""
    assert cli.main(["merge", str(good[0]), str(good[1]), "--out", str(tmp_path / "m")]) == 0
    assert "ann" in capsys.readouterr().out


def test_a_missing_slice_is_named(capsys, good, tmp_path):
    """Are the missing slices named by K/N?"""
    three = [write_slice(tmp_path / f"t{k}", k, 4, {}) for k in (1, 3)]
    assert refused(capsys, good[0], "--out", tmp_path / "m") == (
        "slice(s) 2/2 missing: give the output folder of every slice")
    assert refused(capsys, *three, "--out", tmp_path / "m") == (
        "slice(s) 2/4, 4/4 missing: give the output folder of every slice")
    assert not (tmp_path / "m").exists()


def test_slices_of_different_splits_are_refused(capsys, good, tmp_path):
    """Is a slice of a K/3 split refused next to one of a K/2 split?"""
    other = write_slice(tmp_path / "o", 2, 3, {"bob": 0})
    assert refused(capsys, good[0], other, "--out", tmp_path / "m") == (
        f"{good[0]} is slice 1/2 but {other} is slice 2/3: every slice must come from one "
        "--shard K/N split, with the same N")


def test_slices_from_different_graders_are_refused(capsys, good, tmp_path):
    """Is a slice graded by another version of the grader or solutions refused?"""
    other = write_slice(tmp_path / "o", 2, 2, {"bob": 0}, grader="f" * 64)
    assert refused(capsys, good[0], other, "--out", tmp_path / "m") == (
        f"{good[0]} and {other} were graded by different versions of the grader, its tests, "
        "the solutions or JAX: grade every slice with the same course")


def test_slices_graded_with_different_limits_are_refused(capsys, good, tmp_path):
    """Is a slice graded with another --timeout or --memory refused?"""
    other = write_slice(tmp_path / "o", 2, 2, {"bob": 0}, limits=asdict(Limits(exercise=5)))
    assert refused(capsys, good[0], other, "--out", tmp_path / "m") == (
        f"{good[0]} and {other} were graded with different limits (exercise=60.0 and "
        "exercise=5)")


def test_slices_of_different_classes_are_refused(capsys, good, tmp_path):
    """Is a slice cut from a different submissions folder refused?"""
    other = write_slice(tmp_path / "o", 2, 2, {"bob": 0}, roster=("ann", "bob", "cid", "dan"))
    assert refused(capsys, good[0], other, "--out", tmp_path / "m") == (
        f"{good[0]} and {other} were cut from different classes (the submissions folder "
        "changed between them): grade every slice from the same folder")


def test_one_student_with_two_different_results_is_refused(capsys, good, tmp_path):
    """Is an overlap refused when the student's results differ, naming both folders?"""
    regraded = write_slice(tmp_path / "r", 1, 2, {"ann": 3, "cid": 1})
    assert refused(capsys, good[0], good[1], regraded, "--out", tmp_path / "m") == (
        f"ann has different results in {good[0]} and {regraded}")


def test_a_slice_missing_students_of_the_class_is_refused(capsys, good, tmp_path):
    """Are students of the class that no slice holds named?"""
    short = write_slice(tmp_path / "short", 1, 2, {"ann": 4})
    assert refused(capsys, short, good[1], "--out", tmp_path / "m") == (
        "no results for cid, who are in the class: was every slice graded to the end?")


def test_students_outside_the_class_are_refused(capsys, good, tmp_path):
    """Is a result for a student not in the recorded class refused?"""
    extra = write_slice(tmp_path / "x", 2, 2, {"bob": 0, "zed": 4})
    assert refused(capsys, good[0], extra, "--out", tmp_path / "m") == (
        "results for zed, who are not in the class the slices were cut from")


def test_a_folder_that_is_no_output_is_refused(capsys, good, tmp_path):
    """Are a missing folder, a file, and a folder without results.json refused by name?"""
    missing, empty, file = tmp_path / "missing", tmp_path / "empty", tmp_path / "file"
    empty.mkdir()
    file.write_text("")
    assert refused(capsys, missing, good[1], "--out", tmp_path / "m") == (
        f"{missing} is not a folder")
    assert refused(capsys, file, good[1], "--out", tmp_path / "m") == f"{file} is not a folder"
    assert refused(capsys, empty, good[1], "--out", tmp_path / "m") == (
        f"{empty} holds no results.json: it is not an output folder of `grade`")


@pytest.mark.parametrize("content, why", [
    ("{not json", "JSONDecodeError"),
    ("[" * 100_000, "RecursionError"),
    ("\xff", "JSONDecodeError"),
], ids=["invalid-json", "deeply-nested", "not-utf8"])
def test_a_damaged_results_file_is_refused(capsys, good, tmp_path, content, why):
    """Is a results.json that is not JSON refused with the file and the reason?"""
    path = good[0] / "results.json"
    path.write_bytes(content.encode("latin-1"))
    reason = refused(capsys, good[0], good[1], "--out", tmp_path / "m")
    assert reason.startswith(f"{path} cannot be read as the grader's results (")
    assert why in reason or "UnicodeDecodeError" in reason


@pytest.mark.parametrize("damage", ["no-shard", "bad-shard", "class-not-names",
                                    "students-not-a-dict", "test-with-unknown-field",
                                    "points-not-numbers", "limits-a-repr"])
def test_a_results_file_with_wrong_contents_is_refused(capsys, good, tmp_path, damage):
    """Is a results.json of the wrong shape refused in one line, never a traceback?"""
    path = good[0] / "results.json"
    data = json.loads(path.read_text())
    test = data["students"]["ann"]["exercises"]["halo_difference"]["tests"][0]
    if damage == "no-shard":
        del data["shard"]
    elif damage == "bad-shard":
        data["shard"] = "3/2"
    elif damage == "class-not-names":
        data["class"] = [1, 2]
    elif damage == "students-not-a-dict":
        data["students"] = ["ann"]
    elif damage == "test-with-unknown-field":
        test["surprise"] = True
    elif damage == "limits-a-repr":
        data["limits"] = "Limits()"
    else:
        test["points"] = "four"
    path.write_text(json.dumps(data))
    reason = refused(capsys, good[0], good[1], "--out", tmp_path / "m")
    if damage == "no-shard":
        assert reason == (f"{path} does not say which slice it holds (written by an older "
                          "grader?): grade it again")
    else:
        assert reason.startswith(f"{path} cannot be read as the grader's results (")


def test_merging_into_one_of_the_slices_is_refused(capsys, good):
    """Is --out pointing at one of the slices refused, leaving it untouched?"""
    before = files_in(good[0])
    assert refused(capsys, good[0], good[1], "--out", good[0]) == (
        f"--out {good[0]} is one of the slices: merge into another folder")
    assert files_in(good[0]) == before


def test_an_unwritable_out_is_refused(capsys, good, tmp_path):
    """Is an --out that cannot be a folder (a file is there) refused in one line?"""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    assert refused(capsys, *good, "--out", blocker).startswith(f"cannot write to {blocker}: ")


def test_merge_without_slices_or_out_is_a_usage_error(capsys, good):
    """Are `merge` without a slice, or without --out, one usage line with exit code 2?"""
    for args in (["merge", "--out", "x"], ["merge", str(good[0])]):
        with pytest.raises(SystemExit) as stopped:
            cli.main(args)
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and "error:" in err


def test_slices_graded_with_a_roster_merge_into_the_class_with_its_missing_students(
        fake_grading, class_folder, tmp_path):
    """Does each slice list who is on the roster but handed nothing in, and does the merge
    take them once, to equal the class graded in one go?"""
    people = {name: Person(name) for name in [*CLASS, "hal", "ivy"]}
    work = grade.Work(assignments.find("03_collectives"), people)
    whole = tmp_path / "whole"
    grade.grade(class_folder, whole, work=work)
    slices = [tmp_path / f"slice{k}" for k in (1, 2)]
    for k, out in enumerate(slices, start=1):
        grade.grade(class_folder, out, shard=Shard(k, 2), work=work)
        assert {"hal", "ivy"} <= set(json.loads((out / "results.json").read_text())["students"])
    assert cli.main(["merge", *map(str, slices), "--out", str(tmp_path / "m")]) == 0
    assert files_in(tmp_path / "m") == files_in(whole)


def test_slices_of_different_assignments_are_refused(fake_grading, class_folder, capsys,
                                                     tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    grade.grade(class_folder, one, shard=Shard(1, 2),
                work=grade.Work(assignments.find("03_collectives")))
    grade.grade(class_folder, two, shard=Shard(2, 2), work=grade.Work(assignments.find("04_prng")))
    assert refused(capsys, one, two, "--out", tmp_path / "m") == (
        f"{one} graded 03_collectives but {two} graded 04_prng: merge slices of one assignment")
