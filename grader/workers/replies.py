"""What the grader accepts from a worker or a verifier: a reply to the request it awaits,
bounded in what it costs once parsed, holding only the fields its request needs, each of
its type.

Everything a worker says is the submission's word: its code runs there and can write any line
in the worker's place (the request id is in the worker's memory). So a reply is bounded before
it is parsed (a line of a few megabytes of ``[{},{},...]`` would be gigabytes of Python
objects), its fields are checked against the table below (a value JSON cannot write back,
such as NaN, where a text belongs would stop the results from being written), and the fields
only the grader may set (a test not found, a timeout) are never taken from it.
"""

from __future__ import annotations

import json
from typing import Any

from grader import messages as msg

#: The longest reply line read: over a hundred times the longest a test needs (24 kB).
MAX_BYTES = 4 * 2**20
#: What one reply may cost once parsed, counted as its containers and items (every ``{``,
#: ``[`` and ``,``, a bound on the Python objects parsing makes): a hundred times what the
#: costliest test needs (2,013).
MAX_ITEMS = 200_000
#: What the replies of one run (one submission on one device count) may cost in all, kept
#: until its student is judged: about six times what the whole course needs (81,000 on 8
#: devices, measured).
MAX_RUN_ITEMS = 500_000
#: What the replies of one run may weigh in all, in bytes as received: a string of a few MiB
#: is one value, and Python keeps it at up to four bytes a character. Ten times what the
#: whole course's reference run on 8 devices receives (1.6 MB, 81,000 values: measured).
MAX_RUN_BYTES = 16 * 2**20
#: The longest text kept from a reply, and the most texts in a list of them.
MAX_TEXT = 2000
MAX_TEXTS = 100

#: What a worker says of its seal (see grader.workers.worker.Worker.serve).
SEALED = {"tampered": "texts", "threads": int, "restored": "texts"}
#: The fields a reply to each request may hold: a type, or the name of a reader below.
FIELDS: dict[str, dict[str, Any]] = {
    "ready": {"ok": bool, "devices": int},
    "cell": {"ok": bool, "error": "error"},
    "lookup": {"ok": bool, "found": "names"},
    # what a test asks of the function under test (see grader.remote), behind the seal
    "call": {"ok": bool, "value": "data", "error": "error", **SEALED},
    "export": {"ok": bool, "program": "blob", "error": "error", **SEALED},
    "shardings": {"ok": bool, "value": "data", "error": "error", **SEALED},
    "replay": {"ok": bool, "value": "data", "error": "error", **SEALED},
    # a tester's: its tests, then each probe's requests of the function and its outcome
    "tests": {"ok": bool},
    "probe": {"ok": bool, "data": "data", "error": "error", "ask": "data"},
    "verify": {"ok": bool, "measured": "measured", "differs": str, "error": "error"},
    "record": {"ok": bool, "record": dict, "error": "error"},  # a reference's, from a verifier
    "measure": {"ok": bool, "data": "data", "error": "error"},  # each of verify's measured
}


def cost(line: bytes) -> int:
    """An upper bound on the containers and items of a JSON line, counted without parsing."""
    return line.count(b"{") + line.count(b"[") + line.count(b",")


def read(line: bytes, req: str, op: str, truncated: bool = False) -> tuple[dict, int] | None:
    """The reply to request ``req`` (of kind ``op``) that ``line`` holds, as accepted, with
    what it costs kept (:func:`cost`); None when the line is not that reply. A line that names
    the request but is too long or too costly to read, or not JSON, is that reply, failed,
    with the reason, and costs nothing: it is not kept."""
    if f'"{req}"'.encode() not in line:
        return None
    items = cost(line)
    if truncated or items > MAX_ITEMS:
        return failed(msg.MSG_REPLY_TOO_LARGE.format(
            what=f"over {MAX_BYTES // 2**20} MiB" if truncated else
            f"over {MAX_ITEMS:,} values in one reply")), 0
    try:
        reply = json.loads(line)
    except (ValueError, RecursionError):
        return failed(msg.MSG_REPLY_UNREADABLE), 0
    if not isinstance(reply, dict) or reply.get("req") != req:
        return None
    return accepted(op, reply), items


def failed(why: str) -> dict:
    """A reply that failed to be read: the test fails as one whose result cannot be read,
    for the grader's own reason ``why`` (a field no reply may set: what a worker says it
    raised is quoted briefly, this is not)."""
    return {"ok": False, "unreadable": why}


def accepted(op: str, reply: dict) -> dict:
    """The fields of ``reply`` that a reply to ``op`` may hold, each of its type; ``ok`` is
    False unless it is True."""
    kept: dict[str, Any] = {"ok": reply.get("ok") is True}
    for name, kind in FIELDS.get(op, {"ok": bool}).items():
        if name == "ok" or name not in reply:
            continue
        if isinstance(kind, str):  # a reader, which bounds its own texts
            value = _READERS[kind](reply[name])
        else:
            value = reply[name] if type(reply[name]) is kind else None
            value = value[:MAX_TEXT] if isinstance(value, str) else value
        if value is not None:
            kept[name] = value
    return kept


def _error(value: Any) -> dict | None:
    if not isinstance(value, dict):
        return None
    return {key: value[key][:MAX_TEXT] for key in ("type", "message", "where", "base")
            if isinstance(value.get(key), str)}


def _texts(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    texts = [item[:MAX_TEXT] for item in value[:MAX_TEXTS] if isinstance(item, str)]
    return texts or None  # none left: as if none were sent


def _names(value: Any) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    return {key: kind[:MAX_TEXT] for key, kind in value.items() if isinstance(kind, str)}


def _measured(value: Any) -> list | None:
    if not isinstance(value, list):
        return None
    return [accepted("measure", item) if isinstance(item, dict) else {"ok": False}
            for item in value]


_READERS = {
    "error": _error,
    "texts": _texts,
    "names": _names,
    "data": lambda value: value,  # tagged data: read by plain.from_plain when judged
    "blob": lambda value: value if isinstance(value, str) else None,  # a program, base64
    "measured": _measured,
}
