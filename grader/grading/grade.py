"""Grading a folder of submissions against every test, public and hidden.

For each device count the tests need, the reference solutions run once in a worker to give
the expected measurements; each submission then runs in workers of its own, and the trusted
judges compare. Each result is stored as it is known (:mod:`grader.grading.store`); at the end
the output folder is written from all of them (:mod:`grader.grading.outputs`, its one owner).

A class too large for one machine is graded in slices (:class:`~grader.grading.outputs.Shard`),
each into its own output folder, and :mod:`grader.grading.merge` puts the slices together:
``results.json`` records which slice of which class it holds and which grader produced it.
"""

from __future__ import annotations

import heapq
import os
import sys
import threading
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path

from grader import messages as msg
from grader.assignments import Assignment, whole_course
from grader.course import EXERCISES, SOLUTIONS
from grader.framework import cases as case_registry
from grader.framework.cases import Case
from grader.framework.results import ExerciseResult, StudentResult
from grader.grading import (
    collect,
    outputs,
    reference_cache,
    roster,
    safe,
    similarity,
    submission,
    texts,
)
from grader.grading.outputs import STORE, Batch, Shard, write
from grader.grading.progress import Progress
from grader.grading.roster import Person
from grader.grading.store import (
    Store,
    combined,
    grader_fingerprint,
    grader_parts,
    remove_leftovers,
)
from grader.workers import process
from grader.workers.pool import close_all
from grader.workers.run import Run
from grader.workers.runner import run
from grader.workers.sandbox import DEFAULT_LIMITS, DEFAULT_SANDBOX, Limits, Sandbox

#: Problems listed per student at most: a submission cannot turn its feedback into a copy of
#: what its worker holds (each problem is cut to a few hundred characters too).
MAX_PROBLEMS = 20


def default_jobs() -> int:
    """Runs at once by default (each one submission on one device count): the cores this
    process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class GradingError(Exception):
    """The batch cannot be graded (for example, the reference solutions fail)."""


def device_counts(cases: Sequence[Case]) -> list[int]:
    """Every device count some case runs on, largest first."""
    return sorted({n for c in cases for n in c.device_counts}, reverse=True)


class Slots:
    """Places for at most ``count`` runs at once (a run: one submission on one device count),
    shared by the submissions in flight. A free place goes to the waiting run of lowest rank
    (the place of its device count, then of its submission): the largest device counts first,
    as they take longest, so that a batch ends with short runs side by side rather than with
    one long run alone, and earlier submissions first among equals."""

    def __init__(self, count: int) -> None:
        self.free = count
        self.waiting: list[tuple[int, int]] = []
        self.changed = threading.Condition()

    @contextmanager
    def held(self, rank: tuple[int, int]) -> Iterator[None]:
        """Wait for a place for the run of ``rank`` (unique among the waiting), and hold it."""
        with self.changed:
            heapq.heappush(self.waiting, rank)
            self.changed.wait_for(lambda: self.free > 0 and self.waiting[0] == rank)
            heapq.heappop(self.waiting)
            self.free -= 1
            self.changed.notify_all()
        try:
            yield
        finally:
            with self.changed:
                self.free += 1
                self.changed.notify_all()


def measure(sources, cases: Sequence[Case], limits: Limits,
            sandbox: Sandbox = DEFAULT_SANDBOX, jobs: int = 1,
            wants: dict[int, Run] | None = None, slots: Slots | None = None,
            order: int = 0, parts: int = 1) -> dict[int, Run]:
    """Run ``sources`` on every device count the cases need, ``jobs`` runs at once, or each
    as ``slots`` gives it a place (the submission's place in the batch: ``order``); the
    programs they hand in are checked against the reference runs ``wants``, if given.
    ``parts``: each device count's cases are split, by exercise, into as many runs, each in
    a worker of its own: every place kept busy where a few long runs would leave some idle,
    at the cost of a worker start and of running the code again for each part."""
    counts = device_counts(cases)
    units = [(n, part) for n in counts
             for part in split([c for c in cases if n in c.device_counts], parts)]

    def on(i: int) -> Run:
        n, part = units[i]
        return run(sources, part, n, limits, sandbox, (wants or {}).get(n))

    def placed(i: int) -> Run:
        with slots.held((i, order)):
            return on(i)

    threads = jobs if slots is None else len(units)  # with slots, each waits for its place
    with ThreadPoolExecutor(max(1, min(threads, len(units)))) as pool:
        done = list(pool.map(on if slots is None else placed, range(len(units))))
    return {n: Run.joined([r for (m, _), r in zip(units, done, strict=True) if m == n])
            for n in counts}


def split(cases: Sequence[Case], parts: int) -> list[list[Case]]:
    """``cases`` dealt, an exercise's all together, into at most ``parts`` lists of about as
    many cases each (the most first), each in course order."""
    by_exercise: dict[str, list[Case]] = {}
    for c in cases:
        by_exercise.setdefault(c.exercise, []).append(c)
    dealt: list[list[Case]] = [[] for _ in range(max(1, min(parts, len(by_exercise))))]
    for group in sorted(by_exercise.values(), key=len, reverse=True):
        min(dealt, key=len).extend(group)
    place = {c.id: i for i, c in enumerate(cases)}
    return sorted((sorted(part, key=lambda c: place[c.id]) for part in dealt), key=len,
                  reverse=True)


def reference(solutions: Path, cases: Sequence[Case], limits: Limits,
              sandbox: Sandbox = DEFAULT_SANDBOX, jobs: int = 1) -> dict[int, Run]:
    """The reference solutions' measurements, ``jobs`` runs at once (nothing else
    runs yet); fails loudly if any test fails on them."""
    if not solutions.is_dir():
        raise GradingError(texts.NO_SOLUTIONS.format(solutions=solutions))
    loaded = submission.load(solutions)
    if loaded.problems or not loaded.sources:
        raise GradingError(texts.SOLUTIONS_UNREADABLE.format(
            problems=loaded.problems or "empty"))
    # Nothing else runs yet: each device count split in ``jobs`` runs keeps every place busy
    # (the largest alone would leave all but one idle for half the time).
    runs = measure(loaded.sources, cases, limits, sandbox, jobs, parts=jobs)
    for n, result in runs.items():
        for case_id, outcome in result.outcomes.items():
            if not outcome.get("ok"):
                raise GradingError(texts.SOLUTION_FAILS.format(
                    case=case_id, devices=n, outcome=outcome, problems=result.problems))
    return runs


def assemble(student: str, cases: Sequence[Case], runs: dict[int, Run],
             wants: dict[int, Run], problems: Sequence[str] = ()) -> StudentResult:
    """Judge every case from the student's and the reference's measurements: a result for
    every exercise some case tests, in course order."""
    tested = {c.exercise for c in cases}
    exercises = {e.name: ExerciseResult(e.name, []) for e in EXERCISES if e.name in tested}
    outcomes = {c.id: {n: runs[n].outcomes[c.id] for n in c.device_counts} for c in cases}
    expected = {c.id: {n: wants[n].outcomes.get(c.id) for n in c.device_counts} for c in cases}
    for c, decided in zip(cases, case_registry.decide_all(cases, outcomes, expected,
                                                               brief=True),
                          strict=True):
        exercises[c.exercise].tests.append(decided)
    notes = list(problems) + [p for n in sorted(runs, reverse=True) for p in runs[n].problems]
    notes = list(dict.fromkeys(notes))
    if len(notes) > MAX_PROBLEMS:  # feedback is no channel for what a worker holds
        notes = notes[:MAX_PROBLEMS] + [msg.MSG_MORE_PROBLEMS.format(count=len(notes) -
                                                                      MAX_PROBLEMS)]
    unfinished = next((r.unfinished for r in runs.values() if r.unfinished), None)
    return StudentResult(student, exercises, notes, unfinished,
                         unreadable=list(problems)[:MAX_PROBLEMS])


def grade_entry(entry: Path, cases: Sequence[Case], wants: dict[int, Run],
                limits: Limits, sandbox: Sandbox = DEFAULT_SANDBOX,
                jobs: int = 1, slots: Slots | None = None, order: int = 0) -> StudentResult:
    """Grade one student (``jobs`` device counts at once, or as ``slots`` gives each a place:
    see :func:`measure`). Should the grader itself fail on this entry, the student gets an
    error for every test with the reason, and the rest of the batch goes on."""
    try:
        loaded = submission.load(entry)
        runs = measure(loaded.sources, cases, limits, sandbox, jobs, wants, slots, order)
        return assemble(loaded.student, cases, runs, wants, loaded.problems)
    except process.Stopped:
        raise
    except Exception as exc:  # noqa: BLE001 - one entry must never stop the batch
        traceback.print_exc()
        text = msg.MSG_GRADER_FAILED.format(error=repr(exc)[:300])
        why = {"ok": False, "not_run": text}
        runs = {n: Run(n, {c.id: why for c in cases}, unfinished=text)
                for n in device_counts(cases)}
        return assemble(submission.student_name(entry), cases, runs, wants)


@dataclass(frozen=True)
class Work:
    """What is graded and against what: the assignment (default: the whole course, no due
    date), the roster (None: no roster; every entry of the folder is a student), and when
    each submission came in (a student missing here: the newest change of its files)."""

    assignment: Assignment = field(default_factory=whole_course)
    roster: dict[str, Person] | None = None
    times: dict[str, datetime] = field(default_factory=dict)


def grade(
    submissions: Path,
    out: Path,
    *,
    jobs: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
    use_sandbox: bool = True,
    solutions: Path = SOLUTIONS,
    force: bool = False,
    shard: Shard = Shard(),
    progress: Progress | None = None,
    work: Work = Work(),
    only: Sequence[str] = (),
    cache: Path | None = None,
    rerun_reference: bool = False,
) -> list[StudentResult]:
    """Grade every entry of ``submissions`` (or the slice ``shard`` of them), ``jobs`` at a
    time (default: :func:`default_jobs`), on the exercises of ``work.assignment``, and write
    the outputs to ``out`` (with the instructor's ``out/adjustments.csv``); returns every
    student's result as written, in name order, those on the roster who handed in nothing
    included.

    Each result is stored as soon as it is known; a result stored by an earlier run of the
    same grader on the same submission is reused unless ``force``. ``only``: regrade just
    these students into ``out``, whose results.json gives everyone else's. ``progress`` hears
    of every student as it starts and as it is done or reused. ``cache``: the folder where
    the reference run is kept for later batches (:mod:`grader.grading.reference_cache`; none
    by default), and read unless ``rerun_reference``.
    """
    progress = progress or Progress()
    process.allow_workers()  # this process may have stopped an earlier batch
    by_name: dict[str, Path] = {}
    clashes = set()
    for entry in submission.discover(submissions):
        name = submission.student_name(entry)
        if name in by_name:
            clashes.add(name)
        by_name[name] = entry
    if clashes:
        raise GradingError(texts.SAME_STUDENT.format(students=", ".join(sorted(clashes))))
    cases = [c for c in case_registry.load(hidden=True)
             if c.exercise in work.assignment.exercises]
    tested = {c.exercise for c in cases}  # every exercise has some (validate checks it)
    exercises = tuple(name for name in work.assignment.exercises if name in tested)
    version = grader_fingerprint(solutions, "")
    others = _others(out, exercises, only, by_name, version) if only else {}
    chosen = [by_name[name] for name in (sorted(set(only)) or shard.select(by_name))]
    people = {name: person.to_json() for name, person in (work.roster or {}).items()}
    batch = Batch(version, asdict(limits), shard, tuple(sorted(by_name)),
                  work.assignment.name, exercises, people)
    parts = grader_parts(solutions, f"{limits!r} {' '.join(exercises)}")
    kept = Store(out, combined(parts), parts)
    for folder in (out, out / STORE, out / outputs.FEEDBACK):
        remove_leftovers(folder)
    progress.start(len(chosen))
    results: dict[Path, StudentResult] = {}
    # Each submission's fingerprint is taken before it is graded: a file changed meanwhile
    # then fails to match next time, and that submission is graded again.
    prints = {entry: kept.submission_print(entry) for entry in chosen}
    for entry in chosen:
        stored = None if force or only else kept.get(submission.student_name(entry),
                                                     prints[entry])
        if stored is not None:
            results[entry] = stored
            progress.finish(stored, True)
    todo = [e for e in chosen if e not in results]
    before = _why_again(todo, kept, out, texts.STALE_FORCED if force
                        else texts.STALE_ASKED if only else None)
    if todo:
        hidden = private_paths(submissions, out, solutions) + ((cache,) if cache else ())
        sandbox = Sandbox(hidden, use_bwrap=use_sandbox)
        refused = sandbox.problem()  # without the sandbox only on purpose (--no-sandbox)
        if refused:
            raise GradingError(refused)
        jobs = max(1, jobs or default_jobs())
        # The reference run compiles each of its programs once (see grader.workers.compiled):
        # it alone writes them, every submission's worker reads them; it is kept for later
        # batches of the same grader (grader.grading.reference_cache).
        ref = reference_cache.Reference(cache if sandbox.sandboxed else None,
                                        reference_cache.key(combined(parts)), rerun_reference)
        if ref.refused:
            print(texts.WARN_REFERENCE_NOT_KEPT.format(folder=safe.line(cache), why=ref.refused),
                  file=sys.stderr)
        try:
            results |= _grade_all(todo, cases, limits, sandbox, jobs, solutions, kept, prints,
                                  progress, ref)
        finally:
            ref.close()
    restored = kept.settle()
    if restored:
        print(texts.WARN_STORE_CHANGED.format(students=", ".join(sorted(restored))),
              file=sys.stderr)
    _changed(before, results)
    graded = {results[e].student: results[e] for e in chosen} | others
    everyone = standings(graded, by_name, work, collect.said_late(submissions))
    everyone, unmatched = write(out, everyone, batch, alike(by_name, exercises, solutions))
    if unmatched and shard.count == 1:  # a slice's file names the other slices' students too
        print(texts.WARN_ADJUST_UNMATCHED.format(rows="; ".join(unmatched)), file=sys.stderr)
    return everyone


def _why_again(todo: Sequence[Path], kept: Store, out: Path, asked: str | None
               ) -> dict[Path, StudentResult | None]:
    """Say why the students of ``todo`` graded before into ``out`` are graded again (one line,
    each reason with how many it applies to; ``asked``, the option that asked for it, if one
    did); their earlier results, by entry."""
    why: Counter[str] = Counter()
    before = {}
    for entry in todo:
        stale = kept.stale(submission.student_name(entry))
        if stale is not None:
            reason, before[entry] = stale
            why[asked or reason] += 1
    if why:
        print(texts.REGRADING.format(count=sum(why.values()), out=out, why="; ".join(
            f"{reason} ({count})" for reason, count in why.most_common())))
    return before


def _changed(before: dict[Path, StudentResult | None], results: dict[Path, StudentResult]
             ) -> None:
    """Say whose points the regrade changed, from what to what (before any late penalty)."""
    if not before:
        return
    changes = [f"{safe.line(results[e].student)} {old.total:g} -> {results[e].total:g}"
               for e, old in sorted(before.items()) if e in results
               and (old is None or old.total != results[e].total)]
    print(texts.REGRADED_CHANGED.format(count=len(changes), regraded=len(before),
                                        changes=", ".join(changes))
          if changes else texts.REGRADED_SAME.format(regraded=len(before)))


def _grade_all(todo: Sequence[Path], cases: Sequence[Case], limits: Limits, sandbox: Sandbox,
               jobs: int, solutions: Path, kept: Store, prints: dict, progress: Progress,
               ref: reference_cache.Reference) -> dict[Path, StudentResult]:
    """Run the reference unless an earlier batch kept it (``ref``), then grade every
    submission of ``todo``, ``jobs`` at a time, each result stored as it is known; the
    results by submission. The reference run alone writes the compiled programs
    (``ref.compiled`` and ``ref.tested``, see grader.workers.compiled)."""
    wants = ref.wants
    if wants is None:
        wants = reference(solutions, cases, limits, replace(
            sandbox, compiled=ref.compiled, tested=ref.tested, writes_compiled=True), jobs)
        close_all()  # its testers and verifiers, which may write the compiled programs
        ref.keep(wants)
    sandbox = replace(sandbox, compiled=ref.compiled, tested=ref.tested)
    # ``jobs`` submissions in flight, each device count of each one a run of its own, and
    # ``jobs`` runs at once: a place left free by one submission's short runs serves
    # another's, and one student alone (a regrade) runs its device counts side by side.
    slots = Slots(jobs)

    def one(entry: Path, order: int) -> StudentResult:
        progress.begin(submission.student_name(entry))
        return grade_entry(entry, cases, wants, limits, sandbox, slots=slots, order=order)

    results: dict[Path, StudentResult] = {}
    pool = ThreadPoolExecutor(jobs)
    try:
        futures = {pool.submit(one, entry, i): entry for i, entry in enumerate(todo)}
        for done in as_completed(futures):  # stored as each one finishes, in any order
            result = done.result()
            if result.unfinished:
                print(msg.WARN_NOT_KEPT.format(student=result.student,
                                               why=result.unfinished), file=sys.stderr)
            else:
                kept.put(result.student, result, prints[futures[done]])
            results[futures[done]] = result
            progress.finish(result, False)
    except BaseException:  # interrupted: stop every worker now, keep nothing more
        process.stop_all()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        close_all()
    return results


def alike(entries: dict[str, Path], exercises: Sequence[str],
          solutions: Path) -> list[similarity.Pair]:
    """The similar pairs of the whole class (every slice finds the same ones); should that
    fail, a warning, and the batch goes on without them."""
    try:
        return similarity.find(entries, exercises, solutions)
    except Exception as exc:  # noqa: BLE001 - the grades matter more than this report
        print(texts.WARN_NO_SIMILARITY.format(why=repr(exc)[:300]), file=sys.stderr)
        return []


def _others(out: Path, exercises: tuple[str, ...], only: Sequence[str],
            by_name: dict[str, Path], grader: str) -> dict[str, StudentResult]:
    """For ``--student``: everyone else's results, as ``out/results.json`` has them (which
    must hold this assignment, graded from this folder)."""
    unknown = sorted(set(only) - set(by_name))
    if unknown:
        raise GradingError(texts.STUDENT_UNKNOWN.format(students=", ".join(unknown)))
    try:
        graded = outputs.read(out)
    except outputs.NothingGraded:
        raise GradingError(texts.STUDENT_NOTHING_GRADED.format(out=out)) from None
    except outputs.OutputError as exc:
        raise GradingError(str(exc)) from None
    before, results = graded.batch, {r.student: r for r in graded.results}
    if before.exercises != exercises:
        raise GradingError(texts.STUDENT_OTHER_WORK.format(
            out=out, before=before.assignment or "the whole course"))
    if before.shard != Shard():
        raise GradingError(texts.STUDENT_A_SLICE.format(out=out, shard=before.shard))
    if before.grader != grader:
        print(texts.WARN_OTHER_GRADER.format(out=out), file=sys.stderr)
    return {name: result for name, result in results.items()
            if name not in only and name in by_name}


def standings(graded: dict[str, StudentResult], by_name: dict[str, Path],
              work: Work, said: dict[str, tuple[str, bool]] | None = None
              ) -> list[StudentResult]:
    """Every graded result with its lateness, and a "missing" result for each student on the
    roster who handed nothing in, in name order; warns of submissions not on the roster and of
    submissions the times file does not name. ``said``: what the LMS said of each one's
    lateness (the manifest collect wrote): a time in the times file decides instead; else its
    mark does, never the times of the files."""
    people = work.roster
    said = said or {}
    everyone = dict(graded)
    for name, result in graded.items():
        person = people.get(name) if people else None
        timed = name in work.times
        submitted = work.times[name] if timed else roster.modified(by_name[name])
        everyone[name] = replace(result, late=roster.lateness(
            work.assignment, submitted, person, None if timed else said.get(name)))
    if work.times and work.assignment.due:
        untimed = sorted(set(graded) - set(work.times))
        if untimed:
            print(texts.WARN_NO_TIME.format(students=", ".join(untimed)), file=sys.stderr)
    if people is not None:
        strangers = sorted(set(by_name) - set(people))
        if strangers:
            print(texts.WARN_NOT_ON_ROSTER.format(students=", ".join(strangers)),
                  file=sys.stderr)
        for name in people:
            if name not in by_name:
                everyone[name] = roster.absent(name, work.assignment.exercises)
    return [everyone[name] for name in sorted(everyone)]


def private_paths(submissions: Path, out: Path, solutions: Path) -> tuple[Path, ...]:
    """What no worker may see, should it lie inside what a worker sees (the sandbox shows only
    the Python environment and the grader, its hidden tests masked): every submission (a
    worker gets its own code through its pipe), the outputs and the reference solutions."""
    return (submissions, out, solutions)


