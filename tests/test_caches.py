"""The bounded cache a verifier keeps its work in (grader/caches.py)."""

import pytest

from grader.caches import Newest


def test_the_value_used_least_recently_goes_first_and_the_size_holds():
    """With room for two, is a value made once while kept, and is the one used least
    recently the one dropped?"""
    made = []
    kept = Newest(2)

    def make(key):
        return lambda: made.append(key) or key.upper()

    assert kept.get("a", make("a")) == "A"
    assert kept.get("b", make("b")) == "B"
    assert kept.get("a", make("a")) == "A"  # kept, and now the newest
    assert kept.get("c", make("c")) == "C"  # "b" goes
    assert len(kept) == 2
    assert kept.get("a", make("a")) == "A" and kept.get("b", make("b")) == "B"
    assert made == ["a", "b", "c", "b"]


def test_nothing_is_kept_when_making_the_value_fails():
    """Is a value whose making raised made again next time, not kept as a failure?"""
    kept = Newest(4)

    def fails():
        raise ValueError("no")

    with pytest.raises(ValueError):
        kept.get("x", fails)
    assert len(kept) == 0 and kept.get("x", lambda: 1) == 1
