"""Recomputing the public tests' expected values (grader/authoring/refresh_expected.py): the
stored values are what the reference solutions give."""

import json

import numpy as np
import pytest

from grader import course, expected
from grader.authoring import refresh_expected
from grader.course import LESSONS


def same(stored, fresh, where="") -> list[str]:
    """Where two stored tables differ: in anything but the last bits of a float, which
    depend on the CPU XLA compiled for (its vector instructions), not on the solutions."""
    if isinstance(stored, dict) and isinstance(fresh, dict):
        if stored.get("kind") == "float" and fresh.get("kind") == "float":
            if stored.keys() == fresh.keys() and all(
                    stored[k] == fresh[k] for k in stored if k != "array") and np.allclose(
                    stored["array"], fresh["array"], rtol=1e-5, atol=1e-6, equal_nan=True):
                return []
            return [where]
        if stored.keys() != fresh.keys():
            return [f"{where}: keys {sorted(stored)} != {sorted(fresh)}"]
        return [d for k in stored for d in same(stored[k], fresh[k], f"{where}/{k}")]
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        return [d for i, (a, b) in enumerate(zip(stored, fresh, strict=True)) for d in
                same(a, b, f"{where}/{i}")]
    return [] if stored == fresh else [where]


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_stored_expected_values_match_the_reference_solutions(lesson):
    """Would `make expected` change a lesson's stored expected values, beyond the last bits
    of a float? (It must not.)"""
    fresh = json.loads(refresh_expected.render(refresh_expected.compute(course.SOLUTIONS, lesson)))
    stored = json.loads(expected.path(lesson).read_text())
    assert same(stored, fresh) == []


def test_stored_values_are_compared_to_the_last_bits_of_a_float_only():
    """Is a float off in its last bits the same, and one off in the fourth digit, another
    key, or another text not?"""
    value = {"array": [1.0, 2.0], "kind": "float", "dtype": "float32", "shape": [2]}
    assert same(value, {**value, "array": [1.0000001, 2.0]}) == []
    assert same(value, {**value, "array": [1.001, 2.0]}) == [""]
    assert same({"a": value}, {"b": value}) != []
    assert same({"str": "psum"}, {"str": "pmax"}) == ["/str"]
