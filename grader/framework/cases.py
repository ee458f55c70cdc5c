"""Tests as small decorated functions: a probe that measures, a judge that decides.

A case's probe receives the student's function and returns a dict of measurements (values,
shapes, shardings, collectives). It runs in the student's kernel for ``check``, and in the
grader's tester (:mod:`grader.workers.tester`), where the function's calls are made in its
worker. Its judge runs in the trusted grader and compares those measurements with the
reference solution's.

Public cases live in :mod:`grader.public`, hidden ones in :mod:`grader.hidden`.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import re
import sys
import traceback
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import messages as msg
from grader.course import BY_NAME
from grader.devices import DEFAULT_DEVICES
from grader.framework import plain
from grader.framework.judge import Hint, Verdict, same
from grader.framework.results import TestResult
from grader.hints import common, error_hint

Probe = Callable[[Callable], dict]
Judge = Callable[[dict, dict], Verdict]

#: Packages holding test modules; a release for students ships only the public one.
PACKAGES = {False: "grader.public", True: "grader.hidden"}


def exercise_of(case_id: str) -> str:
    """The exercise of a case's :attr:`Case.id`."""
    return case_id.split(":", 1)[0]


@dataclass(frozen=True)
class Case:
    """One test of one exercise."""

    exercise: str
    name: str
    probe: Probe
    judge: Judge
    points: float
    hidden: bool
    devices: tuple[int, ...] | None = None

    @property
    def id(self) -> str:
        return f"{self.exercise}:{self.name}"

    @property
    def device_counts(self) -> tuple[int, ...]:
        """Device counts the grader runs this case on."""
        if self.devices:
            return self.devices
        return BY_NAME[self.exercise].device_counts if self.hidden else (DEFAULT_DEVICES,)


_REGISTRY: dict[str, Case] = {}


def case(
    exercise: str,
    *,
    hidden: bool,
    points: float = 1,
    devices: tuple[int, ...] | None = None,
    judge: Judge | None = None,
    hints: Sequence[Hint] = (),
) -> Callable[[Probe], Probe]:
    """Register the decorated probe as a test of ``exercise``.

    Without ``judge``, every measurement whose name does not start with ``_`` must match the
    reference's; names with ``_`` carry context for ``hints`` (for example the value a
    forgotten psum would give).
    """
    if exercise not in BY_NAME:
        raise ValueError(msg.CASE_UNKNOWN_EXERCISE.format(exercise=exercise))

    def register(probe: Probe) -> Probe:
        found = Case(
            exercise=exercise,
            name=probe.__name__,
            probe=probe,
            judge=judge or same(hints=hints),
            points=points,
            hidden=hidden,
            devices=devices,
        )
        if found.id in _REGISTRY and _REGISTRY[found.id].probe is not probe:
            raise ValueError(msg.CASE_TWICE.format(id=found.id))
        _REGISTRY[found.id] = found
        return probe

    return register


def load(hidden: bool = True) -> list[Case]:
    """All registered cases, public first, in definition order; hidden ones when asked for
    and present (a student release has none)."""
    for is_hidden in (False, True) if hidden else (False,):
        try:
            package = importlib.import_module(PACKAGES[is_hidden])
        except ModuleNotFoundError:
            continue
        for module in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{module.name}")
    return [c for c in _REGISTRY.values() if hidden or not c.hidden]


def hidden_sources() -> dict[str, str]:
    """The source text of every hidden test module, by module name. The grader sends these
    to its testers, which cannot see the hidden tests on disk when sandboxed."""
    package = importlib.import_module(PACKAGES[True])
    return {
        f"{package.__name__}.{module.name}": Path(module.module_finder.path, f"{module.name}.py")
        .read_text()
        for module in pkgutil.iter_modules(package.__path__)
    }


def install_sources(sources: dict[str, str]) -> None:
    """Load test modules from their source text (in a tester), registering their cases."""
    for name, text in sources.items():
        if name in sys.modules:
            continue
        module = types.ModuleType(name)
        module.__file__ = f"<{name}>"
        sys.modules[name] = module
        exec(compile(text, module.__file__, "exec"), module.__dict__)  # noqa: S102


def for_exercise(name: str, hidden: bool = True) -> list[Case]:
    """The cases of one exercise."""
    return [c for c in load(hidden) if c.exercise == name]


# --- measuring (next to the code under test) ---------------------------------------------
class CourseFailure(Exception):
    """The course's own code failed, not the function under test: where it reaches into JAX
    (:func:`course_code`), on a JAX release that moved what it reaches for."""


@contextlib.contextmanager
def course_code(what: str) -> Iterator[None]:
    """Run the course's own use of JAX inside: whatever it raises becomes a
    :class:`CourseFailure` that says so, with JAX's version and the versions the course holds
    on, so that ``check`` never reports it as the student's mistake."""
    try:
        yield
    except Exception as exc:
        import jax

        from grader.devices import jax_range

        error = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise CourseFailure(msg.COURSE_FAILED.format(what=what, version=jax.__version__,
                                                     held=jax_range(), error=error)) from exc


def measure(found: Case, fn: Callable, made: list | None = None,
            material: bool = True) -> dict[str, Any]:
    """Run a probe on ``fn``: ``{"ok": True, "data": ...}`` or ``{"ok": False, "error": ...}``;
    ``made``, if given, gets the programs measured in this process, with where each is
    (:func:`grader.framework.plain.measured_programs`). The hints' material
    (:class:`grader.framework.plain.Material`) is made only with ``material``: for the
    reference, whose outcome the hints read it from.

    Whatever the function prints or warns is not the probe's business; any exception,
    KeyboardInterrupt and SystemExit included, becomes an error report.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = found.probe(fn)
            if made is not None:
                made += plain.measured_programs(value)
            data = plain.to_plain(value, material)
    except CourseFailure as exc:  # the course's, on this JAX: the test is not run
        return {"not_run": str(exc)}
    except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
        return {"ok": False, "error": describe_error(exc)}
    return {"ok": True, "data": data}


def describe_error(exc: BaseException) -> dict[str, str]:
    """The type, message and innermost frame of an exception, as plain strings, and the
    first built-in exception it derives from (see :func:`grader.remote.raised`, which makes
    one reported by a worker, and whose own type, message and frame are given here)."""
    if isinstance(getattr(exc, "raised", None), dict):  # the function raised it in the worker
        return {key: value[:2000] for key, value in exc.raised.items()}
    try:
        text = str(exc)
        if isinstance(exc, SyntaxError) and exc.lineno is not None:
            # "msg (FILE, line N)": the file (a cell, named with the student's file name) is
            # said apart, and a long name must not push the line out of a shortened message
            text = f"{exc.msg} (line {exc.lineno})"
    except BaseException:  # noqa: BLE001 - a hostile __str__
        text = "<the exception's message could not be read>"
    try:
        where = traceback.extract_tb(exc.__traceback__)[-1]
        line = f"{where.filename}, line {where.lineno}"
    except BaseException:  # noqa: BLE001
        line = ""
    base = next((k for k in type.__getattribute__(type(exc), "__mro__")
                 if k.__module__ == "builtins"), BaseException)
    return {"type": _TYPE_NAME.__get__(type(exc), type), "message": text[:2000], "where": line,
            "base": base.__name__}


#: The descriptor behind ``type.__name__``, which a metaclass's own ``__name__`` cannot replace.
_TYPE_NAME = vars(type)["__name__"]


# --- deciding (trusted side) ---------------------------------------------------------------
def decide(found: Case, outcomes: dict[int, dict], wants: dict[int, dict],
           brief: bool = False) -> TestResult:
    """Judge a case from the student's outcome and the reference's, per device count.

    The case passes when it passes on every device count (the default count first); the
    first failure is reported. ``brief`` (grading): what the submission wrote is quoted only
    as a short excerpt (:data:`EXCERPT`).
    """
    name = found.exercise
    for index, (devices, outcome) in enumerate(outcomes.items()):
        want = wants.get(devices)
        status, message, hint, got_text, want_text = _judge_one(found, name, outcome, want,
                                                                brief)
        if status != msg.PASSED and index > 0 and status in (msg.FAILED, msg.ERROR):
            # right on the first device count, wrong on another: unless the outcome itself
            # names the mistake, the likeliest is a fixed device count
            hint = hint or common.HINT_DEVICE_COUNT
        if status != msg.PASSED:
            return TestResult(
                test=found.name,
                points=0,
                max_points=found.points,
                status=status,
                message=message,
                hint=hint,
                devices=[devices],
                got=got_text,
                want=want_text,
                hidden=found.hidden,
            )
    return TestResult(
        test=found.name,
        points=found.points,
        max_points=found.points,
        status=msg.PASSED,
        devices=sorted(outcomes, reverse=True),
        hidden=found.hidden,
    )


def decide_all(found: Sequence[Case], outcomes: dict[str, dict[int, dict]],
               wants: dict[str, dict[int, dict | None]], brief: bool = False) -> list[TestResult]:
    """Judge every case of ``found`` (:func:`decide`, ``brief`` as there), from the student's
    and the reference's outcomes by case id and device count.

    A test of how a function computes (one whose reference measure was verified) counts on
    a device count only where every other test of its exercise passed on it: a program with
    the right collectives that computes the wrong values is worth nothing (the grader cannot
    tell it from a decoy), and ``check()`` in a kernel, which sees only the public tests,
    says so by the same rule."""
    how = tests_of_how(found, wants)
    wrong = values_wrong(found, outcomes, wants)
    return [decide(c, {n: {**outcome, "values_wrong": True} if (c.exercise, n) in wrong
                       else outcome for n, outcome in outcomes[c.id].items()}
                   if c.id in how else outcomes[c.id], wants[c.id], brief) for c in found]


def tests_of_how(found: Sequence[Case], wants: dict[str, dict[int, dict | None]]) -> set[str]:
    """The ids of the cases that test how a function computes: those whose reference measure
    was verified."""
    return {c.id for c in found if any(w and w.get("ok") and plain.verified_paths(w.get("data"))
                                       for w in wants[c.id].values())}


def values_wrong(found: Sequence[Case], outcomes: dict[str, dict[int, dict]],
                 wants: dict[str, dict[int, dict | None]]) -> set[tuple[str, int]]:
    """The (exercise, device count) pairs where a test of the exercise's values fails."""
    how = tests_of_how(found, wants)
    return {(c.exercise, n) for c in found if c.id not in how
            for n, outcome in outcomes[c.id].items()
            if _judge_one(c, c.exercise, outcome, wants[c.id].get(n))[0] != msg.PASSED}


def _judge_one(found: Case, name: str, outcome: dict, want: dict | None, brief: bool = False):
    if outcome.get("missing"):
        return msg.NOT_FOUND, outcome["missing"], None, None, None
    if "timeout" in outcome:
        text = msg.MSG_TIMEOUT.format(seconds=outcome["timeout"], devices=outcome["devices"])
        return msg.TIMEOUT, text, None, None, None
    if "crashed" in outcome:
        text = msg.MSG_CRASHED.format(name=name, devices=outcome["devices"], how=outcome["crashed"])
        return msg.CRASHED, text, None, None, None
    if "not_run" in outcome:
        return msg.ERROR, msg.MSG_NOT_RUN.format(reason=outcome["not_run"]), None, None, None
    # In grading, what a submission wrote reaches feedback only as a short excerpt: its code
    # runs next to the hidden tests and could carry them out in an error message, a name or
    # a value. The verifier's reasons (the grader's words, quoting a little of a program) are
    # cut a little longer.
    limit, reason = (EXCERPT, BRIEF_MESSAGE) if brief else (MESSAGE, MESSAGE)
    if "tampered" in outcome:
        what = _shorten(changes(outcome["tampered"]), limit)
        return msg.FAILED, msg.MSG_TAMPERED.format(name=name, what=what), None, None, None
    if "unverified" in outcome:
        why = _shorten(str(outcome["unverified"]), reason)
        return msg.ERROR, msg.MSG_UNVERIFIED.format(name=name, why=why), None, None, None
    if "unreadable" in outcome:  # the grader's own reason (see grader.workers.replies)
        text = msg.MSG_BAD_DATA.format(name=name, problem=outcome["unreadable"])
        return msg.ERROR, text, None, None, None
    if "threads" in outcome:
        text = msg.MSG_THREADS.format(name=name, count=outcome["threads"])
        return msg.FAILED, text, None, None, None
    if not outcome.get("ok"):
        error = outcome.get("error") or {}
        if error.get("type") == "NotImplementedError":
            return msg.NOT_ATTEMPTED, msg.MSG_NOT_ATTEMPTED.format(name=name), None, None, None
        full = str(error.get("message", ""))
        if error.get("type") == plain.NotPlain.__name__:  # raised reading what it returned
            text = msg.MSG_BAD_DATA.format(name=name, problem=_shorten(full, limit))
            return msg.ERROR, text, None, None, None
        kind = str(error.get("type", "an error"))
        kind = kind if len(kind) <= TYPE_NAME else kind[:TYPE_NAME - 3] + "..."
        text = msg.MSG_RAISED.format(name=name, type=kind, message=_shorten(full, limit))
        hint = error_hint(full, str(error.get("where", "")), str(error.get("type", "")))
        return msg.ERROR, text, hint, None, None
    if want is None or not want.get("ok"):
        problem = (want or {}).get("error", {}).get("message", "no reference result")
        return msg.ERROR, msg.MSG_REFERENCE_FAILED.format(problem=problem), None, None, None
    try:
        got_data = plain.from_plain(outcome.get("data"))
        want_data = plain.from_plain(want["data"])
    except plain.NotPlain as exc:
        return msg.ERROR, msg.MSG_BAD_DATA.format(name=name, problem=exc), None, None, None
    if not isinstance(got_data, dict):
        problem = "measurements are not a dict"
        return msg.ERROR, msg.MSG_BAD_DATA.format(name=name, problem=problem), None, None, None
    verdict = found.judge(got_data, want_data)
    if verdict.passed:
        # where the reference's measure was verified, a student's that was not can only fail
        # (but for a hint's material, made for the reference alone: see plain.Material)
        unverified = plain.verified_paths(want["data"]) - plain.verified_paths(outcome.get("data"))
        if any(not top.startswith("_") or top in got_data
               for top in (path.split("/")[1] for path in unverified)):
            return msg.FAILED, msg.MSG_NOT_VERIFIED.format(name=name), None, None, None
        if outcome.get("values_wrong"):  # see decide_all
            return msg.FAILED, msg.MSG_HOW_NEEDS_VALUES.format(name=name), None, None, None
        if "differs" in outcome:  # its program was measured, but computes something else
            why = _shorten(str(outcome["differs"]), reason)
            return msg.FAILED, msg.MSG_DIFFERS.format(name=name, why=why), None, None, None
        return msg.PASSED, "", None, None, None
    # a judge's message may quote what the function returned (the keys of a dict, say)
    message = _shorten(verdict.message, BRIEF_MESSAGE) if brief else verdict.message
    if verdict.said_all:  # no raw measurements under a message that names them
        return msg.FAILED, message, verdict.hint, None, None
    shown = [k for k in want_data if not k.startswith("_")]
    got_text = _show(got_data, shown, brief)
    want_text = None if found.hidden else _show(want_data, shown)
    return msg.FAILED, message, verdict.hint, got_text, want_text


def changes(names: Any, shown: int = 4) -> str:
    """The first few names a seal restored (a worker's list: anything), for a message."""
    names = names if isinstance(names, list) else [names]
    text = ", ".join(str(n)[:80] for n in names[:shown])
    return text + (f" and {len(names) - shown} more" if len(names) > shown else "")


#: What JAX appends to an error raised inside a transformation: of no use to a student.
_JAX_FOOTER = re.compile(r"\n-{10,}\n.*", re.S)
#: A JAX internal function named in an error ("shard_map applied to the function
#: '_rem_singleton' was given ..."): the student never wrote it, so it is left out.
_INTERNAL_FUNCTION = re.compile(r"(?:^|\s)(?:applied )?to the function '_\w*'\s*")


#: The longest excerpt of what a submission wrote (an error's message, what it returned) that
#: ``check()`` shows, and that the grader's feedback shows: in the grader the submission's
#: code runs next to the hidden tests and could otherwise copy them out piece by piece.
MESSAGE, EXCERPT = 700, 80
#: The longest message of a judge in the grader's feedback (its own words, and what it
#: quotes of the function's results, the keys of a dict say).
BRIEF_MESSAGE = 300
#: The longest name of an exception's type shown (a submission names its own classes).
TYPE_NAME = 40


def _shorten(text: str, limit: int = MESSAGE) -> str:
    """An error message as one readable line: its paragraphs joined (JAX puts the
    explanation after the first), JAX's own function names and trailing notes left out, cut
    after the last whole sentence within ``limit`` characters."""
    text = _INTERNAL_FUNCTION.sub(" ", _JAX_FOOTER.sub("", text.strip())).strip()
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    joined = " ".join(p if p[-1] in ".:;!?" else p + "." for p in paragraphs[:-1])
    joined = f"{joined} {paragraphs[-1]}".strip() if paragraphs else ""
    if len(joined) <= limit:
        return joined
    cut = joined[: limit - 4]
    end = max(cut.rfind(". "), cut.rfind(": "))
    return (cut[: end + 1] if end > limit // 2 else cut) + " ..."


def _show(data: dict, keys: list[str], brief: bool = False) -> str:
    """What a function returned, for feedback: in grading (``brief``) an excerpt."""
    shown = data.get("result") if keys == ["result"] else {k: data[k] for k in keys if k in data}
    return plain.describe(shown, EXCERPT) if brief else plain.describe(shown)
