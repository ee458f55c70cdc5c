"""The reference run kept between batches (grader/grading/reference_cache.py): a later batch
of the same grader reads it instead of running the solutions again and grades the same; an
entry is read only where this user alone could have written it, a failed reference keeps
nothing, and another grader (or ``rerun_reference``) runs its own. That a submission can
neither write the kept compiled programs nor read the kept measurements is graded in the
hostile batch (plants-compiled-programs-for-the-class-all-correct,
reads-the-kept-reference-measurements-all-correct)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from markers import NEEDS_ROOT, NEEDS_THE_SANDBOX

from grader import assignments
from grader.grading import grade, texts
from grader.grading.reference_cache import KEEP, MEASURED, Reference
from grader.workers.run import Run


def measured() -> dict[int, Run]:
    """What a reference run measured, as the grader holds it."""
    return {n: Run(n, {"halo_difference:periodic": {"ok": True, "data": {"result": [n, 1.5]}}},
                   ["a problem"], programs={("halo_difference:periodic", ("result", 0),
                                             "bytes_sent"): f"blob{n}"})
            for n in (8, 2)}


@pytest.fixture
def folder():
    """A cache folder the workers' user can reach (pytest's own are private to its user)."""
    made = Path(tempfile.mkdtemp(prefix="grader-cache-test-"))
    made.chmod(0o755)
    yield made / "cache"
    for path in (made, *made.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(made)


def kept(folder: Path, entry: str = "grader-a") -> Path:
    """Run a stand-in reference into the cache, as a batch does, and keep it."""
    ref = Reference(folder, entry)
    assert ref.wants is None
    (ref.compiled / "sealed-program").write_bytes(b"compiled")  # as a reference worker writes
    (ref.tested / "sealed-program").write_bytes(b"tested")  # and a reference tester
    ref.keep(measured())
    ref.close()
    return folder / entry


def test_a_run_reads_back_as_it_was():
    """Does a measured run come back from the cache's JSON equal to what was measured?"""
    for run in measured().values():
        assert Run.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_the_next_batch_of_the_same_grader_reads_the_kept_reference(folder):
    """Is a kept reference read back whole, with its compiled programs where the workers will
    find them, and is what was kept read-only?"""
    entry = kept(folder)
    again = Reference(folder, "grader-a")
    assert again.wants == measured()
    assert (again.compiled, again.tested) == (entry / "compiled", entry / "tested")
    assert (again.compiled / "sealed-program").read_bytes() == b"compiled"
    assert (again.tested / "sealed-program").read_bytes() == b"tested"
    for path in (entry, entry / MEASURED, *entry.glob("*/"), *entry.glob("*/*")):
        assert not path.stat().st_mode & 0o222, path
    again.close()
    assert Reference(folder, "grader-a").wants == measured()  # reading removed nothing


def test_another_grader_or_a_rerun_runs_its_own_reference(folder):
    """Does a grader with another key, or a batch asked to rerun the reference, get no
    measurements and a folder of its own to write?"""
    entry = kept(folder)
    for ref in (Reference(folder, "grader-b"), Reference(folder, "grader-a", rerun=True)):
        assert ref.wants is None
        assert not ref.compiled.is_relative_to(entry) and os.access(ref.compiled, os.W_OK)
        assert not ref.tested.is_relative_to(entry) and os.access(ref.tested, os.W_OK)
        ref.close()
    assert sorted(p.name for p in folder.iterdir()) == ["grader-a"]  # nothing else left


def test_a_rerun_replaces_the_kept_reference(folder):
    """Is the reference a batch was asked to run again kept in place of the earlier one?"""
    kept(folder)
    ref = Reference(folder, "grader-a", rerun=True)
    again = {8: Run(8, {"halo_difference:periodic": {"ok": True, "data": {"result": [0]}}})}
    ref.keep(again)
    ref.close()
    assert Reference(folder, "grader-a").wants == again


@pytest.mark.parametrize("opened", [".", MEASURED, "compiled", "compiled/sealed-program",
                                    "tested", "tested/sealed-program"])
def test_an_entry_someone_else_could_write_is_passed_over(folder, opened):
    """An entry, its measurements, a folder of its compiled programs or one of them writable
    by others: is the entry ignored (the batch runs its reference) rather than trusted?"""
    entry = kept(folder)
    path = entry / opened
    path.chmod(path.stat().st_mode | 0o022)
    assert Reference(folder, "grader-a").wants is None


def test_damaged_measurements_are_passed_over(folder):
    """A reference.json that is not the measurements: is it a miss, never an error?"""
    entry = kept(folder)
    entry.chmod(0o755)
    (entry / MEASURED).chmod(0o644)
    (entry / MEASURED).write_text('{"8": {"devices": 8}}')
    assert Reference(folder, "grader-a").wants is None


def test_a_reference_that_did_not_finish_keeps_nothing(folder):
    """A reference run that failed or was interrupted (closed without keep): is nothing left,
    neither an entry nor its half-written folder?"""
    ref = Reference(folder, "grader-a")
    (ref.compiled / "sealed-program").write_bytes(b"compiled")
    ref.close()
    assert list(folder.iterdir()) == []
    assert Reference(folder, "grader-a").wants is None


def test_two_batches_building_the_same_entry_keep_the_first(folder):
    """Two batches of one grader that both ran the reference: is the first kept and the
    second's folder removed, with nothing half-made?"""
    first, second = Reference(folder, "grader-a"), Reference(folder, "grader-a")
    first.keep(measured())
    second.keep({8: Run(8)})
    for ref in (first, second):
        ref.close()
    assert sorted(p.name for p in folder.iterdir()) == ["grader-a"]
    assert Reference(folder, "grader-a").wants == measured()


def test_only_the_newest_entries_are_kept(folder):
    """Does the cache keep the newest KEEP graders' references and remove the older?"""
    for number in range(KEEP + 2):
        entry = kept(folder, f"grader-{number}")
        os.utime(entry, (number, number))  # made in this order
    kept(folder, "grader-newest")
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted(["grader-newest", *(f"grader-{n}" for n in range(3, KEEP + 2))])


@NEEDS_ROOT
def test_a_folder_the_workers_cannot_reach_keeps_nothing(tmp_path):
    """As root, the workers run as another user: a cache in a private folder (pytest's) is
    not used, and the batch's compiled programs go to a folder of its own, removed after."""
    ref = Reference(tmp_path / "cache", "grader-a")
    assert ref.folder is None and ref.wants is None
    assert ref.refused == texts.CACHE_UNREACHABLE
    assert not ref.compiled.is_relative_to(tmp_path)
    ref.keep(measured())
    ref.close()
    assert not ref.compiled.exists() and not ref.tested.exists()


def test_a_folder_that_cannot_hold_the_cache_is_refused_with_its_reason(folder, tmp_path):
    """A cache folder another user may write, or one that cannot be made, keeps nothing and
    says why; a folder of one's own is used and says nothing."""
    ours = Reference(folder, "grader-a")
    assert ours.refused is None
    ours.close()
    folder.chmod(0o777)
    ref = Reference(folder, "grader-a")
    assert (ref.folder, ref.refused) == (None, texts.CACHE_NOT_OURS)
    ref.keep(measured())
    ref.close()
    assert list(folder.iterdir()) == []
    (tmp_path / "a-file").write_text("")
    unmade = Reference(tmp_path / "a-file" / "cache", "grader-a")
    assert unmade.refused == texts.CACHE_NOT_MADE.format(why="Not a directory")
    unmade.close()


@NEEDS_THE_SANDBOX
def test_a_batch_that_keeps_nothing_says_so(tmp_path, monkeypatch, capsys):
    """The instructor is told, in one line naming the folder and the reason, that every
    batch will run its reference again."""
    cache = tmp_path / "shared"
    cache.mkdir()
    cache.chmod(0o777)
    batch = tmp_path / "batch"
    (batch / "ada").mkdir(parents=True)
    shutil.copy(Path(grade.SOLUTIONS) / "01_sharding.ipynb", batch / "ada")

    class Graded(Exception):
        pass

    def graded(*args, **kwargs):
        raise Graded

    monkeypatch.setattr(grade, "_grade_all", graded)
    with pytest.raises(Graded):
        grade.grade(batch, tmp_path / "out", work=grade.Work(assignments.find("01_sharding")),
                    cache=cache)
    said = capsys.readouterr().err
    assert texts.WARN_REFERENCE_NOT_KEPT.format(folder=cache, why=texts.CACHE_NOT_OURS) in said


@NEEDS_THE_SANDBOX
def test_a_second_batch_grades_the_same_without_running_the_reference(folder, tmp_path,
                                                                       monkeypatch):
    """Graded twice into two output folders, with real workers: does the second batch run no
    reference, its workers reading the kept compiled programs read-only, and give the same
    results; and does rerun_reference run it again?"""
    batch = tmp_path / "batch"
    (batch / "ada").mkdir(parents=True)
    shutil.copy(Path(grade.SOLUTIONS) / "01_sharding.ipynb", batch / "ada")
    work = grade.Work(assignments.find("01_sharding"))
    first = grade.grade(batch, tmp_path / "first", jobs=2, work=work, cache=folder)
    assert [p.name for p in folder.iterdir() if not p.name.startswith(".")]

    ran = []

    def reference(*args, **kwargs):
        ran.append(args)
        return real(*args, **kwargs)

    real = grade.reference
    monkeypatch.setattr(grade, "reference", reference)
    second = grade.grade(batch, tmp_path / "second", jobs=2, work=work, cache=folder)
    assert ran == []
    assert [r.to_json() for r in second] == [r.to_json() for r in first]
    assert first[0].total == first[0].max_total
    grade.grade(batch, tmp_path / "third", jobs=2, work=work, cache=folder,
                rerun_reference=True)
    assert len(ran) == 1
