"""The verifier: takes measures of programs that submissions handed in, where none of their
code runs.

A grader worker runs a submission, so anything it reports about *how* a function computes
could have been changed by that submission. It therefore sends the program instead
(:class:`grader.probes.Program`, serialized by :mod:`jax.export`), and the runner has it
measured here. Started by :mod:`grader.runner` as ``python -I -c "from grader.verifier import
main; main()" DEVICES MEMORY``, in the same sandbox as a worker. It reads the program, which
runs no Python code of the submission, and compiles it; it never executes it. It answers
``{"op": "verify", "req", "measure", "blob"}`` lines on stdin with JSON lines on stdout.
"""

from __future__ import annotations

import base64
import json
import os
import resource
import sys
from typing import Any


def verify(measure: Any, blob: Any) -> dict[str, Any]:
    """Take the measure named ``measure`` on the program ``blob`` (base64 text)."""
    from grader import cases, plain
    from grader.probes import MEASURES, Program

    if not isinstance(measure, str) or measure not in MEASURES or not isinstance(blob, str):
        return {"ok": False, "error": {"type": "ValueError", "message": "no such measure"}}
    try:
        program = Program.load(base64.b64decode(blob, validate=True))
        return {"ok": True, "data": plain.to_plain(MEASURES[measure](program))}
    except Exception as exc:  # noqa: BLE001 - bytes anyone could write, base64 included
        return {"ok": False, "error": cases.describe_error(exc)}


def main() -> None:
    devices, memory = int(sys.argv[1]), int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what JAX or XLA print cannot pass for a reply

    from grader import cases
    from grader.devices import use_cpu_devices

    have = use_cpu_devices(devices)
    cases.load(hidden=False)  # the measures defined next to the public tests
    replies.write(json.dumps({"req": "ready", "ok": have == devices, "devices": have}) + "\n")
    replies.flush()
    for line in sys.stdin:
        request = json.loads(line)
        reply = verify(request.get("measure"), request.get("blob"))
        replies.write(json.dumps({"req": request.get("req"), **reply}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
