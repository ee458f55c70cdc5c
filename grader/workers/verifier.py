"""The verifier: takes measures of programs that submissions handed in, where none of their
code runs.

A grader worker runs a submission, so anything it reports about *how* a function computes
could have been changed by that submission. It therefore sends the program instead
(:class:`grader.framework.probes.Program`, serialized by :mod:`jax.export`), and the runner has it
measured here. Started by :mod:`grader.workers.runner` as ``python -I -c "from
grader.workers.verifier import main; main()" DEVICES MEMORY GRADER TASKS``, in the same
sandbox as a worker (GRADER and TASKS as for a worker). Reading a program runs no Python
code of the submission.

A program could also be one the function never traced to: a function that computes its
values on the host, say, and hands in a program with a decorative collective. So a program
is also run next to the reference solution's program for the same test, on fresh random
inputs the submission never saw, and must give the same results: how a function computes
counts only for a program that computes what the exercise asks. Its collectives must carry
something, and what each of its devices holds and receives must stay within the bounds the
reference's program sets: the rule is :func:`grader.framework.compare.against`, which ``check``
applies in a student's kernel too.

It answers JSON lines on stdin with JSON lines on stdout. ``{"op": "record", "req", "blob",
"seed"}``: ``{"ok": true, "record": ...}`` (:func:`grader.framework.compare.record`, for
``refresh-expected``).
``{"op": "verify", "req", "measures", "blob", "reference", "seed"}``: ``{"ok": true,
"measured": [{"ok": true, "data": value} or {"ok": false, "error": {...}}, one per
measure]}``, with ``"differs": why`` added when the program does not compute what the
reference's does (the measures are still taken, so that the judges can name what is
missing, with their hints), or ``{"ok": false, "error": {...}}`` when the program cannot be
read or run.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from grader.caches import Newest
from grader.workers.confine import begin

#: Reference programs read and compiled so far, by their bytes (base64).
_references: Newest[str, Any] = Newest(256)
#: Measures taken so far, by the measure's name and the program's identity (only those taken).
_measured: Newest[tuple, dict[str, Any]] = Newest(1024)


def verify(measures: Any, blob: Any, reference: Any = None, seed: Any = 0) -> dict[str, Any]:
    """Take each measure named in ``measures`` on the program ``blob`` (base64 text), and say
    why it does not compute what the ``reference`` program (base64 text, or None when there
    is none to compare with) computes on fresh inputs drawn from ``seed``, if it does not."""
    from grader.framework import cases
    from grader.framework.compare import differs

    if (not isinstance(measures, list) or not isinstance(blob, str)
            or not isinstance(reference, (str, type(None))) or not isinstance(seed, int)):
        return {"ok": False, "error": {"type": "ValueError", "message": "a malformed request"}}
    try:
        program = _load(blob)
        why = None if reference is None else differs(program, _reference(reference), seed)
    except Exception as exc:  # noqa: BLE001 - bytes anyone could write, base64 included
        return {"ok": False, "error": cases.describe_error(exc)}
    reply = {"ok": True, "measured": [_take(name, program) for name in measures]}
    return {**reply, "differs": why} if why else reply


def recorded(blob: Any, seed: Any) -> dict[str, Any]:
    """The :func:`grader.framework.compare.record` of the reference program ``blob`` (base64
    text) for ``seed``."""
    from grader.framework import cases
    from grader.framework.compare import record

    if not isinstance(blob, str) or not isinstance(seed, int):
        return {"ok": False, "error": {"type": "ValueError", "message": "a malformed request"}}
    from grader.framework import plain

    try:
        made = record(_reference(blob), seed)
        return {"ok": True, "record": {**made, "results": [
            plain.to_plain(result) for result in made["results"]]}}
    except Exception as exc:  # noqa: BLE001 - the grader's own reference, but said as it is
        return {"ok": False, "error": cases.describe_error(exc)}


def _take(name: Any, program: Any) -> dict[str, Any]:
    """One measure of a program, or why it could not be taken; taken once per verifier for
    the programs of one identity (a measure takes the same of each)."""
    from grader.framework import cases, plain
    from grader.framework.probes import MEASURES

    if not isinstance(name, str) or name not in MEASURES:
        return {"ok": False, "error": {"type": "ValueError", "message": "no such measure"}}
    try:
        return _measured.get((name, program.identity), lambda: {
            "ok": True, "data": plain.to_plain(MEASURES[name](program))})
    except Exception as exc:  # noqa: BLE001 - compiling bytes anyone could write
        return {"ok": False, "error": cases.describe_error(exc)}


def _load(blob: str) -> Any:
    from grader.framework.probes import Program

    return Program.load(base64.b64decode(blob, validate=True))


def _reference(blob: str) -> Any:
    """The reference program of these bytes, read and compiled once per verifier."""
    return _references.get(blob, lambda: _load(blob))


def main() -> None:
    devices, have, requests, replies = begin()
    from grader import reuse
    from grader.framework import cases
    from grader.workers import compiled

    compiled.install()
    reuse.install()  # one MLIR context for the programs it reads and lowers
    cases.load(hidden=False)  # the measures defined next to the public tests
    replies.write(json.dumps({"req": "ready", "ok": have == devices, "devices": have}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        if request.get("op") == "record":
            reply = recorded(request.get("blob"), request.get("seed", 0))
        else:
            reply = verify(request.get("measures"), request.get("blob"),
                           request.get("reference"), request.get("seed", 0))
        replies.write(json.dumps({"req": request.get("req"), **reply}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
