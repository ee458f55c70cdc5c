"""grade() itself: a batch with stand-ins for the workers (the grading of real hostile
submissions is tests/grading/test_hostile_batch.py).

A failure of the grader on one entry costs only that entry; progress is reported; results are
stored, reused, and written again when tampered with; a result the grader could not finish is
shown but not kept.
"""

from __future__ import annotations

import csv
import json
import os
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import stand_in

from grader import assignments
from grader import messages as msg
from grader.assignments import LatePolicy
from grader.course import EXERCISES
from grader.framework import cases
from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import collect, grade, outputs, submission, texts
from grader.grading.progress import Progress
from grader.grading.roster import Person
from grader.workers import process
from grader.workers.run import Run
from grader.workers.sandbox import Limits

LIMITS = Limits(exercise=20, cell=20)


def test_a_grader_failure_on_one_entry_costs_only_that_entry(tmp_path, monkeypatch):
    """If the grader itself breaks on a submission, is that student told why, at 0 points,
    instead of the batch stopping?"""

    def broken_measure(*args, **kwargs):
        raise RuntimeError("simulated grader bug")

    monkeypatch.setattr(grade, "measure", broken_measure)
    entry = tmp_path / "dora.py"
    entry.write_text("def halo_difference(x):\n    return x\n")
    no_reference = {n: Run(n) for n in grade.device_counts(cases.load())}
    result = grade.grade_entry(entry, cases.load(), wants=no_reference, limits=LIMITS)
    assert result.student == "dora" and result.total == 0
    assert result.max_total == sum(c.points for c in cases.load())
    ring = result.exercises["halo_difference"]
    assert ring.status == "failed" and "simulated grader bug" in ring.message


# --- grade() itself, with a stand-in for the workers ---------------------------------------
def stand_in_result(entry: Path) -> StudentResult:
    """What the stand-in grader makes of a submission: its text is the points of halo_difference
    (out of 4); every other exercise is not found."""
    exercises = {e.name: ExerciseResult(e.name, [TestResult("t", 0, 1, "not found")])
                 for e in EXERCISES}
    points = float(entry.read_text())
    exercises["halo_difference"] = ExerciseResult(
        "halo_difference", [TestResult("t", points, 4, "passed" if points == 4 else "failed")])
    return StudentResult(submission.student_name(entry), exercises)


class Recorder(Progress):
    def __init__(self) -> None:
        self.events: list[tuple] = []

    def start(self, total):
        self.events.append(("start", total))

    def begin(self, student):
        self.events.append(("begin", student))

    def finish(self, result, reused):
        self.events.append(("finish", result.student, reused))


def test_grade_reports_progress_stores_each_result_and_undoes_tampering(
        tmp_path, monkeypatch, capsys):
    """Does grade() tell its progress (kept results first, then each student as it begins
    and finishes), and, when a stored result is rewritten while the batch runs, write it
    again from its own result with a warning? Is an old student's feedback removed?"""
    batch = tmp_path / "class"
    batch.mkdir()
    for name, points in {"ann": 4, "bob": 1, "cid": 0}.items():
        (batch / f"{name}.py").write_text(str(points))
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    grade.grade(batch, out, jobs=1)
    (out / "feedback" / "old-student.md").write_text("from another class")
    (out / "feedback" / "old-student.html").write_text("from another class")
    (batch / "cid.py").write_text("2")  # cid changed: graded again, ann and bob kept

    def tampering(entry, *args, **kwargs):  # what a submission could do without the sandbox
        stored = out / ".results" / "ann.json"
        data = json.loads(stored.read_text())
        data["result"]["exercises"]["halo_difference"]["tests"][0]["points"] = 99
        stored.write_text(json.dumps(data))
        return stand_in_result(entry)

    monkeypatch.setattr(grade, "grade_entry", tampering)
    shown = Recorder()
    results = grade.grade(batch, out, jobs=1, progress=shown)
    assert shown.events == [("start", 3), ("finish", "ann", True), ("finish", "bob", True),
                            ("begin", "cid"), ("finish", "cid", False)]
    assert [r.total for r in results] == [4, 1, 2]
    assert capsys.readouterr().err.splitlines() == [
        "warning: the stored results of ann changed while the batch was graded (by a "
        "submission running without the sandbox?); they were written again from the grader's "
        "own results"]
    stored = json.loads((out / ".results" / "ann.json").read_text())["result"]
    assert stored == results[0].to_json()
    assert sorted(p.name for p in (out / "feedback").iterdir()) == [
        f"{name}{suffix}" for name in ("ann", "bob", "cid") for suffix in (".html", ".md")]


def test_a_result_the_grader_could_not_finish_is_shown_but_not_kept(
        tmp_path, monkeypatch, capsys):
    """When the grader itself fails on a student (a worker that would not start), is the
    result in the gradebook with a warning, but not stored, so that the next run grades that
    student again while reusing the others?"""
    batch = tmp_path / "class"
    batch.mkdir()
    for name in ("ann", "bob"):
        (batch / f"{name}.py").write_text("4")
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def failing_for_bob(entry, *args, **kwargs):
        result = stand_in_result(entry)
        if result.student == "bob":
            result.unfinished = "the grader could not start a worker on 8 device(s): no memory"
        return result

    monkeypatch.setattr(grade, "grade_entry", failing_for_bob)
    grade.grade(batch, out, jobs=1)
    assert capsys.readouterr().err.splitlines() == [msg.WARN_NOT_KEPT.format(
        student="bob", why="the grader could not start a worker on 8 device(s): no memory")]
    assert sorted(p.name for p in (out / ".results").iterdir()) == ["ann.json"]
    assert "bob" in (out / "gradebook.csv").read_text()

    shown = Recorder()
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    grade.grade(batch, out, jobs=1, progress=shown)
    assert shown.events == [("start", 2), ("finish", "ann", True), ("begin", "bob"),
                            ("finish", "bob", False)]


def test_a_submission_changed_while_it_is_graded_is_graded_again(tmp_path, monkeypatch):
    """A file replaced while its student is graded: is the stored result tied to what was
    there when grading began, so that the next run grades the new file?"""
    batch = tmp_path / "class"
    batch.mkdir()
    (batch / "ann.py").write_text("1")
    out = tmp_path / "out"
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def replaced_meanwhile(entry, *args, **kwargs):
        result = stand_in_result(entry)
        entry.write_text("4")  # the student hands in again while the grader works
        return result

    monkeypatch.setattr(grade, "grade_entry", replaced_meanwhile)
    assert [r.total for r in grade.grade(batch, out, jobs=1)] == [1]
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    assert [r.total for r in grade.grade(batch, out, jobs=1)] == [4]


def test_a_batch_that_failed_does_not_stop_the_next_one(tmp_path, monkeypatch):
    """A batch that ends in an error stops every worker and lets none start; does the next
    batch in the same process let workers start again?"""
    batch = tmp_path / "class"
    batch.mkdir()
    (batch / "ann.py").write_text("4")
    monkeypatch.setattr(grade, "reference", lambda *args, **kwargs: {})

    def broken(entry, *args, **kwargs):
        raise RuntimeError("a bug in the grader")

    monkeypatch.setattr(grade, "grade_entry", broken)
    with pytest.raises(RuntimeError):
        grade.grade(batch, tmp_path / "out", jobs=1)
    assert process.stopping()
    monkeypatch.setattr(grade, "grade_entry", lambda entry, *a, **k: stand_in_result(entry))
    assert [r.total for r in grade.grade(batch, tmp_path / "out", jobs=1)] == [4]
    assert not process.stopping()


def test_a_free_place_goes_to_the_waiting_run_of_lowest_rank():
    """Do the batch's places go to the largest device count first, then to the earlier
    submission, whatever order the runs asked in?"""
    slots = grade.Slots(1)
    got: list[tuple[int, int]] = []

    def wait(rank):
        with slots.held(rank):
            got.append(rank)

    with slots.held((9, 9)):
        threads = []
        for rank in [(1, 0), (0, 1), (0, 0)]:  # asked in this order
            threads.append(threading.Thread(target=wait, args=(rank,)))
            threads[-1].start()
            while len(slots.waiting) < len(threads):
                time.sleep(0.01)
    for thread in threads:
        thread.join(10)
    assert got == [(0, 0), (0, 1), (1, 0)]


def test_a_batch_fills_every_place_and_no_more(tmp_path, monkeypatch):
    """With two places and two students, one quick and one slow on 8 devices: do the two
    students run side by side, and the slow student's shorter device counts run beside its
    8 devices once the quick one is done (the place it left is not idle), never three runs at
    once?"""
    batch = tmp_path / "class"
    batch.mkdir()
    for name in ("ann", "bob"):
        (batch / f"{name}.py").write_text("x = 1\n")
    counts = grade.device_counts(cases.load(hidden=True))
    assert len(counts) >= 2 and counts[0] == 8
    running: list[tuple[str, int]] = []
    beside: set[frozenset] = set()  # every set of runs seen at once
    lock = threading.Lock()
    ann_done = threading.Semaphore(0)

    def timed_run(sources, found, n, *args):
        student = "bob" if "bob" in sources[0].file else "ann"
        with lock:
            running.append((student, n))
            beside.add(frozenset(running))
        if student == "ann":
            time.sleep(0.5)
            ann_done.release()
        elif n == 8:  # the slow run lasts until the quick student is done, and a while
            for _ in counts:
                assert ann_done.acquire(timeout=60)
            time.sleep(1.0)
        with lock:
            running.remove((student, n))
        return Run(n, {c.id: {"ok": False, "not_run": "stand-in"} for c in found})

    monkeypatch.setattr(grade, "reference", lambda *a, **k: {n: Run(n) for n in counts})
    monkeypatch.setattr(grade, "run", timed_run)
    results = grade.grade(batch, tmp_path / "out", jobs=2)
    assert [r.student for r in results] == ["ann", "bob"]
    assert max(len(seen) for seen in beside) == 2
    assert any({s for s, _ in seen} == {"ann", "bob"} for seen in beside)
    assert {frozenset({("bob", n), ("bob", 8)}) for n in counts[1:]} <= beside


def test_a_split_keeps_each_exercise_whole_in_course_order_and_about_even():
    """Split in parts (the reference run's device counts, each part a worker), are an
    exercise's cases kept in one part, in their order, the parts about as large, and every
    case in exactly one?"""
    found = [c for c in cases.load(hidden=True) if 8 in c.device_counts]
    parts = grade.split(found, 3)
    assert len(parts) == 3
    assert sorted(c.id for part in parts for c in part) == sorted(c.id for c in found)
    homes = {c.exercise: i for i, part in enumerate(parts) for c in part}
    assert all(homes[c.exercise] == i for i, part in enumerate(parts) for c in part)
    place = {c.id: i for i, c in enumerate(found)}
    assert all([place[c.id] for c in part] == sorted(place[c.id] for c in part)
               for part in parts)
    largest = max(sum(1 for c in found if c.exercise == e) for e in homes)
    assert max(map(len, parts)) - min(map(len, parts)) <= largest
    assert grade.split(found, 1) == [found]
    one = [c for c in found if c.exercise == found[0].exercise]
    assert grade.split(one, 4) == [one]  # never an empty part


def test_runs_of_parts_join_into_one():
    """Do the runs of a device count's parts join into one run with every outcome and
    program, each problem once, and the first reason one was left unfinished?"""
    first = Run(8, {"a": {"ok": True}}, ["cell 1 raised"], programs={("a", (), "m"): "x"},
                kept=2, kept_bytes=10)
    second = Run(8, {"b": {"ok": False}}, ["cell 1 raised", "cell 2 raised"], "no worker",
                 programs={("b", (0,), "m"): "y"}, kept=3, kept_bytes=5)
    assert Run.joined([first, second]) == Run(
        8, {"a": {"ok": True}, "b": {"ok": False}}, ["cell 1 raised", "cell 2 raised"],
        "no worker", {("a", (), "m"): "x", ("b", (0,), "m"): "y"}, 5, 15)
    assert Run.joined([first]) == first


def test_a_submission_cannot_fill_its_feedback_with_problems():
    """Are a thousand failing cells (each could carry 80 characters of what its worker
    holds) listed as the first few and a count?"""
    runs = {8: Run(8, problems=[f"lab.ipynb, cell {i} raised ValueError: {i}"
                                for i in range(1000)])}
    result = grade.assemble("eve", [], runs, {})
    assert len(result.problems) == grade.MAX_PROBLEMS + 1
    assert result.problems[-1] == msg.MSG_MORE_PROBLEMS.format(count=1000 - grade.MAX_PROBLEMS)


# --- assignments, late work, the roster, regrading one student ----------------------------
COLLECTIVES = assignments.find("03_collectives")


def test_an_assignment_grades_and_reports_only_its_exercises(tmp_path, monkeypatch):
    """With an assignment, do the results, the gradebook, the feedback and the summary hold
    its exercises only, with its maximum, and does the store not mix it with the course?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 0})
    out = tmp_path / "out"
    results = grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES))
    wanted = list(COLLECTIVES.exercises)
    assert all(list(r.exercises) == wanted for r in results)
    report = json.loads((out / "results.json").read_text())
    assert report["assignment"] == "03_collectives" and report["exercises"] == wanted
    assert results[0].max_total == 4 + len(wanted) - 1  # halo_difference's 4, 1 for each other
    header = (out / "gradebook.csv").read_text().splitlines()[0].split(",")
    assert header == ["student", *wanted, *outputs.GRADEBOOK_TAIL]
    feedback_md = (out / "feedback" / "bob.md").read_text()
    assert "is_congruent" not in feedback_md and "`halo_difference`" in feedback_md
    assert f"out of {results[0].max_total:g}" in (out / "summary.md").read_text()
    # the whole course into the same folder is graded anew, not taken from the store
    whole = grade.grade(batch, out, jobs=1)
    assert list(whole[0].exercises) == [e.name for e in EXERCISES]


def test_late_work_costs_its_percentage_and_an_extension_moves_the_due_date(
        tmp_path, monkeypatch):
    """Against a due date with 10% a day (capped at 50%) and 15 minutes of grace: is a
    submission 2 days late docked 20% of its points, one in the grace period nothing, one a
    week late 50%, and one with a 3-day extension nothing? Are raw points, penalty and final
    points in the gradebook and the feedback?"""
    stand_in.use(monkeypatch)
    due = datetime(2027, 1, 29, 23, 59, tzinfo=UTC)
    work = grade.Work(
        replace(COLLECTIVES, due=due, late=LatePolicy(10, 15, 50)),
        roster={name: Person(name, extensions={"03_collectives": 3} if name == "eve" else {})
                for name in ("ann", "bob", "cid", "eve")},
        times={"ann": due + timedelta(days=1, hours=2), "bob": due + timedelta(minutes=10),
               "cid": due + timedelta(days=7), "eve": due + timedelta(days=2)})
    batch = stand_in.make_class(tmp_path / "class", dict.fromkeys(("ann", "bob", "cid", "eve"),
                                                                  4))
    results = {r.student: r for r in grade.grade(batch, tmp_path / "out", jobs=1, work=work)}
    assert {n: (r.late.days, r.penalty, r.final, r.standing) for n, r in results.items()} == {
        "ann": (2, 0.8, 3.2, "late"), "bob": (0, 0, 4, "on time"),
        "cid": (7, 2, 2, "late"), "eve": (0, 0, 4, "on time")}
    assert results["eve"].late.due == "2027-02-01T23:59:00+00:00"
    with (tmp_path / "out" / "gradebook.csv").open(newline="") as handle:
        rows = {row["student"]: row for row in csv.DictReader(handle)}
    assert (rows["ann"]["points"], rows["ann"]["days_late"], rows["ann"]["penalty"],
            rows["ann"]["total"], rows["ann"]["standing"]) == ("4", "2", "0.8", "3.2", "late")
    assert rows["ann"]["submitted_at"] == "2027-01-31T01:59:00+00:00"
    ann = (tmp_path / "out" / "feedback" / "ann.md").read_text()
    assert "Total: 3.2 / 14 points (4 earned, less 0.8 for handing in 2 day(s) late: 20%)" in ann


def test_without_times_a_submission_is_as_late_as_its_newest_file(tmp_path, monkeypatch):
    stand_in.use(monkeypatch)
    due = datetime(2027, 1, 29, 23, 59, tzinfo=UTC)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4},
                                when=(due + timedelta(hours=30)).timestamp())
    work = grade.Work(replace(COLLECTIVES, due=due, late=LatePolicy(10, 0, 100)))
    (ann,) = grade.grade(batch, tmp_path / "out", jobs=1, work=work)
    assert (ann.late.days, ann.final) == (2, 3.2)


def test_an_lms_late_mark_decides_lateness_and_the_files_times_never_do(tmp_path, monkeypatch):
    """In a folder collect wrote from Canvas, its late mark decides (a day at least for late
    work, none for work on time), whatever the files' times say; a time in the times file
    decides instead, and so do the files' times for a student whose due date the roster
    moves, which Canvas does not know."""
    stand_in.use(monkeypatch)
    due = datetime(2027, 1, 29, 23, 59, tzinfo=UTC)
    names = ("ann", "bob", "cid", "eve")
    batch = stand_in.make_class(tmp_path / "class", dict.fromkeys(names, 4),
                                when=(due - timedelta(days=3)).timestamp())
    for path in (batch / "bob").rglob("*"):
        os.utime(path, ((due + timedelta(hours=30)).timestamp(),) * 2)
    rows = [",".join(collect.MANIFEST_COLUMNS)] + [
        f"{name},canvas,{i},{name},{late},x.ipynb," for i, (name, late) in enumerate(
            {"ann": "yes", "bob": "no", "cid": "yes", "eve": "yes"}.items())]
    (batch / collect.MANIFEST).write_text("\n".join(rows) + "\n")
    work = grade.Work(replace(COLLECTIVES, due=due, late=LatePolicy(10, 0, 100)),
                      roster={n: Person(n, extensions={"": 1} if n == "eve" else {})
                              for n in names},
                      times={"cid": due - timedelta(hours=1)})
    out = tmp_path / "out"
    results = {r.student: r for r in grade.grade(batch, out, jobs=1, work=work)}
    assert {n: (r.late.days, r.late.said_by, r.final) for n, r in results.items()} == {
        "ann": (1, "Canvas", 3.6), "bob": (0, "Canvas", 4), "cid": (0, "", 4),
        "eve": (0, "", 4)}
    assert "late (Canvas marked it late)." in (out / "feedback" / "ann.md").read_text()


def test_the_roster_gives_the_missing_a_zero_and_names_who_is_not_on_it(
        tmp_path, monkeypatch, capsys):
    """Does a student on the roster with no submission get a row with 0 points, status
    missing and no feedback, left out of the summary's figures; and is a submission not on
    the roster graded and named in a warning?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "zed": 1})
    roster = {name: Person(name, id=f"s{i}") for i, name in enumerate(("ann", "dan"))}
    out = tmp_path / "out"
    results = grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES, roster))
    assert [(r.student, r.final, r.standing) for r in results] == [
        ("ann", 4, "on time"), ("dan", 0, "missing"), ("zed", 1, "on time")]
    # what the missing one did not hand in is worth what the grader's tests give it
    assert results[1].max_total == sum(c.points for c in cases.load()
                                       if c.exercise in COLLECTIVES.exercises)
    assert capsys.readouterr().err.splitlines() == [
        texts.WARN_NOT_ON_ROSTER.format(students="zed")]
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert rows[2].startswith("dan,") and rows[2].split(",")[-4:] == ["0", "missing", "", "missing"]
    assert sorted(p.name for p in (out / "feedback").iterdir()) == [
        "ann.html", "ann.md", "zed.html", "zed.md"]
    summary_text = (out / "summary.md").read_text()
    assert "2 student(s)" in summary_text and "1 on the roster handed nothing in" in summary_text
    report = json.loads((out / "results.json").read_text())
    assert report["roster"]["ann"]["id"] == "s0"
    assert report["students"]["dan"]["standing"] == "missing"


def test_regrading_one_student_keeps_the_others_and_rewrites_every_output(
        tmp_path, monkeypatch):
    """--student: is only that student graded again (even when unchanged), everyone else
    taken from results.json as it was, and the gradebook, feedback and summary rewritten?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1, "cid": 0})
    out = tmp_path / "out"
    grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES))
    (batch / "ann.py").write_text("0")  # changed, but not asked for: kept as graded
    (batch / "bob.py").write_text("3")
    shown = Recorder()
    results = grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES), only=["bob"],
                          progress=shown)
    assert shown.events == [("start", 1), ("begin", "bob"), ("finish", "bob", False)]
    assert [(r.student, r.total) for r in results] == [("ann", 4), ("bob", 3), ("cid", 0)]
    with (out / "gradebook.csv").open(newline="") as handle:
        assert [(row["student"], row["halo_difference"], row["total"])
                for row in csv.DictReader(handle)] == [("ann", "4", "4"), ("bob", "3", "3"),
                                                       ("cid", "0", "0")]
    assert "3 / 14" in (out / "feedback" / "bob.md").read_text()
    report = json.loads((out / "results.json").read_text())
    assert sorted(report["students"]) == ["ann", "bob", "cid"]
    assert report["students"]["ann"]["total"] == 4


@pytest.mark.parametrize(("only", "work", "says"), [
    (["nobody"], grade.Work(COLLECTIVES), "--student nobody: no such entry"),
    (["bob"], grade.Work(), "holds 03_collectives, not these exercises"),
])
def test_a_regrade_that_cannot_be_done_says_why(tmp_path, monkeypatch, only, work, says):
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1})
    with pytest.raises(grade.GradingError, match="holds no results.json: grade the class"):
        grade.grade(batch, tmp_path / "out", jobs=1, work=grade.Work(COLLECTIVES), only=["bob"])
    grade.grade(batch, tmp_path / "out", jobs=1, work=grade.Work(COLLECTIVES))
    with pytest.raises(grade.GradingError, match=says):
        grade.grade(batch, tmp_path / "out", jobs=1, work=work, only=only)


def test_regrading_with_another_grader_says_the_class_is_no_longer_graded_alike(
        tmp_path, monkeypatch, capsys):
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1})
    grade.grade(batch, tmp_path / "out", jobs=1)
    monkeypatch.setattr(grade, "grader_fingerprint", lambda *args: "f" * 64)
    capsys.readouterr()
    grade.grade(batch, tmp_path / "out", jobs=1, only=["bob"])
    assert capsys.readouterr().err.splitlines() == [
        texts.WARN_OTHER_GRADER.format(out=tmp_path / "out")]


def test_a_regrade_says_why_and_whose_points_changed(tmp_path, monkeypatch, capsys):
    """Graded again because a file changed, or the hidden tests, or --force: is each reason
    said with how many it applies to, and whose points changed, from what to what?"""
    stand_in.use(monkeypatch)
    batch = stand_in.make_class(tmp_path / "class", {"ann": 4, "bob": 1, "cid": 0})
    out = tmp_path / "out"
    grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES))
    assert "graded before" not in capsys.readouterr().out  # a first grading is no regrade
    (batch / "bob.py").write_text("3")
    grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES))
    said = capsys.readouterr().out
    assert f"grading again 1 student(s) graded before into {out}: its files changed (1)" in said
    assert "points changed for 1 of 1 student(s) graded again: bob 1 -> 3" in said

    real = grade.grader_parts
    monkeypatch.setattr(grade, "grader_parts", lambda *args: {
        **real(*args), "the hidden tests": "edited"})
    grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES))
    said = capsys.readouterr().out
    assert "grading again 3 student(s) graded before" in said
    assert "the hidden tests changed (3)" in said
    assert "points unchanged for the 3 student(s) graded again" in said
    grade.grade(batch, out, jobs=1, work=grade.Work(COLLECTIVES), force=True)
    assert ": --force (3)" in capsys.readouterr().out
