"""The public tests' stored expected values against the reference solutions."""

import pytest

from grader import cases, expected, notebooks
from grader.course import LESSONS


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_stored_expected_values_match_the_reference_solutions(lesson):
    """Would `make expected` change a lesson's stored expected values? (It must not.)"""
    fresh = expected.compute(notebooks.SOLUTIONS, lesson)
    assert expected.render(fresh) == expected.path(lesson).read_text()


def test_expected_values_cover_every_public_case_and_device_count():
    """Can check() find an expected value for each public test on 1, 2, 4 and 8 devices?"""
    stored = expected.load()
    for found in cases.load(hidden=False):
        assert sorted(stored[found.id], key=int) == [str(n) for n in expected.DEVICE_COUNTS]
