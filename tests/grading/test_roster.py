"""The roster and the submission times: read as written, and a one-line error naming the file
and the line for each mistake."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from grader.grading.roster import RosterError, read_roster, read_times


def test_a_roster_gives_ids_names_emails_and_extensions(tmp_path):
    path = tmp_path / "roster.csv"
    path.write_text("name,id,display_name,email,extension_days,extension_days:04_prng\n"
                    "ada,s1,Ada Lovelace,ada@example.org,,\n"
                    "ben,s2,Ben,ben@example.org,2,0.5\n"
                    "cy,,,,,\n")
    people = read_roster(path, ("03_collectives", "04_prng"))
    assert list(people) == ["ada", "ben", "cy"]
    assert (people["ada"].id, people["ada"].display_name, people["ada"].email) == (
        "s1", "Ada Lovelace", "ada@example.org")
    assert people["ada"].extension("04_prng") == timedelta(0)
    assert people["ben"].extension("03_collectives") == timedelta(days=2)
    assert people["ben"].extension("04_prng") == timedelta(hours=12)  # its own column wins


@pytest.mark.parametrize(("text", "line", "says"), [
    ("name,id\nada,1\nben,2\nada,3\n", 4, "'ada' is listed twice"),
    ("name,student_number\nada,1\n", 1, "unknown column 'student_number'; columns: name, id"),
    ("name,extension_days:09_quantum\n", 1, "unknown column 'extension_days:09_quantum'"),
    ("id,email\n1,a@b\n", 1, "no name column"),
    ("name,id\nada,1\n,2\n", 3, "a row without a name"),
    ("name,extension_days\nada,soon\n", 2, "extension_days is 'soon': a number of days"),
    ("name,extension_days\nada,-1\n", 2, "extension_days is '-1'"),
    ("name,id\nada,1,2\n", 2, "more cells than the header has columns"),
    ("", 1, "the file is empty"),
])
def test_every_roster_mistake_is_one_line_naming_the_file_and_line(tmp_path, text, line, says):
    path = tmp_path / "roster.csv"
    path.write_text(text)
    with pytest.raises(RosterError) as raised:
        read_roster(path, ("03_collectives",))
    assert str(raised.value).startswith(f"{path}:{line}: ") and says in str(raised.value)
    assert "\n" not in str(raised.value)


def test_times_with_and_without_an_offset(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text("name,submitted_at\nada,2027-01-29T23:00:00+01:00\nben,2027-01-29 22:30\n")
    times = read_times(path, ZoneInfo("Europe/Paris"))
    assert times["ada"] == datetime(2027, 1, 29, 22, 0, tzinfo=UTC)
    assert times["ben"] == datetime(2027, 1, 29, 21, 30, tzinfo=UTC)


@pytest.mark.parametrize(("text", "line", "says"), [
    ("student,time\nada,2027-01-01T00:00:00Z\n", 1, "the header must be exactly"),
    ("name,submitted_at\nada,yesterday\n", 2, "'yesterday' is not a date and time"),
    ("name,submitted_at\nada,2027-01-01T00:00:00Z\nada,2027-01-02T00:00:00Z\n", 3,
     "listed twice"),
    ("name,submitted_at\nada,2027-01-01T10:00\n", 2, "has no time zone"),
])
def test_every_times_mistake_is_one_line_naming_the_file_and_line(tmp_path, text, line, says):
    path = tmp_path / "times.csv"
    path.write_text(text)
    with pytest.raises(RosterError) as raised:
        read_times(path, None)
    assert str(raised.value).startswith(f"{path}:{line}: ") and says in str(raised.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(RosterError, match=r"roster.csv: No such file"):
        read_roster(tmp_path / "roster.csv")
