"""The public tests' expected values, stored so that ``check`` needs no solutions: read here.

The reference solutions produce them in grader workers on 1, 2, 4 and 8 devices, one file
per lesson in ``public/expected/``, with, for a test of how a function computes, the record
of each reference program (:func:`grader.framework.compare.record`: its results on fresh
inputs, its kinds of collective, its footprint) that ``check`` compares a student's with.
``python -m grader refresh-expected [LESSON ...]`` (:mod:`grader.authoring.refresh_expected`)
writes them again, and a test fails when a stored file no longer matches what the solutions
give. Reading them starts no worker.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from grader.course import LESSONS
from grader.framework import compare, judge

FOLDER = Path(__file__).resolve().parents[1] / "public" / "expected"
#: Device counts the public expected values are stored for.
DEVICE_COUNTS = (1, 2, 4, 8)
#: The seed of the fresh inputs each public test's reference program is run on for the record
#: ``check`` compares a student's program with (the grader draws a new one for each program).
CHECK_SEED = 20261126
#: How far a recomputed float may be from the stored one and still be the same value: a quarter
#: of the tolerance ``check`` compares it with, :mod:`~grader.framework.judge`'s for a test's
#: values and :mod:`~grader.framework.compare`'s for the results of a recorded program (under a
#: ``record`` key). Its last bits depend on the CPU XLA compiled for (its vector instructions),
#: not on the solutions: between two x86 CPUs, up to an eighth of that tolerance (a gradient of
#: lesson 8). The test of the stored files and ``refresh-expected`` both use it.
SHARE = 4
VALUES = (judge.RTOL / SHARE, judge.ATOL / SHARE)
RECORDS = (compare.RTOL / SHARE, compare.ATOL / SHARE)


def path(lesson: str) -> Path:
    return FOLDER / f"{lesson}.json"


@cache
def load() -> dict[str, dict[str, dict]]:
    """Stored reference outcomes of every lesson: ``{case id: {device count: outcome}}``."""
    table: dict[str, dict[str, dict]] = {}
    for lesson in LESSONS:
        if path(lesson).exists():
            table.update(json.loads(path(lesson).read_text())["cases"])
    return table


def _same_floats(stored: Any, fresh: Any, tolerance: tuple[float, float]) -> bool:
    """Two stored float arrays (``{"kind": "float", "array": ...}``) that are the same value:
    every key but the numbers equal, and the numbers within ``tolerance`` (relative,
    absolute)."""
    rtol, atol = tolerance
    return (stored.keys() == fresh.keys()
            and all(stored[k] == fresh[k] for k in stored if k != "array")
            and bool(np.allclose(stored["array"], fresh["array"], rtol=rtol, atol=atol,
                                 equal_nan=True)))


def _within(key: Any, tolerance: tuple[float, float]) -> tuple[float, float]:
    """The tolerance below ``key``: :data:`RECORDS` from a ``record`` on."""
    return RECORDS if key == "record" else tolerance


def _is_float(value: Any) -> bool:
    return isinstance(value, dict) and value.get("kind") == "float"


def differences(stored: Any, fresh: Any, where: str = "",
                tolerance: tuple[float, float] = VALUES) -> list[str]:
    """Where two stored tables differ (paths such as ``/case/8/value``), in anything but the
    last bits of a float."""
    if _is_float(stored) and _is_float(fresh):
        return [] if _same_floats(stored, fresh, tolerance) else [where]
    if isinstance(stored, dict) and isinstance(fresh, dict):
        if stored.keys() != fresh.keys():
            return [f"{where}: keys {sorted(stored)} != {sorted(fresh)}"]
        return [d for k in stored for d in differences(stored[k], fresh[k], f"{where}/{k}",
                                                       _within(k, tolerance))]
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        return [d for i, (a, b) in enumerate(zip(stored, fresh, strict=True))
                for d in differences(a, b, f"{where}/{i}", tolerance)]
    return [] if stored == fresh else [where]


def keep_stored(stored: Any, fresh: Any, tolerance: tuple[float, float] = VALUES) -> Any:
    """``fresh``, except that each float array the same as its stored one (see
    :func:`differences`) is the stored one: a refresh with nothing new rewrites nothing."""
    if _is_float(stored) and _is_float(fresh):
        return stored if _same_floats(stored, fresh, tolerance) else fresh
    if isinstance(stored, dict) and isinstance(fresh, dict):
        return {k: keep_stored(stored[k], v, _within(k, tolerance)) if k in stored else v
                for k, v in fresh.items()}
    if isinstance(stored, list) and isinstance(fresh, list) and len(stored) == len(fresh):
        return [keep_stored(a, b, tolerance) for a, b in zip(stored, fresh, strict=True)]
    return fresh
