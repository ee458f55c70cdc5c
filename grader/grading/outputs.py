"""The output folder of a batch, and its one owner: what it holds, what each file is called,
how it is written and how it is read back.

``grade`` and ``merge`` write it (:func:`write`), each file atomically; ``grade --student``,
``merge`` and ``export`` read it back (:func:`read`), through ``results.json`` alone: the
gradebook, the feedback and the summary are always written whole from the results.

- ``results.json`` (:data:`RESULTS`): the batch (:class:`Batch`: the grader, its limits, the
  slice of the class, the assignment, the roster), every student's result, the similar pairs;
- ``gradebook.csv`` (:data:`GRADEBOOK`): a row per student;
- ``feedback/<student>.md`` and ``.html`` (:data:`FEEDBACK`);
- ``summary.md`` and ``summary.png`` (:data:`SUMMARY`, :data:`FIGURE`), ``similarity.html``
  (:data:`SIMILARITY`);
- ``adjustments.csv`` (:data:`ADJUSTMENTS`): the instructor's, never written here; every write
  applies it (:mod:`grader.grading.adjustments`);
- ``.results/`` (:data:`STORE`): each result as it is known, for a batch that is stopped and
  started again (:mod:`grader.grading.store`).
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import messages as msg
from grader.course import EXERCISES
from grader.framework.results import StudentResult
from grader.grading import feedback, safe, similarity, summary, texts
from grader.grading.similarity import Pair

RESULTS = "results.json"
GRADEBOOK = "gradebook.csv"
FEEDBACK = "feedback"
SUMMARY = "summary.md"
FIGURE = "summary.png"
SIMILARITY = "similarity.html"
STORE = ".results"
ADJUSTMENTS = "adjustments.csv"
#: What :func:`write` writes, in the order the command line names them.
WRITTEN = (GRADEBOOK, RESULTS, SUMMARY, FIGURE, SIMILARITY, FEEDBACK + "/")
#: What a results.json must record to be read back.
RECORDED = ("grader", "limits", "shard", "class")
#: The suffix of a file being written (:func:`write_atomic`).
TEMPORARY = ".tmp"


@dataclass(frozen=True)
class Shard:
    """The ``index``-th of ``count`` slices of a class (``--shard K/N``, 1 <= K <= N).

    Slices are cut round robin from the students' names in sorted order: slice K holds the
    names at places K, K + N, K + 2N, ... So they differ in size by one at most, and do not
    depend on the order in which the file system lists the folder (but adding a student may
    move others to another slice: cut every slice from the same folder)."""

    index: int = 1
    count: int = 1

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"``; ValueError, with the reason, for anything else."""
        try:
            index, count = (int(part) for part in text.split("/"))
        except ValueError:
            raise ValueError(texts.SHARD_SYNTAX.format(text=text)) from None
        if not 1 <= index <= count:
            raise ValueError(texts.SHARD_RANGE.format(text=text))
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def select(self, names: Sequence[str]) -> list[str]:
        """The names of this slice, sorted."""
        return sorted(names)[self.index - 1 :: self.count]


@dataclass(frozen=True)
class Batch:
    """What ``results.json`` records besides the results: the grader that graded (a
    fingerprint of its code, tests, solutions and JAX version), its limits, which slice of
    which class (the name of every entry of the submissions folder) the file holds, the
    assignment graded ("" for the whole course) and its exercises, and what the roster says
    of each student (id, display name, email)."""

    grader: str
    limits: dict[str, float]
    """The limits graded with, by name (:class:`~grader.workers.sandbox.Limits`: seconds,
    and bytes of memory)."""
    shard: Shard
    names: tuple[str, ...]
    assignment: str = ""
    exercises: tuple[str, ...] = tuple(e.name for e in EXERCISES)
    people: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"grader": self.grader, "limits": self.limits, "shard": str(self.shard),
                "class": list(self.names), "assignment": self.assignment or None,
                "exercises": list(self.exercises), "roster": self.people}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Batch:
        names, exercises = data["class"], data.get("exercises", [e.name for e in EXERCISES])
        people, limits = data.get("roster") or {}, data["limits"]
        if not (isinstance(limits, dict) and all(
                isinstance(v, int | float) and not isinstance(v, bool) for v in limits.values())):
            raise TypeError(texts.BATCH_BAD_LIMITS)
        if not all(isinstance(n, list) and all(isinstance(x, str) for x in n)
                   for n in (names, exercises)):
            raise TypeError(texts.BATCH_NOT_NAMES)
        if not (isinstance(people, dict) and all(
                isinstance(p, dict) and all(isinstance(v, str) for v in p.values())
                for p in people.values())):
            raise TypeError(texts.BATCH_BAD_ROSTER)
        return cls(str(data["grader"]), {str(k): v for k, v in limits.items()},
                   Shard.parse(data["shard"]),
                   tuple(names), str(data.get("assignment") or ""), tuple(exercises), people)


class OutputError(Exception):
    """An output folder cannot be read back; the message says why."""


class NothingGraded(OutputError):
    """There is no folder, or it holds no results.json."""


@dataclass
class Graded:
    """What an output folder holds: the batch, every student's result and the similar
    pairs."""

    folder: Path
    batch: Batch
    results: list[StudentResult]
    similar: list[Pair]


def read(folder: Path) -> Graded:
    """The results an output folder's ``results.json`` holds, checked to be whole: the one
    reader of that file (``grade --student``, ``merge``, ``export``)."""
    if not folder.is_dir():
        raise NothingGraded(texts.OUTPUT_NOT_A_FOLDER.format(folder=folder))
    path = folder / RESULTS
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise NothingGraded(texts.OUTPUT_NO_RESULTS.format(folder=folder)) from None
    except (OSError, ValueError, RecursionError) as exc:
        raise OutputError(texts.OUTPUT_DAMAGED.format(path=path, why=_why(exc))) from None
    if not isinstance(data, dict) or not all(key in data for key in RECORDED):
        raise OutputError(texts.OUTPUT_NO_SLICE.format(path=path))
    try:
        batch = Batch.from_json(data)
        results = [StudentResult.from_json(name, result)
                   for name, result in data["students"].items()]
        for result in results:  # points that are not numbers fail here, not while writing
            json.dumps(result.to_json(), allow_nan=False)
        similar = [Pair.from_json(pair) for pair in data.get("similar", [])]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise OutputError(texts.OUTPUT_DAMAGED.format(path=path, why=_why(exc))) from None
    return Graded(folder, batch, results, similar)


def write(out: Path, results: Sequence[StudentResult], batch: Batch,
          similar: Sequence[similarity.Pair] = ()) -> tuple[list[StudentResult], list[str]]:
    """Write ``results.json``, ``gradebook.csv``, ``feedback/<student>.md`` and ``.html`` for
    everyone who handed something in (and remove the feedback of anyone else), ``summary.md``
    and ``summary.png``, ``similarity.html`` (the table of similar pairs also ends
    ``summary.md``), each atomically; with the adjustments of ``out/adjustments.csv`` where
    there is one (a mistake in it raises RosterError before anything is written). Returns the
    results as written, and why each row of that file matched no result (a student of another
    slice, say)."""
    import jax

    from grader.grading import adjustments  # it reads the roster's way, which reads this

    results, unmatched = list(results), []
    if (out / ADJUSTMENTS).is_file():
        rows = adjustments.read(out / ADJUSTMENTS)
        results = adjustments.apply(rows, results)
        unmatched = [f"{out / ADJUSTMENTS}:{why}" for why in adjustments.unmatched(rows, results)]
    feedback_folder = out / FEEDBACK
    feedback_folder.mkdir(parents=True, exist_ok=True)
    report = {
        "jax_version": jax.__version__,
        **batch.to_json(),
        "students": {r.student: r.to_json() for r in results},
        "similar": [pair.to_json() for pair in similar],
    }
    write_atomic(out / RESULTS, json.dumps(safe.tree(report), indent=2, allow_nan=False))
    write_atomic(out / GRADEBOOK, gradebook_csv(results, batch.exercises))
    handed_in = [r for r in results if not r.missing]  # no feedback for who sent nothing
    written = {f"{r.student}{suffix}" for r in handed_in for suffix in feedback.SUFFIXES}
    for r in handed_in:
        write_atomic(feedback_folder / f"{r.student}.md", feedback.markdown(r))
        write_atomic(feedback_folder / f"{r.student}.html", feedback.page(r))
    for stale in feedback_folder.iterdir():
        if stale.suffix in feedback.SUFFIXES and stale.name not in written:
            stale.unlink()
    write_atomic(out / SUMMARY, summary.markdown(results, figure=FIGURE) + "\n"
                 + similarity.markdown(similar, page_name=SIMILARITY))
    write_atomic(out / FIGURE, summary.png(results))
    write_atomic(out / SIMILARITY, similarity.page(similar, page_name=SIMILARITY))
    return results, unmatched


#: The gradebook's columns after the student and the exercises.
GRADEBOOK_TAIL = ("points", "days_late", "penalty", "total", "standing", "submitted_at",
                  "hand_in")


def hand_in(result: StudentResult) -> str:
    """What came of a student's hand-in, for the gradebook and the exports: ``missing`` (on
    the roster, nothing handed in), ``empty`` (nothing to grade in it), ``unreadable`` (a
    file of it could not be read: its zeros are no answers) or ``read``."""
    if result.missing:
        return msg.MISSING
    if result.unreadable == [texts.NOTHING_TO_GRADE]:
        return texts.HAND_IN_EMPTY
    return texts.HAND_IN_UNREADABLE if result.unreadable else texts.HAND_IN_READ


def gradebook_csv(results: Sequence[StudentResult], exercises: Sequence[str]) -> str:
    """One row per student: the points of each exercise, their sum (``points``), days late
    and the points that costs, the ``total`` that counts, the standing (on time, late,
    missing; "handed in" without a due date), when it was handed in and what came of the
    hand-in (:func:`hand_in`)."""
    text = io.StringIO()
    rows = [["student", *exercises, *GRADEBOOK_TAIL]]
    for r in sorted(results, key=lambda r: r.student):
        late = r.late
        rows.append([r.student, *(f"{r.exercises[name].points:g}" for name in exercises),
                     f"{r.total:g}", late.days if late else 0, f"{r.penalty:g}",
                     f"{r.final:g}", r.standing, late.submitted if late else "", hand_in(r)])
    csv.writer(text, lineterminator="\n").writerows(safe.csv_rows(rows))
    return text.getvalue()


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write a file (text or bytes) so that it is never seen half-written, and the rename
    is on disk before this returns."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}{TEMPORARY}")
    if isinstance(content, str):  # text no output sanitised still cannot stop the writing
        content = content.encode("utf-8", "backslashreplace")
    with open(temporary, "wb") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _why(exc: BaseException) -> str:
    """An exception's reason on one line, short."""
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return " ".join(f"{type(exc).__name__}: {text}".split())[:200]
