"""The public tests' stored expected values, as check() reads them (framework/expected.py)."""

from grader.framework import cases, expected


def test_expected_values_cover_every_public_case_and_device_count():
    """Can check() find an expected value for each public test on 1, 2, 4 and 8 devices?"""
    stored = expected.load()
    for found in cases.load(hidden=False):
        assert sorted(stored[found.id], key=int) == [str(n) for n in expected.DEVICE_COUNTS]
