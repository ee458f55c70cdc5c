"""Usual mistakes written as a student would write them, for the tests of hints
(test_mistakes_*.py): each is run through check() on this process's 8 devices, and must fail
with its own hint and no other."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from grader import messages as msg
from grader.check import check
from grader.course import EXERCISES


class Mistakes:
    """A list of (exercise, wrong function, expected hint) for pytest.mark.parametrize."""

    def __init__(self) -> None:
        self.params: list = []

    def __call__(self, exercise: str, hint: str, label: str | None = None,
                 also: tuple[str, ...] = ()) -> Callable[[Callable], Callable]:
        """Register the decorated function as a mistake in ``exercise`` whose (first) hint
        must be ``hint``; other tests may only give the hints ``also`` (true of the same
        mistake). The test id is ``label`` or the function's own name; check sees it as
        ``exercise``."""

        def register(fn: Callable) -> Callable:
            name = label or fn.__name__
            fn.__name__ = fn.__qualname__ = exercise
            self.params.append(pytest.param(fn, hint, also, id=f"{exercise}-{name}"))
            return fn

        return register


def hints_given(fn: Callable) -> tuple[object, set[str]]:
    """check(fn), and every hint its tests give."""
    result = check(fn)
    return result, {t.hint for t in result.tests if t.hint}


def assert_only_hint(fn: Callable, hint: str, also: tuple[str, ...] = ()) -> None:
    """fn fails check(), the hint shown is ``hint``, and no test gives a hint other than it
    and those of ``also``."""
    result, given = hints_given(fn)
    assert result.points < result.max_points, str(result)
    assert result.hint == hint, str(result)
    assert given - {hint} <= set(also), str(result)


def assert_passes_without_hint(fn: Callable) -> None:
    result, given = hints_given(fn)
    assert result.status == msg.PASSED, str(result)
    assert given == set()


def hidden_case(case_id: str):
    """The hidden test ``case_id`` ("exercise:test"); a LookupError naming the exercise's
    hidden tests if there is none (a name mistyped, or a test renamed since)."""
    from grader.framework import cases

    found = {c.id: c for c in cases.load(hidden=True)}.get(case_id)
    if found is None:
        known = ", ".join(c.id for c in cases.load(hidden=True)
                          if c.exercise == case_id.split(":")[0])
        raise LookupError(f"no hidden test {case_id!r}; the exercise's are: {known or 'none'}")
    return found


def hidden_result(case_id: str, fn: Callable, reference: Callable):
    """A hidden case judged in this process, on its devices: ``fn`` measured by the case's
    probe against ``reference``, as the grader would judge them."""
    import jax

    from grader.framework import cases

    found = hidden_case(case_id)
    n = jax.device_count()
    # as the grader measures them: the hints' material made for the reference alone
    return cases.decide(found, {n: cases.measure(found, fn, material=False)},
                        {n: cases.measure(found, reference)})


def assert_hidden_hint(case_id: str, wrong: Callable, hint: str,
                       correct: dict[str, Callable]) -> None:
    """The hidden case ``case_id`` fails ``wrong`` with ``hint``, and passes the correct
    function of its exercise (``correct``, by name) without a hint."""
    name = case_id.split(":")[0]
    wrong.__name__ = name
    result = hidden_result(case_id, wrong, correct[name])
    assert result.status == msg.FAILED and result.hint == hint, str(result)
    right = hidden_result(case_id, correct[name], correct[name])
    assert right.status == msg.PASSED and right.hint is None, str(right)


def lesson_tests(mistake: Mistakes, correct: dict[str, Callable], lesson: str) -> tuple:
    """The three tests every lesson's module of mistakes runs: each mistake gets its own hint,
    every exercise of ``lesson`` has at least two tested mistakes, and the correct function of
    each exercise (``correct``, by name) passes without a hint. Bind them to test names in the
    module: ``test_a, test_b, test_c = lesson_tests(...)``."""
    names = [e.name for e in EXERCISES if e.lesson == lesson]

    @pytest.mark.parametrize("fn, hint, also", mistake.params)
    def test_a_usual_mistake_gets_its_own_hint(fn, hint, also):
        """Does this mistaken function fail check() with the hint for its mistake, and no
        hint that would point elsewhere?"""
        assert_only_hint(fn, hint, also)

    def test_every_exercise_of_the_lesson_has_two_mistakes_with_hints():
        """Does each exercise of the lesson have at least two mistakes whose hints are
        tested?"""
        counts = dict.fromkeys(names, 0)
        for param in mistake.params:
            counts[param.values[0].__name__] += 1
        assert min(counts.values()) >= 2, counts

    @pytest.mark.parametrize("name", names)
    def test_a_correct_function_gets_no_hint(name):
        """Does a correct function of each exercise pass check() with no hint at all?"""
        assert_passes_without_hint(correct[name])

    return (test_a_usual_mistake_gets_its_own_hint,
            test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
            test_a_correct_function_gets_no_hint)


def replayed_result(case_id: str, cell: str, reference_cell: str):
    """A hidden case of lesson 6 judged in this process as the grader judges it. Its probe
    replays the cells a grader worker ran in several new processes
    (:func:`grader.workers.replay.replay`): here one cell, ``cell``, which defines the
    exercise's function as a student would write it, then ``reference_cell`` for the value
    expected. Each runs its processes for real (several seconds); the reference's measurement
    is kept for the next call on the same case."""
    import io

    import jax

    from grader.framework import cases
    from grader.remote import Remote
    from grader.workers import replay
    from grader.workers.record import RECORD
    from grader.workers.worker import SEALED, Worker

    found = hidden_case(case_id)

    def measured(source: str) -> dict:
        namespace: dict = {}
        exec(compile(source, "answer.py", "exec"), namespace)  # noqa: S102 - the test's own code
        saved = RECORD.cells, RECORD.namespaces
        worker = Worker(io.StringIO())  # answers the test's requests here, as a worker would
        worker.namespaces["answer.py"] = namespace
        RECORD.cells = {"answer.py": [("cell 1", source)]}

        def ask(request: dict) -> dict:
            request = dict(request)
            return SEALED[request.pop("op")](worker, **request)

        try:
            return cases.measure(found, Remote(ask, name=found.exercise))
        finally:
            RECORD.cells, RECORD.namespaces = saved
            replay.close()  # the processes a worker would keep for its next replay

    n = jax.device_count()
    key = (case_id, reference_cell)
    if key not in _REPLAYED_REFERENCES:
        _REPLAYED_REFERENCES[key] = measured(reference_cell)
    got = _REPLAYED_REFERENCES[key] if cell == reference_cell else measured(cell)
    return cases.decide(found, {n: got}, {n: _REPLAYED_REFERENCES[key]})


#: The reference's measurement of each case replayed so far: (case id, cell) -> outcome.
_REPLAYED_REFERENCES: dict[tuple[str, str], dict] = {}
