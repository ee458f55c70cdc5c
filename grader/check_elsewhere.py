"""``check`` on the device counts the kernel does not have: the same public tests, run on a
copy of the student's function in a process of CPU devices of its own.

The grader runs an "all devices" exercise on 8 devices and on 2. A kernel has one of those
counts, so :func:`grader.check.check` runs the tests there and asks this module for the
others. The function travels as source code, as lesson 6's processes receive theirs
(:func:`grader.lessons.cluster.ship`: its imports, constants and the notebook functions it
calls); a function that cannot travel (a closure, a global that is not a constant) is not run
elsewhere, and :class:`CannotRun` says why.

One process per device count serves every ``check`` of the kernel, so JAX starts once there;
``check`` starts it early and sends the function before running the tests itself, so that
both run at once. The process answers on a pipe of its own (what the function prints goes to
a file, never into an answer), each answer marked with its request's number. Work nobody
waits for any more (the tests failed in the kernel, or the student pressed stop) is
interrupted; a request that takes longer than :data:`TIMEOUT` seconds, work that does not
stop within :data:`SETTLE` seconds of its interruption, or a process that dies, gets its
process killed, and the next request starts a new one.

Run as ``python -m grader.check_elsewhere N FD PARENT``: the process of ``N`` CPU devices,
answering on the file descriptor ``FD``, ending with the process ``PARENT``.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from typing import IO

#: Seconds one exercise's public tests may take in the other process, JAX's start included.
TIMEOUT = 120.0
#: Seconds interrupted work may take to stop before its process is killed instead.
SETTLE = 5.0
#: The XLA flag that would fix the CPU device count over the process's own choice.
_COUNT_FLAG = "--xla_force_host_platform_device_count"


class CannotRun(Exception):
    """The tests could not be run on that device count; the message says why, in words."""


class _Process:
    """The process that runs tests on ``devices`` CPU devices, its answer pipe, and the
    requests it has not answered yet."""

    def __init__(self, devices: int) -> None:
        self.log = tempfile.TemporaryFile()
        read, write = os.pipe()
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS=" ".join(flag for flag in os.environ.get("XLA_FLAGS", "").split()
                                      if not flag.startswith(_COUNT_FLAG)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(devices), str(write), str(os.getpid())],
            stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, pass_fds=(write,),
            env=env, start_new_session=True)
        os.close(write)
        self.answers: IO[bytes] = os.fdopen(read, "rb")
        self.sent = 0
        self.unanswered: set[int] = set()

    def send(self, request: dict) -> int:
        """Send one request; its number."""
        assert self.process.stdin is not None
        self.sent += 1
        try:
            self.process.stdin.write(json.dumps({**request, "id": self.sent}).encode() + b"\n")
            self.process.stdin.flush()
        except OSError:
            raise CannotRun(self.ended()) from None
        self.unanswered.add(self.sent)
        return self.sent

    def answer(self, number: int, timeout: float) -> dict:
        """The answer to request ``number`` (older answers nobody waits for are dropped);
        :class:`CannotRun` if it does not come within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self._next(deadline)
            if answer["id"] == number:
                return answer

    def settle(self, timeout: float) -> bool:
        """Wait at most ``timeout`` seconds for every request to be answered; whether they
        were."""
        deadline = time.monotonic() + timeout
        try:
            while self.unanswered:
                self._next(deadline)
        except CannotRun:
            return False
        return True

    def interrupt(self) -> None:
        """Stop the work under way (a KeyboardInterrupt there, as in a kernel)."""
        try:
            os.kill(self.process.pid, signal.SIGINT)
        except ProcessLookupError:
            pass

    def _next(self, deadline: float) -> dict:
        with selectors.DefaultSelector() as waiting:
            waiting.register(self.answers, selectors.EVENT_READ)
            if not waiting.select(max(0.0, deadline - time.monotonic())):
                raise CannotRun(f"the tests did not finish within {TIMEOUT:.0f} s there")
        line = self.answers.readline()
        if not line:
            raise CannotRun(self.ended())
        answer = json.loads(line)
        self.unanswered.discard(answer["id"])
        return answer

    def ended(self) -> str:
        """Why the process stopped answering, with the last line it wrote."""
        from grader.processes import how_it_ended

        self.log.seek(0)
        said = self.log.read().decode(errors="replace").strip().splitlines()
        last = f": {said[-1][:300]}" if said else ""
        return f"its process ended ({how_it_ended(self.process, 5)}){last}"

    def stop(self) -> None:
        from grader.processes import kill_group

        kill_group(self.process)
        self.process.wait()
        for pipe in (self.process.stdin, self.answers):
            try:
                pipe.close()
            except OSError:  # its reader is gone: what it held is not needed
                pass
        self.log.close()


_running: dict[int, _Process] = {}


def started(devices: int) -> _Process:
    """The process for ``devices`` CPU devices, free for a request: started now if there is
    none, or if the one there is still busy :data:`SETTLE` seconds after its work was
    interrupted (``check`` calls this early, so that JAX starts there while the kernel runs
    its own tests)."""
    process = _running.get(devices)
    if process is not None and (process.process.poll() is not None
                                or not process.settle(SETTLE)):
        _stop(devices)
        process = None
    if process is None:
        process = _running[devices] = _Process(devices)
    return process


def _stop(devices: int) -> None:
    process = _running.pop(devices, None)
    if process is not None:
        process.stop()


class Run:
    """The public tests of one exercise on one function, under way on ``devices`` CPU
    devices in the process for them, while the kernel runs them on its own."""

    def __init__(self, fn, name: str, devices: int) -> None:
        """Send ``fn``'s source there; :class:`CannotRun` says why it could not be."""
        from grader.lessons.cluster import ship

        try:
            source = ship(fn)
        except (TypeError, OSError, SyntaxError) as exc:  # OSError: no source (made by exec)
            raise CannotRun(str(exc)) from None
        self.devices = devices
        self.process = started(devices)
        defined = inspect.unwrap(fn).__code__.co_name  # the def's name, under decorators
        self.number = self._ask(self.process.send, {"name": name, "source": source,
                                                    "function": defined})

    def outcomes(self) -> dict[str, dict]:
        """The outcome of each public test, by case id, measured as
        :func:`grader.framework.compare.measure_here` measures them; :class:`CannotRun` says
        why there are none."""
        answer = self._ask(self.process.answer, self.number, TIMEOUT)
        if "problem" in answer:
            raise CannotRun(answer["problem"])
        return answer["outcomes"]

    def cancel(self) -> None:
        """Nobody waits for these outcomes: interrupt the work if it is still under way."""
        if self.number in self.process.unanswered:
            self.process.interrupt()

    def _ask(self, step, *args):
        try:
            return step(*args)
        except BaseException:  # no answer, or the student pressed stop while waiting
            if _running.get(self.devices) is self.process:
                _stop(self.devices)
            raise


@atexit.register
def stop_all() -> None:
    """End every process this kernel started for ``check``."""
    for devices in list(_running):
        _stop(devices)


# --- the other process -----------------------------------------------------------------------
_busy = False


def _interrupted(signum, frame) -> None:
    """SIGINT stops the work under way, as in a kernel, and nothing while the process waits."""
    if _busy:
        raise KeyboardInterrupt


def serve(devices: int, answers: IO[str]) -> None:
    """Answer requests from standard input until it closes: run the public tests of the
    exercise on the function the source defines, on this process's devices."""
    global _busy
    from grader import reuse
    from grader.devices import use_cpu_devices

    signal.signal(signal.SIGINT, _interrupted)
    use_cpu_devices(devices)
    reuse.install()  # as in the student's kernel once it checks
    for line in sys.stdin:
        request = json.loads(line)
        _busy = True
        try:
            answer = _run(request, devices)
        except KeyboardInterrupt:
            answer = {"problem": "stopped"}
        finally:
            _busy = False
        answers.write(json.dumps({**answer, "id": request["id"]}) + "\n")
        answers.flush()


def _run(request: dict, devices: int) -> dict:
    from grader import reuse
    from grader.framework import cases, expected
    from grader.framework.compare import measure_here

    public = cases.for_exercise(request["name"], hidden=False)
    wants = {c.id: expected.load().get(c.id, {}).get(str(devices)) for c in public}
    try:
        namespace = {"__name__": "__check__"}
        exec(compile(request["source"], "<your function>", "exec"), namespace)  # noqa: S102
        fn = namespace[request["function"]]
    except Exception as exc:  # noqa: BLE001 - whatever the copy raises, say it
        return {"problem": f"its copy could not be made there: "
                           f"{type(exc).__name__}: {str(exc)[:300]}"}
    with reuse.measuring():  # as check measures in the student's kernel
        return {"outcomes": measure_here(fn, public, wants, devices)}


def main(argv: list[str]) -> None:
    devices, fd, parent = (int(arg) for arg in argv)
    from grader.processes import die_with_parent

    die_with_parent(parent)
    with os.fdopen(fd, "w") as answers:
        serve(devices, answers)


if __name__ == "__main__":
    main(sys.argv[1:])
