"""Results of grading: one object per test, exercise and student, rendered as HTML (in a
notebook), text (on a terminal) or JSON (in ``results.json``)."""

from __future__ import annotations

import html
from dataclasses import asdict, dataclass, field
from typing import Any

from grader import messages as msg
from grader.palette import status_colour


@dataclass
class TestResult:
    """One test of one exercise, possibly run on several device counts."""

    __test__ = False  # not a pytest test class, whatever its name

    test: str
    points: float
    max_points: float
    status: str
    message: str = ""
    hint: str | None = None
    devices: list[int] = field(default_factory=list)
    got: str | None = None
    want: str | None = None
    hidden: bool = False

    def __post_init__(self) -> None:
        # Texts may quote what a worker sent: whatever it was, they are stored as text, so
        # that the results can always be written (a NaN where a text belongs could not).
        self.message = str(self.message)
        self.hint, self.got, self.want = (None if text is None else str(text)
                                          for text in (self.hint, self.got, self.want))


@dataclass(frozen=True)
class Adjustment:
    """Points an instructor added to (or, negative, took from) what the tests gave one
    exercise, and why: ``adjustments.csv`` in the output folder
    (:mod:`grader.grading.adjustments`)."""

    points: float
    comment: str


@dataclass(repr=False)
class ExerciseResult:
    """All tests of one exercise for one student."""

    name: str
    tests: list[TestResult]
    #: Said above the tests: ``check`` says so when it ran on other devices than the grader, or
    #: could not run on some of them.
    note: str | None = None
    #: The instructor's, applied on top of the tests.
    adjustments: list[Adjustment] = field(default_factory=list)
    #: ``check``'s: whether every public test passed, by the device counts they ran on; its
    #: renderings then count tests, not points (the grader's hidden tests give those).
    ran_on: dict[int, bool] | None = None

    @property
    def tested_points(self) -> float:
        """What the tests gave."""
        return sum(t.points for t in self.tests)

    @property
    def points(self) -> float:
        """What the tests gave, adjusted by the instructor: never below 0 or above the
        exercise's points."""
        adjusted = self.tested_points + sum(a.points for a in self.adjustments)
        return min(self.max_points, max(0.0, adjusted))

    @property
    def max_points(self) -> float:
        return sum(t.max_points for t in self.tests)

    @property
    def status(self) -> str:
        """What the tests say, unless the instructor's adjustments changed the points: then
        what the points say (passed at the maximum, partial above 0, failed at 0 unless the
        tests say worse: a timeout, a crash, nothing found)."""
        tested = self.tested_status
        if self.points == self.tested_points:
            return tested
        if self.points == self.max_points:
            return msg.PASSED
        if self.points > 0:
            return msg.PARTIAL
        return msg.FAILED if tested in (msg.PASSED, msg.PARTIAL) else tested

    @property
    def tested_status(self) -> str:
        """What the tests say, before any adjustment."""
        statuses = [t.status for t in self.tests]
        if self.tested_points == self.max_points:
            return msg.PASSED
        for whole in (msg.NOT_FOUND, msg.NOT_ATTEMPTED):
            if statuses and all(s == whole for s in statuses):
                return whole
        for serious in (msg.TIMEOUT, msg.CRASHED):
            if serious in statuses:
                return serious
        return msg.PARTIAL if self.tested_points > 0 else msg.FAILED

    @property
    def first_failure(self) -> TestResult | None:
        return next((t for t in self.tests if t.status != msg.PASSED), None)

    @property
    def message(self) -> str:
        failure = self.first_failure
        return failure.message if failure else ""

    @property
    def hint(self) -> str | None:
        return next((t.hint for t in self.tests if t.hint), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "max_points": self.max_points,
            "status": self.status,
            "message": self.message,
            "hint": self.hint,
            "tests": [asdict(t) for t in self.tests],
            "adjustments": [asdict(a) for a in self.adjustments],
        }

    def adjusted_lines(self) -> list[str]:
        """Each adjustment as one sentence for the student."""
        return [msg.ADJUSTED.format(points=f"{a.points:+g}", comment=a.comment)
                for a in self.adjustments]

    # --- renderings -------------------------------------------------------------------
    def counted(self, unit: str = "") -> str:
        """What the first line says in brackets: the points (``unit`` after them), or for
        ``check`` the public tests that pass, and on which device counts."""
        if self.ran_on is None:
            return f"{_num(self.points)}/{_num(self.max_points)}{unit}"
        text = msg.CHECK_COUNTED.format(passed=sum(t.status == msg.PASSED for t in self.tests),
                                        total=len(self.tests))
        good = [n for n, ok in self.ran_on.items() if ok]
        bad = [n for n, ok in self.ran_on.items() if not ok]
        if good and bad:
            return f"{text} " + msg.CHECK_SPLIT.format(good=_and(good), bad=_and(bad))
        if self.status in (msg.NOT_ATTEMPTED, msg.NOT_FOUND) or not self.ran_on:
            return text
        return f"{text}, " + msg.CHECK_ON.format(devices=_and(list(self.ran_on)))

    def __str__(self) -> str:
        lines = [f"{self.name}: {self.status} ({self.counted()})"]
        lines += [f"  note: {self.note}"] if self.note else []
        lines += [f"  {line}" for line in self.adjusted_lines()]
        for t in self.tests:
            mark = "ok  " if t.status == msg.PASSED else "FAIL"
            lines.append(f"  {mark} {t.test}{_on(t.devices)}: {t.status}")
            if t.status != msg.PASSED:
                lines += [f"       {t.message}"] if t.message else []
                lines += [f"       yours:    {t.got}"] if t.got is not None else []
                lines += [f"       expected: {t.want}"] if t.want is not None else []
                lines += [f"       hint: {t.hint}"] if t.hint else []
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        colour = status_colour(self.status)
        rows = "".join(_html_row(t) for t in self.tests)
        hint = f"<p><b>Hint:</b> {html.escape(self.hint)}</p>" if self.hint else ""
        note = f"<p><b>Note:</b> {html.escape(self.note)}</p>" if self.note else ""
        note += "".join(f"<p>{html.escape(line)}</p>" for line in self.adjusted_lines())
        return (
            f'<div class="grader-result" data-status="{html.escape(self.status)}" '
            f'style="border-left:6px solid {colour};padding:4px 10px;margin:4px 0">'
            f"<p><b>{html.escape(self.name)}</b>: "
            f'<span style="color:{colour};font-weight:bold">{html.escape(self.status)}</span>'
            f" ({html.escape(self.counted(' points'))})</p>{note}"
            f'<table><tr><th style="text-align:left">test</th><th>result</th>'
            f'<th style="text-align:left">yours</th><th style="text-align:left">expected</th>'
            f"</tr>{rows}</table>{hint}</div>"
        )


@dataclass(frozen=True)
class Late:
    """When a submission came in against its due date, and the share of its points that
    costs (:class:`grader.assignments.LatePolicy`). Times are ISO 8601 with their offset.
    ``said_by``: the LMS whose mark decided whether it is late (Canvas's; then ``days`` is at
    least 1 for late work and 0 for work on time, whatever ``submitted`` says), or ""."""

    submitted: str
    due: str
    days: int
    percent: float
    said_by: str = ""


@dataclass
class StudentResult:
    """Everything graded for one student."""

    student: str
    exercises: dict[str, ExerciseResult]
    problems: list[str] = field(default_factory=list)
    #: Why the grader itself could not finish this student (never stored: graded again).
    unfinished: str | None = None
    #: When it was handed in against the due date; None when the work has no due date.
    late: Late | None = None
    #: On the roster, but handed nothing in (each exercise "not found", 0 points).
    missing: bool = False
    #: What of the hand-in could not be read (a file, or nothing to grade at all): also among
    #: ``problems``, and named in the batch's summary, since its zeros are no answers.
    unreadable: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        """The points the tests gave, before any late penalty."""
        return sum(e.points for e in self.exercises.values())

    @property
    def max_total(self) -> float:
        return sum(e.max_points for e in self.exercises.values())

    @property
    def penalty(self) -> float:
        """The points a late submission loses (rounded to hundredths)."""
        return round(self.total * self.late.percent / 100, 2) if self.late else 0.0

    @property
    def final(self) -> float:
        """The points that count: the total less the late penalty."""
        return self.total - self.penalty

    @property
    def standing(self) -> str:
        """missing, late, on time, or handed in (no due date)."""
        if self.missing:
            return msg.MISSING
        if self.late is None:
            return msg.HANDED_IN
        return msg.LATE if self.late.days else msg.ON_TIME

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "max_total": self.max_total,
            "penalty": self.penalty,
            "final": self.final,
            "standing": self.standing,
            "late": asdict(self.late) if self.late else None,
            "problems": self.problems,
            "unreadable": self.unreadable,
            "exercises": {name: e.to_json() for name, e in self.exercises.items()},
        }

    @classmethod
    def from_json(cls, student: str, data: dict[str, Any]) -> StudentResult:
        """Read back what :meth:`to_json` wrote (points are recomputed from the tests)."""
        exercises = {
            name: ExerciseResult(name, [TestResult(**t) for t in e["tests"]],
                                 adjustments=[Adjustment(float(a["points"]), str(a["comment"]))
                                              for a in e.get("adjustments", [])])
            for name, e in data["exercises"].items()
        }
        late = Late(**data["late"]) if data.get("late") else None
        return cls(student, exercises, list(data.get("problems", [])), late=late,
                   missing=data.get("standing") == msg.MISSING,
                   unreadable=[str(p) for p in data.get("unreadable", [])])


def _num(x: float) -> str:
    return f"{x:g}"


def _and(counts: list[int]) -> str:
    return " and ".join(map(str, counts))


def _on(devices: list[int]) -> str:
    return f" [{', '.join(map(str, devices))} devices]" if devices else ""


def _html_row(t: TestResult) -> str:
    colour = status_colour(t.status)
    detail = f"<br><small>{html.escape(t.message)}</small>" if t.message else ""
    cells = [
        f"{html.escape(t.test)}{html.escape(_on(t.devices))}{detail}",
        f'<span style="color:{colour}">{html.escape(t.status)}</span>',
        f"<code>{html.escape(t.got)}</code>" if t.got is not None else "",
        f"<code>{html.escape(t.want)}</code>" if t.want is not None else "",
    ]
    return "<tr>" + "".join(f'<td style="text-align:left">{c}</td>' for c in cells) + "</tr>"
