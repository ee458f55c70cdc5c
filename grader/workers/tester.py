"""The tester: runs the tests on a submission's function, in a process where none of the
submission's code runs.

The tests (public and hidden), their inputs and their measures live here; the submission and
its function live in the worker. Each test's probe runs here on a :class:`grader.remote.Remote`
of the exercise's function, whose every call the worker makes: so nothing of the tests enters
the worker except the arguments of each call, and what the function returned is measured here.

Started by :mod:`grader.workers.runner` as ``python -I -c "from grader.workers.tester import
main; main()" DEVICES MEMORY GRADER TASKS``, in the same sandbox as a worker (GRADER and TASKS
as for a worker), where the hidden tests are masked on disk: they arrive as text, once, with
``{"op": "tests", "req", "modules"}``. Then it answers ``{"op": "probe", "req", "case_id",
"material"}`` (``material`` true in the reference's run alone: see
:class:`grader.framework.plain.Material`): each request the probe makes of the function is a
line ``{"req", "ask": {...}}`` on stdout, answered by ``{"op": "answer", "req", "reply":
{...}}`` on stdin (the worker's reply, which the runner relays); the last line is the probe's
outcome, ``{"req", "ok", "data"}`` or ``{"req", "ok": false, "error"}`` (see
:func:`grader.framework.cases.measure`). A tester serves one run after another
(:mod:`grader.workers.pool`); the runner closes one it leaves mid-probe.
"""

from __future__ import annotations

import json
import os
from typing import Any, TextIO

from grader.workers.confine import begin


class Tester:
    """The tests of this process, and the two streams it talks to the runner on."""

    def __init__(self, requests: TextIO, replies: TextIO) -> None:
        self.requests, self.replies = requests, replies
        self.cases: dict[str, Any] = {}

    def send(self, reply: dict[str, Any]) -> None:
        self.replies.write(json.dumps(reply) + "\n")
        self.replies.flush()

    def tests(self, req: str, modules: dict[str, str]) -> dict[str, Any]:
        from grader.framework import cases

        cases.install_sources(modules)
        self.cases = {c.id: c for c in cases.load(hidden=True)}
        return {"ok": True}

    def probe(self, req: str, case_id: str, material: bool = False) -> dict[str, Any]:
        from grader.framework import cases
        from grader.remote import Remote

        found = self.cases.get(case_id)
        if found is None:
            return {"ok": False, "error": {"type": "LookupError", "message": case_id[:80]}}

        def ask(question: dict) -> dict:
            self.send({"req": req, "ask": question})
            answer = json.loads(self.requests.readline() or "{}")
            reply = answer.get("reply")
            return reply if isinstance(reply, dict) else {"ok": False}

        return cases.measure(found, Remote(ask, name=found.exercise), material=material is True)

    def serve(self) -> None:
        while line := self.requests.readline():
            request = json.loads(line)
            op = request.pop("op")
            reply = {"tests": self.tests, "probe": self.probe}[op](**request)
            self.send({"req": request["req"], **reply})


def main() -> None:
    devices, have, requests, replies = begin()
    from grader import reuse
    from grader.devices import WORKER_ENV
    from grader.framework import cases
    from grader.workers import compiled

    compiled.install()
    reuse.install()  # the tests' own eager programs, as a worker's (no submission code runs here)

    os.environ[WORKER_ENV] = "1"  # programs go to a verifier (framework.probes), not read
    cases.load(hidden=False)  # the hidden tests arrive with the first request
    tester = Tester(requests, replies)
    tester.send({"req": "ready", "ok": have == devices, "devices": have})
    tester.serve()


if __name__ == "__main__":
    main()
