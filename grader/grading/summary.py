"""The summary of a batch: how the totals spread, and the exercises most students failed.

``OUT/summary.png`` draws both: a histogram of the students' totals with the maximum marked,
and per exercise the share of students who failed it, worst first, in the status colours of
:mod:`grader.palette`. ``OUT/summary.md`` gives the same figures as a table.

A student *handed in* an exercise when the function is defined and is not the stub ("not
found" and "not attempted" are both *not handed in*, grey, as in the notebook's feedback); of
those, one who did not get full marks *failed* it, *partly* when the exercise's status is
"partial", wholly otherwise (0 points, or a timeout or crash: shown red in the feedback). Each
outcome is drawn in the colour the notebook's feedback gives its status
(:func:`grader.palette.status_colour`). The failure rate of an exercise is the share of the
students who handed it in and failed it; an exercise that nobody handed in has no rate and is
left out. Totals are those that count, after any late penalty; students on the roster who
handed nothing in are left out of the figures and counted in the first line. ``summary.md``
then lists every test that a student who handed its exercise in failed, with the hint most of
them were given: the class's commonest mistake on it.
"""

from __future__ import annotations

import io
import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from grader import messages as msg
from grader.framework.results import ExerciseResult, StudentResult
from grader.grading import safe, texts
from grader.palette import status_colour

#: How many of the most failed exercises the command line lists.
SHOWN = 5
_ABSENT = (msg.NOT_FOUND, msg.NOT_ATTEMPTED)
#: The bars of the figure: (outcome, legend label, the status whose colour it is drawn in).
BARS = (("failed", "failed", msg.FAILED), ("partial", "partly", msg.PARTIAL),
        ("passed", "passed", msg.PASSED))


@dataclass(frozen=True)
class Tally:
    """How the students of a batch did on one exercise."""

    exercise: str
    passed: int = 0
    partial: int = 0
    failed: int = 0
    absent: int = 0

    @property
    def handed_in(self) -> int:
        return self.passed + self.partial + self.failed

    @property
    def failures(self) -> int:
        return self.partial + self.failed

    @property
    def failure_rate(self) -> float:
        """The share of the students who handed it in and failed it (partly or wholly)."""
        return self.failures / self.handed_in if self.handed_in else 0.0


def outcome(exercise: ExerciseResult) -> str:
    """Which count of a :class:`Tally` one student's exercise goes to, from its status (the
    one its feedback shows): passed, partial, absent (not found, not attempted) or failed
    (every other status)."""
    if exercise.status in _ABSENT:
        return "absent"
    if exercise.status in (msg.PASSED, msg.PARTIAL):
        return exercise.status
    return "failed"


def tallies(results: Sequence[StudentResult]) -> list[Tally]:
    """Every exercise someone handed in, the most failed first: by failure rate, then by the
    number of students who failed it, then in course order."""
    counts: dict[str, dict[str, int]] = {}
    for result in _handed_in(results):
        for name, exercise in result.exercises.items():
            kinds = counts.setdefault(name, {})
            kinds[outcome(exercise)] = kinds.get(outcome(exercise), 0) + 1
    order = {name: i for i, name in enumerate(counts)}
    found = [Tally(name, **kinds) for name, kinds in counts.items()]
    return sorted(
        (t for t in found if t.handed_in),
        key=lambda t: (-t.failure_rate, -t.failures, order[t.exercise]),
    )


@dataclass(frozen=True)
class TestTally:
    """How the students who handed an exercise in did on one of its tests, and the hint most
    of those who failed it were given (the mistake most of them made, as far as the hints
    tell), with how many were given it."""

    __test__ = False  # not a pytest test class, whatever its name

    exercise: str
    test: str
    hidden: bool
    passed: int
    failed: int
    hint: str | None
    hinted: int


def test_tallies(results: Sequence[StudentResult]) -> list[TestTally]:
    """Every test that a student who handed its exercise in failed, the most failed first
    (then in course order)."""
    seen: dict[tuple[str, str], list] = {}
    for result in _handed_in(results):
        for name, exercise in result.exercises.items():
            if outcome(exercise) == "absent":
                continue
            for test in exercise.tests:
                tally = seen.setdefault((name, test.test), [test.hidden, 0, []])
                if test.status == msg.PASSED:
                    tally[1] += 1
                else:
                    tally[2].append(test.hint)
    found = []
    for (name, test), (hidden, passed, hints) in seen.items():
        given = Counter(h for h in hints if h)
        hint, hinted = given.most_common(1)[0] if given else (None, 0)
        found.append(TestTally(name, test, hidden, passed, len(hints), hint, hinted))
    order = {key: i for i, key in enumerate(seen)}
    return sorted((t for t in found if t.failed),
                  key=lambda t: (-t.failed, order[t.exercise, t.test]))


def most_failed(results: Sequence[StudentResult], shown: int = SHOWN) -> list[Tally]:
    """The exercises at least one student failed, the most failed first, at most ``shown``."""
    return [t for t in tallies(results) if t.failures][:shown]


def unreadable(results: Sequence[StudentResult]) -> list[str]:
    """One line per student whose hand-in the grader could not read, whole or in part: its
    zeros are no answers, so the batch names them (each student's feedback says more)."""
    return [texts.SUMMARY_UNREADABLE.format(student=safe.line(r.student),
                                            what=safe.line("; ".join(r.unreadable))[:200])
            for r in results if r.unreadable]


def text(results: Sequence[StudentResult]) -> str:
    """A few lines for the terminal: the spread of the totals, the hand-ins that could not be
    read, and the most failed exercises."""
    lines = [_spread(results)]
    cannot = unreadable(results)
    if cannot:
        lines.append(texts.SUMMARY_UNREADABLE_HEADING.format(count=len(cannot)))
        lines += [f"  {line}" for line in cannot]
    worst = most_failed(results)
    if worst:
        lines.append("most failed (of the students who handed the exercise in):")
        lines += [f"  {_failure(t)}" for t in worst]
    elif results:
        lines.append(texts.SUMMARY_NOTHING_FAILED)
    return "\n".join(lines)


def markdown(results: Sequence[StudentResult], figure: str) -> str:
    """``summary.md``: the spread of the totals, the figure, and every exercise handed in
    with its counts, the most failed first."""
    lines = ["# Summary of the batch", "", _spread(results), ""]
    adjusted = [(r.student, e) for r in results for e in r.exercises.values() if e.adjustments]
    if adjusted:
        lines += [texts.SUMMARY_ADJUSTED.format(count=len(adjusted), students=len(
            {student for student, _ in adjusted})), ""]
    cannot = unreadable(results)
    if cannot:
        lines += [f"**{texts.SUMMARY_UNREADABLE_HEADING.format(count=len(cannot))}**", "",
                  *(f"- {safe.markdown(line)}" for line in cannot), ""]
    lines += [f"![Score distribution and the exercises most students failed]({figure})", "",
             "## Exercises most students failed", "", texts.SUMMARY_RATE_DEFINITION, ""]
    found = tallies(results)
    if not found:
        return "\n".join([*lines, texts.SUMMARY_NOTHING_HANDED_IN]) + "\n"
    lines += ["| exercise | failed | partly | passed | not handed in | failure rate |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    lines += [f"| `{t.exercise}` | {t.failed} | {t.partial} | {t.passed} | {t.absent} | "
              f"{t.failure_rate:.0%} |" for t in found]
    tests = test_tallies(results)
    if tests:
        lines += ["", "## Tests the students failed", "", texts.SUMMARY_TESTS_DEFINITION, "",
                  "| exercise | test | hidden | failed | passed | the hint most of them got |",
                  "| --- | --- | --- | ---: | ---: | --- |"]
        lines += [f"| `{t.exercise}` | `{t.test}` | {'yes' if t.hidden else ''} | {t.failed} "
                  f"| {t.passed} | {_hint(t)} |" for t in tests]
    return "\n".join(lines) + "\n"


def _hint(t: TestTally) -> str:
    if not t.hint:
        return ""
    return f"{safe.markdown(t.hint)} ({t.hinted} of {t.failed})"


def png(results: Sequence[StudentResult]) -> bytes:
    """``summary.png``: the histogram of totals, and the failure rate of every exercise handed
    in (stacked: failed, partly, passed), the most failed at the top."""
    buffer = io.BytesIO()
    figure(results).savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def figure(results: Sequence[StudentResult]):
    """The matplotlib Figure of ``summary.png``; each bar segment has the gid
    ``{outcome}-{exercise}`` (outcome: failed, partial or passed)."""
    from matplotlib.figure import Figure  # the object API: no pyplot, no global backend

    found = tallies(results)
    drawn = Figure(figsize=(12, max(4.0, 1.5 + 0.32 * len(found))), layout="constrained")
    spread, rates = drawn.subplots(1, 2, width_ratios=[1, 1.4])
    _histogram(spread, results)
    _rates(rates, found)
    return drawn


def _handed_in(results: Sequence[StudentResult]) -> list[StudentResult]:
    """The students who handed something in: the summary leaves out who is missing."""
    return [r for r in results if not r.missing]


def _histogram(axes, results: Sequence[StudentResult]) -> None:
    results = _handed_in(results)
    totals = [r.final for r in results]
    top = max((r.max_total for r in results), default=0.0) or 1.0
    axes.hist(totals, bins=max(1, min(30, round(top))), range=(0, top),
              color=status_colour(msg.NOT_ATTEMPTED))
    axes.axvline(top, color=status_colour(msg.PASSED), linestyle="--", linewidth=2,
                 label=f"full marks: {top:g}")
    # where it covers the fewest bars (a label on the line covered the full marks' bar)
    axes.legend(loc="best")
    axes.set(title=f"Total points of {len(results)} student(s)", xlabel="total points",
             ylabel="students", xlim=(0, top * 1.05))
    axes.yaxis.get_major_locator().set_params(integer=True)


def _rates(axes, found: Sequence[Tally]) -> None:
    axes.set_title("Exercises most students failed", pad=28)
    axes.set(xlim=(0, 1.0), xlabel="share of the students who handed the exercise in")
    if not found:
        axes.text(0.5, 0.5, texts.SUMMARY_NOTHING_HANDED_IN, ha="center", va="center")
        axes.set_yticks([])
        return
    rows = range(len(found))
    left = [0.0] * len(found)
    for part, label, status in BARS:
        widths = [getattr(t, part) / t.handed_in for t in found]
        bars = axes.barh(rows, widths, left=left, color=status_colour(status), label=label)
        for bar, t in zip(bars, found, strict=True):
            bar.set_gid(f"{part}-{t.exercise}")
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axes.set_yticks(list(rows), [t.exercise for t in found])
    for row, t in zip(rows, found, strict=True):
        axes.text(0.01, row, f"{t.failure_rate:.0%} of {t.handed_in}", va="center",
                  color="white", fontsize=8)
    axes.invert_yaxis()
    axes.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, frameon=False)


def _spread(results: Sequence[StudentResult]) -> str:
    missing = len(results) - len(_handed_in(results))
    absent = texts.SUMMARY_MISSING.format(count=missing) if missing else ""
    results = _handed_in(results)
    if not results:
        return texts.SUMMARY_NO_STUDENT + absent
    totals = [r.final for r in results]
    top = max(r.max_total for r in results)
    late = sum(bool(r.late and r.late.days) for r in results)
    return texts.SUMMARY_SPREAD.format(
        students=len(results), top=top, mean=statistics.fmean(totals),
        median=statistics.median(totals), low=min(totals), high=max(totals),
        full=sum(t == top for t in totals),
    ) + (texts.SUMMARY_LATE.format(count=late) if late else "") + absent


def _failure(t: Tally) -> str:
    return texts.SUMMARY_FAILURE.format(
        exercise=t.exercise, failures=t.failures, handed_in=t.handed_in, rate=t.failure_rate,
        failed=t.failed, partial=t.partial,
    )
