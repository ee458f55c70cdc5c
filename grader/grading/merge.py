"""``python -m grader merge SLICE... --out OUT``: the slices graded with ``grade --shard K/N``,
put back together into one output folder (gradebook, results.json, feedback and summary), as
if the class had been graded in one go.

Each slice's ``results.json`` says which slice of which class it holds and which grader
graded it (:class:`grader.grading.outputs.Batch`). The merge refuses, with the reason, slices
that do not make one whole: one missing, slices of different splits or classes, graded by different
graders or with different limits, or a student with two different results. The same slice
given twice is harmless.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from grader.framework.results import StudentResult
from grader.grading import outputs, texts
from grader.grading.outputs import Batch, Graded, OutputError, Shard, read
from grader.grading.similarity import Pair

#: What a results.json must record to be merged.
RECORDED = ("grader", "limits", "shard", "class")
#: How many names an error lists before "and N more".
NAMES_SHOWN = 5


class MergeError(Exception):
    """The slices do not make one whole; the message says why."""


def combine(slices: Sequence[Graded]) -> tuple[Batch, list[StudentResult], list[Pair]]:
    """One class out of its slices: what the whole records, every student's result in name
    order, and the similar pairs (each slice found those of the whole class)."""
    first = slices[0]
    for other in slices[1:]:
        _same_grading(first, other)
    count = first.batch.shard.count
    missing = sorted(set(range(1, count + 1)) - {s.batch.shard.index for s in slices})
    if missing:
        names = ", ".join(str(Shard(k, count)) for k in missing)
        raise MergeError(texts.MERGE_MISSING.format(missing=names))
    merged: dict[str, tuple[StudentResult, Path]] = {}
    for piece in slices:
        for result in piece.results:
            seen = merged.setdefault(result.student, (result, piece.folder))
            if seen[0].to_json() != result.to_json():
                raise MergeError(texts.MERGE_CONFLICT.format(
                    student=result.student, a=seen[1], b=piece.folder))
    names = first.batch.names
    absent = [name for name in names if name not in merged]
    if absent:
        raise MergeError(texts.MERGE_INCOMPLETE.format(students=_names(absent)))
    # every slice lists who is on the roster but handed nothing in; nobody else may appear
    strangers = sorted(name for name, (result, _) in merged.items()
                       if name not in names and not result.missing)
    if strangers:
        raise MergeError(texts.MERGE_STRANGERS.format(students=_names(strangers)))
    whole = replace(first.batch, shard=Shard())
    return whole, [merged[name][0] for name in sorted(merged)], first.similar


def gather(folders: Sequence[Path],
           out: Path) -> tuple[Batch, list[StudentResult], list[Pair]]:
    """Read the slices in ``folders`` and check that they make one class, to be written to
    ``out`` (which must not be one of them); nothing is written yet."""
    if out.resolve() in {folder.resolve() for folder in folders}:
        raise MergeError(texts.MERGE_INTO_A_SLICE.format(out=out))
    try:
        slices = [read(folder) for folder in folders]
    except OutputError as exc:
        raise MergeError(str(exc)) from None
    return combine(slices)


def merge(folders: Sequence[Path], out: Path) -> list[StudentResult]:
    """Put the slices in ``folders`` together and write the outputs of the class to ``out``."""
    batch, results, similar = gather(folders, out)
    return outputs.write(out, results, batch, similar)[0]


def _same_grading(a: Graded, b: Graded) -> None:
    """Refuse two slices that were not graded the same way from the same class."""
    if a.batch.grader != b.batch.grader:
        raise MergeError(texts.MERGE_OTHER_GRADER.format(a=a.folder, b=b.folder))
    if a.batch.limits != b.batch.limits:
        la, lb = a.batch.limits, b.batch.limits
        differ = [k for k in sorted(set(la) | set(lb)) if la.get(k) != lb.get(k)]
        raise MergeError(texts.MERGE_OTHER_LIMITS.format(
            a=a.folder, b=b.folder, la=", ".join(f"{k}={la.get(k)}" for k in differ),
            lb=", ".join(f"{k}={lb.get(k)}" for k in differ)))
    if a.batch.shard.count != b.batch.shard.count:
        raise MergeError(texts.MERGE_OTHER_SPLIT.format(
            a=a.folder, sa=a.batch.shard, b=b.folder, sb=b.batch.shard))
    if a.batch.names != b.batch.names or a.similar != b.similar:
        raise MergeError(texts.MERGE_OTHER_CLASS.format(a=a.folder, b=b.folder))
    if (a.batch.assignment, a.batch.exercises) != (b.batch.assignment, b.batch.exercises):
        raise MergeError(texts.MERGE_OTHER_WORK.format(
            a=a.folder, b=b.folder, wa=a.batch.assignment or "the whole course",
            wb=b.batch.assignment or "the whole course"))
    if a.batch.people != b.batch.people:
        raise MergeError(texts.MERGE_OTHER_ROSTER.format(a=a.folder, b=b.folder))


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    more = len(names) - NAMES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown


