"""Deciding, on the trusted side, whether measurements match the reference's.

Judges only see plain data (see :mod:`grader.framework.plain`): what the student's function produced
(``got``) and what the reference solution produced for the same probe (``want``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader import messages as msg

RTOL = 1e-4
ATOL = 1e-5


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one test."""

    passed: bool
    message: str = ""
    hint: str | None = None
    #: The message names what was found and what was wanted: the measurements themselves (a
    #: program's summary, say) are not shown under it as "yours" and "expected".
    said_all: bool = False


PASS = Verdict(True)


@dataclass(frozen=True)
class Hint:
    """A likely mistake: when ``when(got, want)`` holds for a failed test, show ``text``."""

    when: Callable[[dict, dict], bool]
    text: str


def difference(got: Any, want: Any, where: str = "the result") -> str | None:
    """Why ``got`` differs from ``want``, or None when they agree (shapes exactly)."""
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return msg.MSG_TYPE.format(where=where, got=_kind_of(got), want="an array")
        if got.shape != want.shape:
            return msg.MSG_SHAPE.format(where=where, got=got.shape, want=want.shape)
        if (got.dtype.kind == "f") != (want.dtype.kind == "f"):
            return msg.MSG_KIND.format(where=where, got=_values(got), want=_values(want))
        if want.dtype.kind == "f":
            same = np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True)
        else:
            same = np.array_equal(got, want)
        return None if same else msg.MSG_VALUES.format(where=where)
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return msg.MSG_TYPE.format(where=where, got=_kind_of(got), want="a dict")
        if sorted(got) != sorted(want):
            return msg.MSG_KEYS.format(where=where, got=sorted(got), want=sorted(want))
        for key in want:
            problem = difference(got[key], want[key], f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(want, list):
        if not isinstance(got, list):
            return msg.MSG_TYPE.format(where=where, got=_kind_of(got), want="a list")
        if len(got) != len(want):
            return msg.MSG_LENGTH.format(where=where, got=len(got), want=len(want))
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            problem = difference(g, w, f"{where}[{i}]")
            if problem:
                return problem
        return None
    if isinstance(got, (np.ndarray, dict, list)) or got != want:
        return msg.MSG_TYPE.format(where=where, got=_kind_of(got), want=repr(want))
    return None


def close(got: Any, want: Any) -> bool:
    """True when ``got`` matches ``want`` as :func:`difference` sees it."""
    return difference(got, want) is None


def result_close_to(key: str, text: str) -> Hint:
    """The hint ``text`` for a result equal to ``want[key]``: what a likely mistake gives,
    computed by the probe next to the reference's result (a forgotten psum's value...)."""
    return Hint(lambda got, want: close(got["result"], want[key]), text)


def _kind_of(value: Any) -> str:
    return "an array" if isinstance(value, np.ndarray) else f"a {type(value).__name__}"


def _values(array: np.ndarray) -> str:
    return "floating-point" if array.dtype.kind == "f" else "integer or boolean"


def same(*keys: str, hints: Sequence[Hint] = ()) -> Callable[[dict, dict], Verdict]:
    """A judge: the measurements named by ``keys`` (default: all without a leading ``_``)
    must match the reference's; on failure the first hint that applies is shown."""

    def judge(got: dict, want: dict) -> Verdict:
        for key in keys or [k for k in want if not k.startswith("_")]:
            if key not in got:
                return Verdict(False, f"measurement {key!r} is missing")
            problem = difference(got[key], want[key], "the result" if key == "result" else key)
            if problem:
                hint = first_hint(hints, got, want)
                return Verdict(False, problem, hint)
        return PASS

    return judge


def first_hint(hints: Sequence[Hint], got: dict, want: dict) -> str | None:
    """The text of the first of ``hints`` whose condition holds; a condition that cannot be
    evaluated on what a submission returned (a missing key, a wrong type) does not hold."""
    for hint in hints:
        try:
            if hint.when(got, want):
                return hint.text
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
    return None


def what_runs(key: str, hints: Sequence[Hint] = ()) -> Callable[[dict, dict], Verdict]:
    """A judge of a prediction: the student's ``result`` must equal the reference's ``key``,
    what its probe measured on a compiled program (trusted: it ran next to the reference
    solution), the first of ``hints`` that fits said on a miss."""

    def judge(got: dict, want: dict) -> Verdict:
        problem = difference(got.get("result"), want[key])
        if problem is None:
            return PASS
        return Verdict(False, problem, first_hint(hints, got, want))

    return judge


def traces(primitive: str, axis: str, hint: str | None = None) -> Callable[[dict, dict], Verdict]:
    """A judge for :func:`.probes.program_summary`: a collective whose primitive starts
    with ``primitive`` must act over ``axis`` (``pmean`` is a ``psum``, then a division).
    Where the reference's program names no axis for it (on one device a program keeps no
    mesh), the primitive alone must be there."""

    def judge(got: dict, want: dict) -> Verdict:
        def over(summary: dict) -> list:
            return [found.get("axes", []) for found in summary.get("collectives", [])
                    if str(found.get("primitive", "")).startswith(primitive)]

        named = any(axis in axes for axes in over(want))
        if any(axis in axes or not named for axes in over(got)):
            return PASS
        seen = sorted({f"{c.get('primitive')} over {c.get('axes')}" for c in
                       got.get("collectives", [])})
        return Verdict(
            False,
            msg.MSG_NOT_TRACED.format(primitive=primitive, axis=axis,
                                      seen=", ".join(seen) or "no collective"),
            hint,
            said_all=True,
        )

    return judge


def compiles_to(op: str, hint: str | None = None) -> Callable[[dict, dict], Verdict]:
    """A judge for :func:`.probes.hlo_collectives`: where the reference's compiled code
    has an ``op``, the student's must have one too."""

    def judge(got: dict, want: dict) -> Verdict:
        needed = np.asarray(want.get(op, 0)).item()
        have = np.asarray(got.get(op, 0)).item() if op in got else 0
        if needed and not have:
            return Verdict(False, msg.MSG_NOT_COMPILED.format(op=op), hint, said_all=True)
        return PASS

    return judge


def runs_on_mesh(got: dict, want: dict) -> Verdict:
    """A judge for :func:`.probes.program_summary`: a shard_map over the same mesh as the
    reference's (axis names and sizes) must be traced. A program on one device keeps no
    shard_map: there, it must run on as many devices as the reference's."""
    devices = [_count(summary.get("devices")) for summary in (want, got)]
    if not want.get("shard_maps") and devices[0] != devices[1]:
        return Verdict(False, msg.MSG_DEVICES.format(want=devices[0], got=devices[1]),
                       said_all=True)
    meshes = [_sizes(m.get("mesh")) for m in got.get("shard_maps", [])]
    for wanted in want.get("shard_maps", []):
        if _sizes(wanted.get("mesh")) not in meshes:
            return Verdict(
                False,
                msg.MSG_MESH.format(want=_sizes(wanted.get("mesh")),
                                    got=meshes or "no shard_map"),
                said_all=True,
            )
    return PASS


def _count(value: Any) -> int | None:
    """A count measured (an int, or a one-element array read back from plain data)."""
    try:
        return int(np.asarray(value).item())
    except (TypeError, ValueError):
        return None


def _sizes(mesh: Any) -> Any:
    """A mesh's {axis: size} with plain ints, for comparing and showing."""
    if not isinstance(mesh, dict):
        return mesh
    return {str(k): int(np.asarray(v).item()) if np.asarray(v).size == 1 else v
            for k, v in mesh.items()}
