"""A worker's process, seen from the grader: start it, send requests, read its replies.

:class:`WorkerProcess` runs a worker (or a verifier) in its sandbox, in a control group of its
own where one can be made, and reads its replies without ever holding more than a few; every
live one is known, so that a stopping grader kills them all (:func:`stop_all`).
"""

from __future__ import annotations

import json
import os
import queue
import secrets
import subprocess
import sys
import tempfile
import threading
import time

from grader import messages as msg
from grader import processes
from grader.workers import compiled, confine, replies
from grader.workers.sandbox import Limits, Sandbox

#: How much of a worker's last output is kept to explain a failed start.
KEEP_TAIL = 2000
#: Reply lines naming the awaited request kept until read: each at most
#: ``replies.MAX_BYTES``, so that a worker writing them fast cannot fill the grader's memory.
KEEP_REPLIES = 4


_spawn_requests: queue.Queue = queue.Queue()
_spawner_lock = threading.Lock()
_spawner: threading.Thread | None = None


def _spawn_forever() -> None:
    while True:
        args, kwargs, started = _spawn_requests.get()
        try:
            started.put(subprocess.Popen(args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the thread that asked
            started.put(exc)


def spawn(args: list[str], **kwargs: object) -> subprocess.Popen:
    """``subprocess.Popen(args, **kwargs)``, started from one thread that lives as long as
    the grader. A sandbox (``--die-with-parent``) and a plain worker
    (:func:`grader.processes.die_with_parent`) end when the thread that started them ends,
    however the grader ends: started from a grading thread, a verifier that outlives it
    would be killed; started otherwise, one would outlive a grader killed by SIGKILL."""
    global _spawner
    with _spawner_lock:
        if _spawner is None:
            _spawner = threading.Thread(target=_spawn_forever, name="grader-spawner",
                                        daemon=True)
            _spawner.start()
    started: queue.Queue = queue.Queue()
    _spawn_requests.put((args, kwargs, started))
    process = started.get()
    if isinstance(process, BaseException):
        raise process
    return process


class WorkerDied(Exception):
    """The worker's process ended."""


class WorkerTimeout(Exception):
    """The worker did not answer in time."""


class WorkerProcess:
    """One worker process on a fixed number of devices (or, with ``module`` set to
    ``grader.workers.verifier`` or ``grader.workers.tester``, a verifier or a tester)."""

    def __init__(self, devices: int, limits: Limits, sandbox: Sandbox,
                 module: str = "grader.workers.worker") -> None:
        self.devices = devices
        self.home = tempfile.TemporaryDirectory(prefix="grader-worker-")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.home.name,
            "TMPDIR": self.home.name,
            "JAX_PLATFORMS": "cpu",
            "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg",
        }
        # JAX's compilation cache, the process's own (never shared with another submission's):
        # a function that builds its shard_map or jit at each call is compiled once, not once
        # per test.
        env.update({"JAX_COMPILATION_CACHE_DIR": os.path.join(self.home.name, "jax-cache"),
                    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
                    # which would put the cache's path (this process's home) in every key
                    "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none"})
        # Under it, the programs the reference run's workers, testers and verifiers compiled
        # (grader.workers.compiled), which a submission's read.
        if sandbox.shares_compiled:
            env[compiled.FOLDER_ENV] = str(sandbox.compiled)
            if sandbox.writes_compiled:
                env[compiled.WRITES_ENV] = "1"
        self.sandboxed = sandbox.sandboxed
        # Its processes and threads together are capped in number and in memory, and share
        # the CPU as one, in a control group of its own; where none can be made, the worker
        # caps its own number of tasks, and each process its own memory.
        self.group = confine.Group.create(limits.memory)
        command = sandbox.launch([
            sys.executable, "-I", "-c", f"from {module} import main; main()",
            str(devices), str(limits.memory),
            # A plain worker ties its life to the grader's itself (in the sandbox, its pid is
            # another and bubblewrap does it).
            "0" if self.sandboxed else str(os.getpid()),
            "0" if self.group else "1"], self.home.name)
        self.process = spawn(
            self.group.command(command) if self.group else command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.home.name,
            env=env,
            start_new_session=True,
        )
        with _live_lock:
            _live.add(self)
        self.replies: queue.Queue[tuple[bytes, bool] | None] = queue.Queue(KEEP_REPLIES + 1)
        self.awaiting: bytes | None = b'"ready"'  # the id of the request awaited, quoted
        self.cost = 0  # of the last reply received (see replies.cost)
        self.size = 0  # and its bytes
        self.tail = b""
        threading.Thread(target=self._read_replies, daemon=True).start()
        threading.Thread(target=self._discard_output, daemon=True).start()

    def _read_replies(self) -> None:
        """Keep the lines that name the request awaited (a few at most); drop the rest as they
        come. Of a line longer than any reply may be, only its start is kept, marked."""
        with self.process.stdout as stream:  # closed here, by its only reader
            while line := stream.readline(replies.MAX_BYTES):
                truncated = not line.endswith(b"\n")
                while truncated and (rest := stream.readline(replies.MAX_BYTES)):
                    if rest.endswith(b"\n"):
                        break
                awaiting = self.awaiting
                if awaiting is not None and awaiting in line \
                        and self.replies.qsize() < KEEP_REPLIES:
                    self.replies.put((line, truncated))
        self.replies.put(None)  # the queue keeps one place free for this

    def _discard_output(self) -> None:
        """Read what the worker prints, however much, so that it never blocks on a full pipe;
        only the last lines are kept, to explain a worker that fails to start."""
        with self.process.stderr as stream:
            while chunk := stream.read1(65536):
                self.tail = (self.tail + chunk)[-KEEP_TAIL:]

    def receive(self, req: str, timeout: float, op: str = "ready") -> dict:
        """The reply to request ``req`` (of kind ``op``), as :func:`grader.workers.replies.read`
        accepts it; lines that are not it are ignored."""
        self.awaiting = f'"{req}"'.encode()
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WorkerTimeout
            try:
                line = self.replies.get(timeout=remaining)
            except queue.Empty:
                raise WorkerTimeout from None
            if line is None:
                self.replies.put(None)  # for whoever asks next
                raise WorkerDied(self.how_it_ended())
            text, truncated = line
            found = replies.read(text, req, op, truncated)
            if found is not None:
                self.awaiting = None
                reply, self.cost = found
                self.size = len(text) if self.cost else 0  # a failed read keeps nothing
                return reply

    def request(self, op: str, timeout: float, **fields: object) -> dict:
        """Send one request and wait for its reply."""
        return self.receive(self.send(op, **fields), timeout, op)

    def send(self, op: str, **fields: object) -> str:
        """Send one request, and await its replies from now on; returns its id."""
        req = secrets.token_hex(8)
        self.answer(req, op, **fields)
        return req

    def answer(self, req: str, op: str = "answer", **fields: object) -> None:
        """Send a line of request ``req`` (a tester's probe asks, the runner answers), and
        await its replies from now on."""
        self.awaiting = f'"{req}"'.encode()
        try:
            self.process.stdin.write((json.dumps({"op": op, "req": req, **fields}) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.how_it_ended()) from None

    def how_it_ended(self) -> str:
        how = processes.how_it_ended(self.process, wait=5, sandboxed=self.sandboxed)
        if self.group and self.group.memory and self.group.out_of_memory():
            how += msg.OVER_GROUP_MEMORY.format(mib=self.group.memory // 2**20)
        return how

    def kill(self) -> None:
        """Kill the worker and everything it started (in its control group, if it has one,
        what left its process group too)."""
        processes.kill_group(self.process)
        if self.group:
            self.group.kill()

    def close(self) -> None:
        """Kill the worker and everything it started, and clean up after it. Its output
        pipes are closed by the threads reading them, once every process holding them has
        ended: closing them here could wait on a reader blocked in a read."""
        with _live_lock:
            _live.discard(self)
        self.kill()
        self.process.wait()
        if self.group:
            self.group.kill()  # what the kill raced with
            self.group.remove()
        try:
            self.process.stdin.close()
        except OSError:
            pass
        self.home.cleanup()


class Stopped(Exception):
    """The grader is being stopped (:func:`stop_all`): no new worker starts."""


_live: set[WorkerProcess] = set()
_live_lock = threading.Lock()
_stopping = threading.Event()


def stop_all() -> None:
    """Kill every worker of this process and start no new one until :func:`allow_workers`:
    the grader is stopping (an interrupted batch). What the killed workers were measuring is
    not kept."""
    _stopping.set()
    with _live_lock:
        workers = list(_live)
    for worker in workers:
        worker.kill()


def allow_workers() -> None:
    """Let workers start again (a new batch, in a process that stopped an earlier one)."""
    _stopping.clear()


def stopping() -> bool:
    """Whether the grader is stopping (:func:`stop_all`)."""
    return _stopping.is_set()
