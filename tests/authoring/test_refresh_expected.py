"""Recomputing the public tests' expected values (grader/authoring/refresh_expected.py): the
stored values are what the reference solutions give."""

import json

import pytest

from grader import course
from grader.authoring import refresh_expected
from grader.course import LESSONS
from grader.framework import expected
from grader.grading.grade import GradingError


def same(stored, fresh) -> list[str]:
    """Where two stored tables differ, in anything but the last bits of a float (which depend
    on the CPU XLA compiled for, not on the solutions): the tolerance refresh uses too."""
    return expected.differences(stored, fresh)


@pytest.mark.slow
@pytest.mark.parametrize("lesson", LESSONS)
def test_stored_expected_values_match_the_reference_solutions(lesson):
    """Would `make expected` change a lesson's stored expected values, beyond the last bits
    of a float? (It must not.)"""
    fresh = json.loads(refresh_expected.render(refresh_expected.compute(course.SOLUTIONS, lesson)))
    stored = json.loads(expected.path(lesson).read_text())
    assert same(stored, fresh) == []


@pytest.mark.slow
def test_a_reference_that_fails_says_why(tmp_path):
    """Does a failing reference name the case and what went wrong (the error raised, the
    function missing, or why no worker could start), not the case alone?"""
    (tmp_path / "broken.py").write_text(
        "def is_congruent(shape, blocks):\n    raise ValueError('broken on purpose')\n")
    reason = "(broken on purpose|no function named)"  # the first case to fail: either
    with pytest.raises(GradingError, match=rf"fails \S+:\S+ on 1 devices: .*{reason}"):
        refresh_expected.compute(tmp_path, "01_sharding")


def test_stored_values_are_compared_to_the_last_bits_of_a_float_only():
    """Is a float off in its last bits the same, and one off in the fourth digit, another
    key, or another text not? Is a program's recorded result, which check() compares ten
    times as loosely, allowed ten times as much, and only that?"""
    value = {"array": [1.0, 2.0], "kind": "float", "dtype": "float32", "shape": [2]}
    assert same(value, {**value, "array": [1.0000001, 2.0]}) == []
    assert same(value, {**value, "array": [1.0001, 2.0]}) == [""]
    assert same(value, {**value, "array": [1.001, 2.0]}) == [""]
    record = {"case": {"record": {"results": [value]}, "value": value}}
    off = {**value, "array": [1.0001, 2.0]}
    assert same(record, {"case": {"record": {"results": [off]}, "value": value}}) == []
    assert same(record, {"case": {"record": {"results": [value]}, "value": off}}) == ["/case/value"]
    assert same(record, {"case": {"record": {"results": [{**value, "array": [1.001, 2.0]}]},
                                  "value": value}}) == ["/case/record/results/0"]
    assert same({"a": value}, {"b": value}) != []
    assert same({"str": "psum"}, {"str": "pmax"}) == ["/str"]


def test_a_refresh_with_nothing_new_leaves_the_file_byte_identical(tmp_path, monkeypatch):
    """Does refresh keep each stored float that the recomputed one matches within the
    tolerance of the test above, writing the same bytes; and does it store a float that
    really changed, and any new value?"""
    value = {"array": [[0.1234567, 2.0], [3.0, -4.5]], "dtype": "float32", "kind": "float",
             "shape": [2, 2]}
    stored = {"case": {"1": {"ok": True, "value": value}, "2": {"ok": True, "value": value}}}
    noisy = {**value, "array": [[0.12345671, 2.0000002], [3.0, -4.5000005]]}
    fresh = {"case": {"1": {"ok": True, "value": noisy}, "2": {"ok": True, "value": noisy}}}
    monkeypatch.setattr(refresh_expected, "FOLDER", tmp_path)
    monkeypatch.setattr(refresh_expected, "path", lambda lesson: tmp_path / f"{lesson}.json")
    lesson = LESSONS[0]
    file = tmp_path / f"{lesson}.json"
    file.write_text(refresh_expected.render(stored))
    before = file.read_bytes()

    monkeypatch.setattr(refresh_expected, "compute", lambda solutions, lesson, **how: fresh)
    assert same(stored, fresh) == []  # the noise is within the test's tolerance
    refresh_expected.refresh([lesson])
    assert file.read_bytes() == before

    changed = {"case": {"1": {"ok": True, "value": {**value, "array": [[0.13, 2.0], [3.0, -4.5]]}},
                        "2": {"ok": True, "value": noisy, "extra": 1}}}
    monkeypatch.setattr(refresh_expected, "compute", lambda solutions, lesson, **how: changed)
    refresh_expected.refresh([lesson])
    written = json.loads(file.read_text())["cases"]["case"]
    assert written["1"]["value"]["array"][0][0] == 0.13
    assert written["2"] == {"ok": True, "value": value, "extra": 1}  # the float kept, 'extra' new


def test_an_exercise_is_refreshed_alone_and_its_lesson_keeps_the_rest(tmp_path, monkeypatch):
    """`refresh-expected device_keys` (make exercise's step): does it run only that exercise's
    tests, keep every other stored value of its lesson, drop a test of it that is gone, and
    refuse a name that is neither a lesson nor an exercise, naming it?"""
    assert refresh_expected.chosen(["device_keys"]) == {"04_prng": ["device_keys"]}
    assert refresh_expected.chosen(["device_keys", "04_prng"]) == {"04_prng": None}
    assert refresh_expected.chosen(["04_prng", "device_keys"]) == {"04_prng": None}
    assert list(refresh_expected.chosen([])) == list(LESSONS)
    with pytest.raises(ValueError, match="not a lesson or an exercise of the course: dvice_keys"):
        refresh_expected.chosen(["dvice_keys"])
    value = {"ok": True, "value": {"str": "kept"}}
    stored = {"device_keys:old": {"8": value}, "device_keys:same": {"8": value},
              "replicated_noise:values": {"8": value}}
    monkeypatch.setattr(refresh_expected, "FOLDER", tmp_path)
    monkeypatch.setattr(refresh_expected, "path", lambda lesson: tmp_path / f"{lesson}.json")
    (tmp_path / "04_prng.json").write_text(refresh_expected.render(stored))
    asked = []

    def compute(solutions, lesson, exercises=None, say=None):
        asked.append((lesson, exercises))
        return {"device_keys:same": {"8": {"ok": True, "value": {"str": "new"}}}}

    monkeypatch.setattr(refresh_expected, "compute", compute)
    refresh_expected.refresh(["device_keys"])
    written = json.loads((tmp_path / "04_prng.json").read_text())["cases"]
    assert asked == [("04_prng", ["device_keys"])]
    assert written == {"device_keys:same": {"8": {"ok": True, "value": {"str": "new"}}},
                       "replicated_noise:values": {"8": value}}
