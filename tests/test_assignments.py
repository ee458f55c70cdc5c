"""course.toml: the assignments, their due dates and late policies, and a one-line error naming
the file and the line for every mistake in it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from grader import assignments
from grader.assignments import Assignment, ConfigError, LatePolicy
from grader.course import EXERCISES, LESSONS


def write(tmp_path, text: str):
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


def test_the_course_config_declares_one_assignment_per_lesson():
    """Does the shipped course.toml give each lesson an assignment of exactly its exercises,
    with a due date that has a time zone?"""
    found = assignments.load()
    assert list(found) == list(LESSONS)
    for lesson, assignment in found.items():
        assert assignment.exercises == tuple(e.name for e in EXERCISES if e.lesson == lesson)
        assert assignment.due is not None and assignment.due.utcoffset() is not None


def test_lessons_and_exercises_make_one_assignment_in_course_order(tmp_path):
    path = write(tmp_path, """
timezone = "Europe/Paris"
[late]
percent_per_day = 20
[assignments.mixed]
exercises = ["halo_difference", "is_congruent"]
lessons = ["04_prng"]
due = 2027-01-10T12:00:00
late = { max_percent = 30 }
[assignments.bare]
exercises = ["block_map"]
""")
    found = assignments.load(path)
    mixed = found["mixed"]
    prng = [e.name for e in EXERCISES if e.lesson == "04_prng"]
    assert mixed.exercises == ("is_congruent", "halo_difference", *prng)
    assert mixed.lessons == ("01_sharding", "03_collectives", "04_prng")
    assert mixed.due == datetime(2027, 1, 10, 11, 0, tzinfo=UTC)  # Paris is UTC+1 in January
    assert mixed.late == LatePolicy(percent_per_day=20, grace_minutes=0, max_percent=30)
    assert found["bare"].due is None and found["bare"].late == LatePolicy(percent_per_day=20)


def test_a_date_alone_is_due_by_its_end(tmp_path):
    """Is ``due = 2027-01-10`` the midnight that ends that day, in the course's time zone (and
    refused, on its line, when the course sets none)?"""
    text = ('[assignments.a]\nexercises = ["halo_difference"]\ndue = 2027-01-10T00:00:00Z\n'
            '[assignments.b]\nexercises = ["halo_difference"]\ndue = 2027-01-10\n')
    with pytest.raises(ConfigError, match=r"course.toml:6: due = 2027-01-10 has no time zone"):
        assignments.load(write(tmp_path, text))
    found = assignments.load(write(tmp_path, 'timezone = "UTC"\n' + text))
    assert found["b"].due - found["a"].due == timedelta(days=1)


@pytest.mark.parametrize(("days_late", "hours", "percent"), [
    (0, 0.2, 0),      # within the 15 minutes of grace
    (1, 0.5, 10),     # a started day is a day
    (1, 24, 10),
    (2, 24.01, 20),
    (5, 24 * 4.5, 50),
    (10, 24 * 10, 50),  # capped
])
def test_days_late_and_the_percentage_they_cost(days_late, hours, percent):
    policy = LatePolicy(percent_per_day=10, grace_minutes=15, max_percent=50)
    due = datetime(2027, 1, 10, 23, 59, tzinfo=UTC)
    assert policy.days_late(due + timedelta(hours=hours), due) == days_late
    assert policy.percent(days_late) == percent
    assert policy.days_late(due - timedelta(days=3), due) == 0


@pytest.mark.parametrize(("text", "line", "says"), [
    ('timezone = "UTC"\n[late]\npercent_per_dya = 5\n', 3,
     "unknown key 'percent_per_dya' in [late]; known keys: percent_per_day, grace_minutes"),
    ('[assignments.a]\nlessons = ["01_sharding"]\ndue = 2027-13-01T00:00:00Z\n', 3,
     "due = 2027-13-01T00:00:00Z is not a real date (month must be in 1..12)"),
    ('[assignments.a]\nlessons = ["01_sharding"]\ndue = 2027-01-32  # the last day\n', 3,
     "due = 2027-01-32 is not a real date (day is out of range for month)"),
    ('[assignments.a]\nlessons = ["01_sharding"]\ndue = 2027-01-31T23:59:00Z x\n', 3,
     "not valid TOML: Expected newline or end of document after a statement in: due = "
     "2027-01-31T23:59:00Z x"),
    ('timezone = "UTC"\n\n[assignments.a]\nlessons = ["01_sharding"]\ndue = "next friday"\n', 5,
     "due = 'next friday' is not a date and time"),
    ('[assignments.a]\nlessons = ["01_sharding"]\n\ndue = 2027-01-01T00:00:00\n', 4,
     "has no time zone"),
    ('[assignments.a]\nlessons = ["01_shard"]\n', 2, "unknown lesson '01_shard'"),
    ('[assignments.a]\nexercises = ["ring_shfit"]\n', 2, "unknown exercise 'ring_shfit'"),
    ('[assignments.a]\nlessons = "01_sharding"\n', 2, "lessons must be a list of names"),
    ('[assignments.a]\n', 1, "assignment 'a' asks for no exercise"),
    ('[assignments.a]\nlessons = ["01_sharding"]\nlate = { percent_per_day = 200 }\n', 3,
     "percent_per_day must be a number from 0 to 100, not 200"),
    ('timezone = "Mars/Olympus"\n', 1, "timezone 'Mars/Olympus' is not a time zone name"),
    ('[assignments.a]\nlessons = ["01_sharding"]\nowner = "me"\n', 3,
     "unknown key 'owner' in [assignments.a]"),
    ('title = "x"\n[assignments.a]\n', 1, "unknown key 'title' in the top level"),
    ('[assignments.a\n', 1, "Expected ']'"),
])
def test_every_mistake_is_one_line_naming_the_file_and_line(tmp_path, text, line, says):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as raised:
        assignments.load(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert says in message and "\n" not in message


def test_an_unknown_assignment_lists_the_known_ones():
    with pytest.raises(ConfigError, match="no assignment 'prgn' in .*course.toml; its "
                       "assignments: 01_sharding, 02_jit_sharding, 03_collectives"):
        assignments.find("prgn")
    assert isinstance(assignments.find("04_prng"), Assignment)
