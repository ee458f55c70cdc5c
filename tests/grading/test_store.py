"""Nothing lost: results stored as each submission finishes, reused only when valid."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import feedback
from grader.grading.outputs import write_atomic
from grader.grading.store import Store, fingerprint, remove_leftovers
from grader.grading.submission import files_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "submissions"


def a_result(student: str = "eve") -> StudentResult:
    tests = [
        TestResult("sums", 1, 1, "passed", devices=[8]),
        TestResult("psum_traced", 0, 1, "failed", "no psum over axis 'data' was traced",
                   "The value is right, but no psum is traced.", [8], "6.0", "6.0", False),
    ]
    return StudentResult(student, {"nan_mean_var": ExerciseResult("nan_mean_var", tests)},
                         ["a.ipynb, cell 3 raised NameError: name 'x' is not defined"])


def put(store: Store, entry: Path, result: StudentResult) -> None:
    store.put(result.student, result, store.submission_print(entry))


def get(store: Store, student: str, entry: Path) -> StudentResult | None:
    return store.get(student, store.submission_print(entry))


def test_a_stored_result_reads_back_equal(tmp_path):
    """Does a result survive the store unchanged (points, statuses, messages, hints)?"""
    entry = tmp_path / "eve.py"
    entry.write_text("x = 1\n")
    store = Store(tmp_path / "out", "grader-v1")
    store.put("eve", a_result(), store.submission_print(entry))
    back = store.get("eve", store.submission_print(entry))
    assert back is not None and back.to_json() == a_result().to_json()


def test_a_stale_result_says_what_changed_and_is_still_read(tmp_path):
    """Is a result graded before, no longer valid, told apart by what changed: the files, a
    part of the grader, or an older store without parts?"""
    entry = tmp_path / "eve.py"
    entry.write_text("x = 1\n")
    parts = {"the hidden tests": "a", "JAX's version": "0.10.2"}
    put(Store(tmp_path / "out", "v1", parts), entry, a_result())
    store = Store(tmp_path / "out", "v2", {**parts, "the hidden tests": "b"})
    assert get(store, "eve", entry) is None
    why, old = store.stale("eve")
    assert why == "the hidden tests changed" and old.to_json() == a_result().to_json()
    entry.write_text("x = 2\n")
    store.submission_print(entry)
    assert store.stale("eve")[0] == "its files changed, the hidden tests changed"
    assert store.stale("nobody") is None  # never graded: no regrade
    (tmp_path / "out" / ".results" / "eve.json").write_text(
        json.dumps({"fingerprint": "x", "result": a_result().to_json()}))
    assert store.stale("eve")[0] == "an earlier version of the grader graded it"
    (tmp_path / "out" / ".results" / "eve.json").write_text("{ cut short")
    assert store.stale("eve") == ("its stored result could not be read", None)


def test_a_comment_in_the_graders_code_changes_no_fingerprint(tmp_path):
    """Editing a comment of a hidden test regraded the whole class (issue 34)."""
    code = tmp_path / "hidden.py"
    code.write_text("def case(fn):  # the first test\n    return fn(1)\n")
    before = fingerprint([code], as_code=True)
    code.write_text("def case(fn):  # a better comment\n\n    return fn(1)\n")
    assert fingerprint([code], as_code=True) == before
    assert fingerprint([code]) != before
    code.write_text("def case(fn):  # a better comment\n    return fn(2)\n")
    assert fingerprint([code], as_code=True) != before


def test_a_changed_submission_or_grader_is_not_reused(tmp_path):
    """Is a stored result ignored once the submission or the grader changed?"""
    entry = tmp_path / "eve.py"
    entry.write_text("x = 1\n")
    put(Store(tmp_path / "out", "grader-v1"), entry, a_result())
    assert get(Store(tmp_path / "out", "grader-v2"), "eve", entry) is None
    entry.write_text("x = 2\n")
    assert get(Store(tmp_path / "out", "grader-v1"), "eve", entry) is None


def test_fingerprints_never_follow_links_or_stop_at_unreadable_files(tmp_path):
    """Does a submission's fingerprint see where a link points but not what is there, and
    survive a file it cannot read?"""
    target = tmp_path / "target.py"
    target.write_text("x = 1\n")
    entry = tmp_path / "eve"
    entry.mkdir()
    (entry / "link.py").symlink_to(target)
    (entry / "loop.py").symlink_to(entry / "loop.py")
    before = fingerprint(files_of(entry))
    target.write_text("x = 2\n")
    assert fingerprint(files_of(entry)) == before
    (entry / "link.py").unlink()
    (entry / "link.py").symlink_to(tmp_path / "other.py")
    assert fingerprint(files_of(entry)) != before
    (entry / "secret.py").write_text("s = 1\n")
    (entry / "secret.py").chmod(0)
    assert len(fingerprint(files_of(entry))) == 64  # readable or not (root reads anyway)


def test_a_damaged_store_file_is_regraded_not_trusted(tmp_path):
    """Is a truncated or forged store file treated as missing?"""
    entry = tmp_path / "eve.py"
    entry.write_text("x = 1\n")
    store = Store(tmp_path / "out", "grader-v1")
    put(store, entry, a_result())
    path = tmp_path / "out" / ".results" / "eve.json"
    path.write_text(path.read_text()[:40])
    assert get(store, "eve", entry) is None
    path.write_text(json.dumps({"fingerprint": "0" * 64, "result": a_result().to_json()}))
    assert get(store, "eve", entry) is None


def test_settle_restores_entries_changed_behind_the_stores_back(tmp_path):
    """Are entries this store wrote or reused, then rewritten or deleted by someone else
    (a submission running without the sandbox), written again as they were, and intact
    entries and other students' files left alone?"""
    entries = {}
    for name in ("eve", "fay", "gus", "hal"):
        entries[name] = tmp_path / f"{name}.py"
        entries[name].write_text(f"x = '{name}'\n")
    put(Store(tmp_path / "out", "grader-v1"), entries["hal"], a_result("hal"))
    store = Store(tmp_path / "out", "grader-v1")
    assert get(store, "hal", entries["hal"]) is not None  # reused from an earlier run
    for name in ("eve", "fay", "gus"):
        put(store, entries[name], a_result(name))
    folder = tmp_path / "out" / ".results"
    originals = {p.name: p.read_text() for p in folder.iterdir()}
    forged = json.loads(originals["eve.json"])
    forged["result"]["exercises"]["nan_mean_var"]["tests"][1]["points"] = 1  # full marks
    (folder / "eve.json").write_text(json.dumps(forged))
    (folder / "fay.json").unlink()
    (folder / "hal.json").write_text("{}")
    (folder / "zed.json").write_text("not ours")

    assert sorted(store.settle()) == ["eve", "fay", "hal"]
    after = {p.name: p.read_text() for p in folder.iterdir()}
    assert after == {**originals, "zed.json": "not ours"}
    assert get(store, "eve", entries["eve"]).to_json() == a_result("eve").to_json()
    assert store.settle() == []


def test_a_submission_has_one_fingerprint_however_its_folder_is_spelled(tmp_path, monkeypatch):
    """Do `class`, `./class` and the absolute path give one fingerprint, so that running the
    command again from elsewhere reuses what was graded?"""
    (tmp_path / "class" / "eve").mkdir(parents=True)
    (tmp_path / "class" / "eve" / "lab.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    store = Store(tmp_path / "out", "grader-v1")
    prints = {store.submission_print(Path(spelled) / "eve")
              for spelled in ("class", "./class", str(tmp_path / "class"))}
    assert len(prints) == 1


def test_leftovers_of_killed_writes_are_removed_but_not_live_ones(tmp_path):
    """Are the temporary files of a process that no longer runs removed, and those of a
    running one (this test) and other files kept?"""
    dead = 2**22 + 7  # above the largest pid Linux allows: no such process
    (tmp_path / f".ann.json.{dead}.tmp").write_text("half")
    (tmp_path / f".bob.json.{os.getpid()}.tmp").write_text("being written")
    (tmp_path / "cid.json").write_text("{}")
    remove_leftovers(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".bob.json.{os.getpid()}.tmp",
                                                         "cid.json"]


def test_atomic_writes_leave_no_temporary_files(tmp_path):
    """Does an atomic write, of text or of bytes, leave exactly the target file behind?"""
    write_atomic(tmp_path / "a.json", "{}")
    write_atomic(tmp_path / "b.png", b"\x89PNG\x00")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.png"]
    assert (tmp_path / "b.png").read_bytes() == b"\x89PNG\x00"


def test_feedback_says_what_failed_why_and_the_hint():
    """Does the feedback show each failed test's reason, yours, expected and the hint?"""
    text = feedback.markdown(a_result())
    assert "**Total: 1 / 2 points**" in text
    assert "no psum over axis 'data' was traced" in text
    assert "yours: `6.0`" in text and "**Hint:** The value is right" in text
    assert "NameError" in text


def run_grader(out: Path, batch: Path, *extra: str) -> subprocess.Popen:
    """The grader on the examples' assignment (lesson 3's, all they hand in), in the
    background."""
    return subprocess.Popen(
        [sys.executable, "-m", "grader", "grade", str(batch), "--out", str(out), "--jobs", "2",
         "--assignment", "03_collectives", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


@pytest.mark.slow
def test_a_killed_batch_resumes_without_regrading_or_losing_anything(tmp_path):
    """Kill the grader once the first result is stored: does the next run finish the batch,
    reuse that result, and write each student exactly once?"""
    batch = tmp_path / "class"
    shutil.copytree(EXAMPLES, batch)
    out = tmp_path / "out"
    first = run_grader(out, batch)
    deadline = time.monotonic() + 300
    while not list((out / ".results").glob("*.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate()
    stored = {p.stem for p in (out / ".results").glob("*.json")}
    assert stored and stored != {"ada", "ben", "cy"}

    second = run_grader(out, batch)
    _, log = second.communicate(timeout=600)
    assert second.returncode == 0, log
    kept = {line.split()[1].rstrip(":") for line in log.splitlines() if line.startswith("kept")}
    assert kept == stored
    rows = (out / "gradebook.csv").read_text().splitlines()
    assert sorted(r.split(",")[0] for r in rows[1:]) == ["ada", "ben", "cy"]
    assert sorted(p.stem for p in (out / "feedback").glob("*.md")) == ["ada", "ben", "cy"]

    (batch / "ben.ipynb").write_text((batch / "ben.ipynb").read_text().replace("Ben", "Benn"))
    third = run_grader(out, batch)
    _, log = third.communicate(timeout=600)
    assert third.returncode == 0, log
    assert [line.split()[1] for line in log.splitlines() if line.startswith("graded")] == ["ben:"]
