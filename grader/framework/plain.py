"""Plain data: what crosses from a worker to the trusted grader.

A worker turns whatever a student's function returned into JSON-ready data made only of
dicts, lists, strings and numbers (:func:`to_plain`). The trusted side reads it back into numpy
arrays (:func:`from_plain`) without ever unpickling or calling anything the student made.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader import messages as msg

#: An array larger than this is not sent back: no test needs one (the largest holds 2,000).
MAX_ELEMENTS = 100_000


class NotPlain(TypeError):
    """A value that cannot be turned into plain data."""


@dataclass(frozen=True)
class Unverified:
    """A measurement of how a function computes, not taken yet: the measure's name and the
    program (:class:`grader.framework.probes.Program`, serialized). A worker sends it as it is; the
    grader has it taken by a verifier, a process where none of the submission's code runs."""

    measure: str
    program: bytes


@dataclass(frozen=True)
class Verified:
    """A measurement of how a function computes, taken outside the submission's reach: by a
    verifier, or in the student's own kernel (where only the student could have changed it),
    with the program it was taken of there (never sent anywhere)."""

    value: Any
    program: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Material:
    """A hint's material: a value that does not depend on the function under test (what a
    likely mistake gives, as ``"_as_given": Material(lambda: ...)`` in a probe's dict), made
    by ``make`` only where it is read. Hints read it from the reference's outcome
    (``want[key]``: the reference run's, or the stored expected values ``check`` reads), so
    every other run leaves its key out (:func:`to_plain`'s ``material``) rather than make it
    again for each student and at each ``check``."""

    make: Callable[[], Any]


def to_plain(value: Any, material: bool = True) -> Any:
    """Turn a probe's measurement into tagged, JSON-ready data (runs in the worker); with
    ``material`` False, a dict's :class:`Material` is left out, unmade."""
    if type(value) is Material:
        return to_plain(value.make(), material) if material else {"none": None}
    if isinstance(value, str):
        return {"str": value}
    if type(value) is Unverified:
        return {"program": {"measure": value.measure,
                            "blob": base64.b64encode(value.program).decode()}}
    if type(value) is Verified:
        return {"verified": to_plain(value.value, material)}
    if value is None:
        return {"none": None}
    if isinstance(value, dict):
        return {"dict": {str(k): to_plain(v, material) for k, v in value.items()
                         if material or type(v) is not Material}}
    if isinstance(value, (list, tuple)):
        return {"list": [to_plain(v, material) for v in value]}
    try:
        array = np.asarray(value)
    except Exception as exc:  # the student's object refused to become an array
        raise NotPlain(msg.PLAIN_NOT_ARRAY.format(type=type(value).__name__, error=exc)) from None
    if array.dtype == object or array.dtype.kind not in "biuf":
        raise NotPlain(msg.PLAIN_NOT_NUMBERS.format(type=type(value).__name__, dtype=array.dtype))
    if array.size > MAX_ELEMENTS:
        raise NotPlain(msg.PLAIN_TOO_LARGE.format(size=array.size))
    kind = "bool" if array.dtype.kind == "b" else "int" if array.dtype.kind in "iu" else "float"
    return {
        "array": array.astype(float if kind == "float" else int).tolist(),
        "kind": kind,
        "dtype": str(array.dtype),
        "shape": list(array.shape),
    }


def from_plain(data: Any, *, as_returned: bool = False) -> Any:
    """Read tagged data back (runs in the trusted grader); arrays become numpy arrays, of the
    widest type of their kind. ``as_returned`` reads a value as it was returned instead
    (lesson 6's launcher): each array keeps its dtype, and a 0-d array is a Python number."""
    if not isinstance(data, dict) or len(data) < 1:
        raise NotPlain(msg.PLAIN_MALFORMED.format(data=str(data)[:80]))
    if "array" in data:
        array = _array(data, as_returned)
        return array.item() if as_returned and array.ndim == 0 else array
    (tag, inner), *rest = data.items()
    if rest:
        raise NotPlain(msg.PLAIN_MALFORMED.format(data=str(data)[:80]))
    if tag == "str" and isinstance(inner, str):
        return inner
    if tag == "none":
        return None
    if tag == "program":
        raise NotPlain(msg.PLAIN_UNVERIFIED)
    try:
        if tag == "verified":
            return from_plain(inner, as_returned=as_returned)
        if tag == "dict" and isinstance(inner, dict):
            return {str(k): from_plain(v, as_returned=as_returned) for k, v in inner.items()}
        if tag == "list" and isinstance(inner, list):
            return [from_plain(v, as_returned=as_returned) for v in inner]
    except RecursionError:
        raise NotPlain(msg.PLAIN_TOO_DEEP) from None
    raise NotPlain(msg.PLAIN_MALFORMED.format(data=str(data)[:80]))


#: The numpy kinds of each kind of plain array.
_KINDS = {"bool": "b", "int": "iu", "float": "f"}


def _array(data: dict, as_returned: bool) -> np.ndarray:
    """The array of tagged array data, checked against its stated kind, dtype and shape."""
    try:
        shape = tuple(int(d) for d in data["shape"])
        kind = {"bool": bool, "int": np.int64, "float": np.float64}[data["kind"]]
        if as_returned:
            kind = np.dtype(str(data["dtype"]))
            if kind.kind not in _KINDS[data["kind"]]:
                raise TypeError(msg.PLAIN_DTYPE_KIND.format(dtype=kind, kind=data["kind"]))
        array = np.array(data["array"], dtype=kind)
        if array.size == 0:  # an empty array's nested list does not keep its shape
            array = array.reshape(shape)
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError):
        raise NotPlain(msg.PLAIN_MALFORMED_ARRAY.format(data=str(data)[:80])) from None
    if array.shape != shape:
        raise NotPlain(msg.PLAIN_SHAPE.format(shape=shape))
    return array


def _tagged(data: Any, wanted: str) -> list[tuple[tuple, Any]]:
    """Every value tagged ``wanted`` in tagged data, with where it is (keys and indices),
    walked without recursion (however deeply a worker nested its reply)."""
    found, todo = [], [((), data)]
    while todo:
        path, item = todo.pop()
        if not isinstance(item, dict) or len(item) != 1:
            continue
        (tag, inner), = item.items()
        if tag == wanted:
            found.append((path, inner))
        elif tag == "dict" and isinstance(inner, dict):
            todo += [((*path, k), v) for k, v in inner.items()]
        elif tag == "list" and isinstance(inner, list):
            todo += [((*path, i), v) for i, v in enumerate(inner)]
    return found


def verified_paths(data: Any) -> set[str]:
    """Where tagged data holds verified measurements (``Verified``), as paths like
    ``/collectives``: a student's data must have one wherever the reference's has."""
    return {"/" + "/".join(str(step) for step in path) for path, _ in _tagged(data, "verified")}


def measured_programs(value: Any) -> list[tuple[tuple, Any]]:
    """The programs a probe's measurements were taken of in this process (a kernel's), with
    where each is in the value (keys and indices, as :func:`programs` gives them once the
    value is plain data)."""
    found, todo = [], [((), value)]
    while todo:
        path, item = todo.pop()
        if type(item) is Verified and item.program is not None:
            found.append((path, item.program))
        elif isinstance(item, dict):
            todo += [((*path, str(k)), v) for k, v in item.items()]
        elif isinstance(item, (list, tuple)):
            todo += [((*path, i), v) for i, v in enumerate(item)]
    return found


def programs(data: Any) -> list[tuple[tuple, dict]]:
    """The measurements still to verify in tagged data: (where, ``{"measure", "blob"}``). A
    malformed one (not a dict) is left out: it stays unverified, so it cannot count."""
    return [(path, inner) for path, inner in _tagged(data, "program") if isinstance(inner, dict)]


def describe(value: Any, limit: int = 300) -> str:
    """A short human-readable text of plain data, for feedback."""
    if isinstance(value, np.ndarray):
        with np.printoptions(threshold=20, edgeitems=3, precision=5, suppress=True):
            text = np.array2string(value, separator=", ")
        if value.ndim:
            text = f"{text} (shape {value.shape})"
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{k!r}: {describe(v, limit)}" for k, v in value.items()) + "}"
    elif isinstance(value, list):
        text = "[" + ", ".join(describe(v, limit) for v in value) + "]"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
