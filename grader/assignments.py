"""The course's assignments, declared in ``course.toml``: which exercises each asks for, when
it is due, and what handing it in late costs.

``grade --assignment NAME`` grades only that assignment's exercises and applies its late
policy; ``release --assignment NAME`` hands out only what it needs. Every mistake in the file
is one :class:`ConfigError` naming the file and the line.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from grader import messages as msg
from grader.course import EXERCISES, LESSONS, ROOT

CONFIG = ROOT / "course.toml"
DAY = timedelta(days=1)
#: The keys each table may hold.
TOP_KEYS = ("timezone", "late", "assignments")
LATE_KEYS = ("percent_per_day", "grace_minutes", "max_percent")
ASSIGNMENT_KEYS = ("lessons", "exercises", "due", "late")


class ConfigError(ValueError):
    """A mistake in the course config; the message starts with ``FILE:LINE:``."""


@dataclass(frozen=True)
class LatePolicy:
    """What a late submission costs: ``percent_per_day`` of the points it earned for each day
    or part of a day after the due date, nothing within ``grace_minutes`` of it, and never more
    than ``max_percent`` in all."""

    percent_per_day: float = 0.0
    grace_minutes: float = 0.0
    max_percent: float = 100.0

    def days_late(self, submitted: datetime, due: datetime) -> int:
        """Whole days late, a started day counting as one; 0 within the grace period."""
        late = submitted - due
        if late <= timedelta(minutes=self.grace_minutes):
            return 0
        return math.ceil(late / DAY)

    def percent(self, days: int) -> float:
        """The share of the points taken for ``days`` days late, in percent."""
        return min(self.max_percent, self.percent_per_day * days)


@dataclass(frozen=True)
class Assignment:
    """Some of the course's exercises, handed in together by a due date."""

    name: str
    exercises: tuple[str, ...]
    due: datetime | None = None
    late: LatePolicy = LatePolicy()

    @property
    def lessons(self) -> tuple[str, ...]:
        """The lessons its exercises belong to, in course order."""
        return tuple(dict.fromkeys(e.lesson for e in EXERCISES if e.name in self.exercises))


def whole_course() -> Assignment:
    """Every exercise of the course, due never: what ``grade`` grades without --assignment."""
    return Assignment("", tuple(e.name for e in EXERCISES))


def find(name: str, path: Path = CONFIG) -> Assignment:
    """The assignment called ``name``; ConfigError, listing the known ones, if there is none."""
    known = load(path)
    if name not in known:
        raise ConfigError(msg.CONFIG_UNKNOWN_ASSIGNMENT.format(
            name=name, path=path, known=", ".join(known) or "none"))
    return known[name]


def load(path: Path = CONFIG) -> dict[str, Assignment]:
    """Every assignment declared in ``path``, in the order written."""
    return _read(path)[1]


def zone(path: Path = CONFIG) -> tzinfo | None:
    """The time zone of times written without an offset: ``timezone`` in ``path``, or None
    when it sets none (or there is no such file)."""
    return _read(path)[0] if path.exists() else None


def _read(path: Path) -> tuple[tzinfo | None, dict[str, Assignment]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        where = int(found.group(1)) if found else 1
        reason = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        lines = text.splitlines()
        said = lines[where - 1].strip()[:80] if 0 < where <= len(lines) else ""
        impossible = _impossible_date(said)
        if impossible:
            raise ConfigError(f"{path}:{where}: {impossible}") from None
        raise ConfigError(f"{path}:{where}: not valid TOML: {reason}"
                          + (f" in: {said}" if said else "")) from None
    reader = _Reader(path, text)
    return reader.zone(data.get("timezone")), reader.assignments(data)


#: A TOML date or date and time written as a key's value, whatever its numbers.
_WRITTEN_DATE = re.compile(r"^([\w.-]+)\s*=\s*(\d{4}-\d\d-\d\d(?:[Tt ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?"
                           r"(?:[Zz]|[+-]\d\d:\d\d)?)?)\s*(?:#.*)?$")


def _impossible_date(line: str) -> str | None:
    """What is wrong with a date that TOML refuses as mere syntax (32 January, month 13,
    25 o'clock), if the line holds one."""
    found = _WRITTEN_DATE.match(line)
    if not found:
        return None
    key, value = found.groups()
    try:
        datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError as exc:
        return msg.CONFIG_IMPOSSIBLE_DATE.format(key=key, value=value, why=exc)
    return None


class _Reader:
    """Reads the parsed file, with what it needs to say on which line a mistake is."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def fail(self, table: tuple[str, ...], key: str | None, message: str) -> ConfigError:
        return ConfigError(f"{self.path}:{self.line_of(table, key)}: {message}")

    def line_of(self, table: tuple[str, ...], key: str | None) -> int:
        """The line where ``key`` of ``table`` is written, else the header of the table (or of
        the nearest table around it that has one), else 1: tomllib keeps no positions."""
        header = next((found for length in range(len(table), 0, -1)
                       if (found := self._header(table[:length])) >= 0), -1)
        if key is not None:
            pattern = re.compile(rf"(^|[{{,\s.]){re.escape(key)}\s*=")
            for number in range(header + 1, len(self.lines)):
                line = self.lines[number].split("#", 1)[0]
                if re.match(r"\s*\[", line):
                    break
                if pattern.search(line):
                    return number + 1
        return header + 1 if header >= 0 else 1

    def _header(self, table: tuple[str, ...]) -> int:
        if not table:
            return -1
        wanted = ".".join(table)
        for number, line in enumerate(self.lines):
            found = re.match(r"\s*\[\s*([^\]]+?)\s*\]", line)
            if found and found.group(1).replace(" ", "") == wanted:
                return number
        return -1

    def known(self, data: dict[str, Any], table: tuple[str, ...], keys: tuple[str, ...]) -> None:
        for key in data:
            if key not in keys:
                where = f"[{'.'.join(table)}]" if table else "the top level"
                raise self.fail(table, key, msg.CONFIG_UNKNOWN_KEY.format(
                    key=key, where=where, known=", ".join(keys)))

    def assignments(self, data: dict[str, Any]) -> dict[str, Assignment]:
        self.known(data, (), TOP_KEYS)
        zone = self.zone(data.get("timezone"))
        default = self.late(data.get("late", {}), ("late",), LatePolicy())
        tables = data.get("assignments", {})
        if not isinstance(tables, dict):
            raise self.fail((), "assignments", msg.CONFIG_NOT_TABLE.format(key="assignments"))
        return {name: self.assignment(name, table, zone, default)
                for name, table in tables.items()}

    def zone(self, name: Any) -> tzinfo | None:
        if name is None:
            return None
        try:
            return ZoneInfo(str(name))
        except (ZoneInfoNotFoundError, ValueError):
            raise self.fail((), "timezone", msg.CONFIG_BAD_ZONE.format(zone=name)) from None

    def late(self, data: Any, table: tuple[str, ...], default: LatePolicy) -> LatePolicy:
        if not isinstance(data, dict):
            raise self.fail(table[:-1], table[-1], msg.CONFIG_NOT_TABLE.format(key=table[-1]))
        self.known(data, table, LATE_KEYS)
        values = {}
        for key in LATE_KEYS:
            value = data.get(key, getattr(default, key))
            top = 100 if key != "grace_minutes" else math.inf
            if isinstance(value, bool) or not isinstance(value, int | float) or not (
                    0 <= value <= top):
                raise self.fail(table, key, msg.CONFIG_BAD_NUMBER.format(
                    key=key, value=value, top="100" if top == 100 else "any"))
            values[key] = float(value)
        return LatePolicy(**values)

    def assignment(self, name: str, data: Any, zone: tzinfo | None,
                   default: LatePolicy) -> Assignment:
        table = ("assignments", name)
        if not isinstance(data, dict):
            raise self.fail(table[:1], name, msg.CONFIG_NOT_TABLE.format(key=name))
        self.known(data, table, ASSIGNMENT_KEYS)
        if "lessons" not in data and "exercises" not in data and name in LESSONS:
            data = {**data, "lessons": [name]}  # by default, the lesson it is named after
        chosen = {*self.names(data, table, "lessons", LESSONS),
                  *self.names(data, table, "exercises", tuple(e.name for e in EXERCISES))}
        exercises = tuple(e.name for e in EXERCISES if e.name in chosen)
        if not exercises:
            raise self.fail(table, None, msg.CONFIG_NO_EXERCISE.format(name=name))
        due = self.due(data.get("due"), table, zone)
        late = self.late(data.get("late", {}), (*table, "late"), default)
        return Assignment(name, exercises, due, late)

    def names(self, data: dict[str, Any], table: tuple[str, ...], key: str,
              known: tuple[str, ...]) -> list[str]:
        given = data.get(key, [])
        if not isinstance(given, list) or not all(isinstance(n, str) for n in given):
            raise self.fail(table, key, msg.CONFIG_NOT_NAMES.format(key=key))
        for name in given:
            if name not in known:
                raise self.fail(table, key, msg.CONFIG_UNKNOWN_NAME.format(
                    kind=key.removesuffix("s"), name=name, known=", ".join(known)))
        # a lesson stands for its exercises
        return [e.name for e in EXERCISES if e.lesson in given] if key == "lessons" else given

    def due(self, given: Any, table: tuple[str, ...], zone: tzinfo | None) -> datetime | None:
        if given is None:
            return None
        value = given
        if isinstance(value, str):
            try:
                value = datetime.fromisoformat(value)
            except ValueError:
                raise self.fail(table, "due", msg.CONFIG_BAD_DATE.format(value=given)) from None
        if isinstance(value, date) and not isinstance(value, datetime):
            value = datetime.combine(value + DAY, time())  # a day: due by its end
        if not isinstance(value, datetime):
            raise self.fail(table, "due", msg.CONFIG_BAD_DATE.format(value=given))
        if value.tzinfo is None:
            if zone is None:
                raise self.fail(table, "due", msg.CONFIG_NO_ZONE.format(value=given))
            value = value.replace(tzinfo=zone)
        return value
