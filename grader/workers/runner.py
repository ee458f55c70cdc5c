"""The trusted side of a worker: start it, send requests, enforce time limits, replace it.

:func:`run` executes one set of sources (a submission or the reference solutions) on one
device count and measures a list of cases, surviving crashes and hangs: a cell or an exercise
that kills or stalls its worker is recorded, the whole process group is killed, and a fresh
worker goes on without it.
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from grader import cases as case_registry
from grader import messages as msg
from grader import plain
from grader.cases import Case
from grader.course import PACKAGE
from grader.workers import confine, replies

#: How much of a worker's last output is kept to explain a failed start.
KEEP_TAIL = 2000
#: Reply lines naming the awaited request kept until read: each at most
#: ``replies.MAX_BYTES``, so that a worker writing them fast cannot fill the grader's memory.
KEEP_REPLIES = 4


#: bubblewrap, when installed: the sandbox workers run in.
BWRAP = shutil.which("bwrap")


@dataclass(frozen=True)
class Limits:
    """What a worker may use: seconds per exercise, per cell and to start; bytes of memory;
    and seconds in all for one run (a submission on one device count: every cell, test and
    fresh worker together), so that a submission that stalls everything still ends."""

    exercise: float = 60.0
    cell: float = 60.0
    start: float = 120.0
    memory: int = 4 * 2**30
    run: float = 900.0


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Sandbox:
    """Where a worker may look. With bubblewrap it sees only what it runs from: the system's
    programs and libraries, a few files of /etc, the Python environment and the grader's
    package (its hidden tests replaced by an empty folder), all read-only; a private /tmp and
    home of ``scratch`` bytes each; no network. Nothing else of the machine is there: not the
    course's other folders or its git history, not the submissions or the outputs. The
    ``hidden`` paths are masked too, should one lie inside what the worker sees. Without
    bubblewrap, a plain process."""

    hidden: tuple[Path, ...] = ()
    use_bwrap: bool = True
    scratch: int = 256 * 2**20

    @property
    def sandboxed(self) -> bool:
        return bool(self.use_bwrap and BWRAP)

    def command(self, home: str) -> list[str]:
        """The bubblewrap command line, or none. Everything in the sandbox ends when the
        process that started it does (:func:`spawn` starts it from a thread that lives as
        long as the grader: Linux ties that signal to the thread)."""
        if not self.sandboxed:
            return []
        # The private /tmp first: what is bound next may lie under /tmp (a course cloned there).
        args = [BWRAP, *_SYSTEM, "--size", str(self.scratch), "--tmpfs", "/tmp"]
        for path in _VISIBLE:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--dev", "/dev", "--proc", "/proc"]
        for path in (_HIDDEN_TESTS, *(p.resolve() for p in self.hidden)):
            if any(path.is_relative_to(seen) for seen in _VISIBLE):
                args += (["--tmpfs", str(path)] if path.is_dir() else
                         ["--ro-bind", "/dev/null", str(path)] if path.exists() else [])
        args += ["--size", str(self.scratch), "--tmpfs", home, "--chdir", home,
                 *_UNPRIVILEGED,
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session"]
        return args


#: Whoever starts the grader, root included (a container, a CI runner), a sandbox holds no
#: capability: none in effect or in its bounding set, in a user namespace of its own, where it
#: cannot make another (in which it would hold them all again). Without this, bubblewrap
#: started by root keeps root's capabilities: a submission could make a device node of the
#: disk, open any host file by its handle, remount its read-only binds writable and write
#: next to the grader's code, or raise its own memory cap.
_UNPRIVILEGED = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")

DEFAULT_SANDBOX = Sandbox()
_HIDDEN_TESTS = PACKAGE / case_registry.PACKAGES[True].split(".", 1)[1]
#: Read-only in the sandbox: the Python environment (as named and as resolved) and the grader.
_VISIBLE = tuple(sorted(
    {Path(p) for p in (sys.prefix, sys.base_prefix)}
    | {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, PACKAGE)}
))
#: Files of /etc that the dynamic linker, Python and JAX read: not the whole folder, which
#: may hold secrets (as root, /etc/shadow is readable).
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "hosts", "host.conf",
        "nsswitch.conf", "passwd", "group", "gai.conf")


def _system() -> list[str]:
    """bubblewrap arguments for the system's programs and libraries, read-only."""
    args = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


_SYSTEM = tuple(_system())
_warned = threading.Event()


def warn_without_sandbox(sandbox: Sandbox = DEFAULT_SANDBOX) -> None:
    """Say once per process that workers run unsandboxed, or without control groups, and
    what that leaves open."""
    if _warned.is_set():
        return
    _warned.set()
    if not sandbox.sandboxed:
        print(msg.WARN_NO_SANDBOX if not BWRAP else msg.WARN_SANDBOX_OFF, file=sys.stderr)
    if not confine.available():
        root = " (not at all, as root)" if os.getuid() == 0 else ""
        print(msg.WARN_NO_CGROUPS.format(root=root), file=sys.stderr)


@dataclass(frozen=True)
class Source:
    """A piece of code to execute: the file it belongs to (each file runs in a namespace of
    its own) and where in it (``lab.ipynb, cell 3``)."""

    file: str
    label: str
    code: str


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
    (:func:`grader.workers.lifetime.die_with_parent`) end when the thread that started them ends,
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
    ``grader.workers.verifier``, a verifier)."""

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
        if module == "grader.workers.worker":
            # JAX's compilation cache, the worker's own (never shared with another submission):
            # a function that builds its shard_map or jit at each call is compiled once, not
            # once per test. A verifier keeps none: each program it gets is new to it.
            env.update({"JAX_COMPILATION_CACHE_DIR": os.path.join(self.home.name, "jax-cache"),
                        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
                        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0"})
        prefix = sandbox.command(self.home.name)
        self.sandboxed = bool(prefix)
        # Its processes and threads together are capped, and share the CPU as one, in a
        # control group of its own; where none can be made, the worker caps its own.
        self.group = confine.Group.create()
        command = [*prefix, sys.executable, "-I", "-c", f"from {module} import main; main()",
                   str(devices), str(limits.memory),
                   # A plain worker ties its life to the grader's itself (in the sandbox, its
                   # pid is another and bubblewrap does it).
                   "0" if prefix else str(os.getpid()),
                   "0" if self.group else "1"]
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
                return reply

    def request(self, op: str, timeout: float, **fields: object) -> dict:
        """Send one request and wait for its reply."""
        req = secrets.token_hex(8)
        self.awaiting = f'"{req}"'.encode()
        try:
            self.process.stdin.write((json.dumps({"op": op, "req": req, **fields}) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkerDied(self.how_it_ended()) from None
        return self.receive(req, timeout, op)

    def how_it_ended(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        # A plain worker reports a signal as a negative code; bubblewrap as 128 + the signal.
        number = -code if code < 0 else code - 128 if self.sandboxed and code > 128 else 0
        if number:
            try:
                return f"killed by signal {signal.Signals(number).name}"
            except ValueError:
                return f"killed by signal {number}"
        return f"exit code {code}"

    def kill(self) -> None:
        """Kill the worker and everything it started (in its control group, if it has one,
        what left its process group too)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
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


@dataclass
class Run:
    """What one run measured: an outcome per case id, what went wrong loading the code, and,
    when the grader itself could not finish (a worker that did not start), why: such a run is
    reported but never kept for reuse, so that running the command again grades it anew.
    ``programs`` holds each program a verifier measured, by case id, place in its data and
    measure: the reference run's are what a submission's programs are run against, and the
    only places and measures where a submission's count."""

    devices: int
    outcomes: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unfinished: str | None = None
    programs: dict[tuple[str, tuple, str], str] = field(default_factory=dict)
    kept: int = 0  # what the replies kept cost (see grader.workers.replies)


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


def run(sources: Sequence[Source], cases: Sequence[Case], devices: int, limits: Limits,
        sandbox: Sandbox = DEFAULT_SANDBOX, reference: Run | None = None) -> Run:
    """Execute ``sources`` in a worker on ``devices`` devices and measure every case, within
    ``limits.run`` seconds in all. Programs the worker hands in are checked against the
    ``reference`` run's (the reference solutions' run on as many devices), if given."""
    warn_without_sandbox(sandbox)
    hidden_tests = case_registry.hidden_sources()
    result = Run(devices)
    ends = time.monotonic() + limits.run
    skip: set[int] = set()
    reported: set[int] = set()
    todo: dict[str, list[Case]] = {}
    for found in cases:
        todo.setdefault(found.exercise, []).append(found)

    if not sources:  # nothing to run: no worker needed to know that nothing is defined
        for exercise in list(todo):
            _settle(result, todo, exercise, {"missing": msg.MSG_NOT_FOUND.format(name=exercise)})
    while todo:
        if _stopping.is_set():
            break
        if time.monotonic() >= ends:
            why = msg.MSG_RUN_TOO_LONG.format(seconds=limits.run, devices=devices)
            result.problems.append(why)
            _give_up(result, todo, why)
            break
        try:
            worker = WorkerProcess(devices, limits, sandbox)
        except OSError as exc:
            _could_not_go_on(result, todo, exc)
            break
        try:
            try:
                ready = worker.receive("ready", limits.start)
                worker.request("tests", limits.start, modules=hidden_tests)
            except WorkerDied as exc:  # before any student code ran: say what the worker said
                last = worker.tail.decode(errors="replace").strip().splitlines()[-1:]
                raise WorkerDied(f"{exc}: {' '.join(last)}") from None
            if not ready.get("ok"):
                raise WorkerDied(f"it has {ready.get('devices')} devices")
            if _load(worker, sources, skip, reported, result, limits, ends):
                _measure(worker, todo, result, limits, ends)
        except (WorkerDied, WorkerTimeout) as exc:  # not the submission's doing
            if time.monotonic() < ends and not _stopping.is_set():
                _could_not_go_on(result, todo, exc)
            # otherwise the top of the loop says why: the run's time is up, or the grader stops
        finally:
            worker.close()
    if not _stopping.is_set():
        _verify(result, limits, sandbox, reference, ends)
    if _stopping.is_set():  # what a killed worker measured last is not to be trusted
        raise Stopped
    return result


def _verify(result: Run, limits: Limits, sandbox: Sandbox, reference: Run | None = None,
            ends: float | None = None) -> None:
    """Have a verifier take, in place, every measure a worker sent as a program (see
    :mod:`grader.workers.verifier`), each distinct program once, and run it against the
    ``reference`` run's program of the same case, place and measure. Where a reference run
    is given, a program it has no counterpart for fails (the test takes no such measure), as
    does a case whose program could not be measured, saying why; one whose program computes
    something else keeps its measures, for the judge's message and hint, with a ``differs``
    reason that stops it from passing; a case whose data claims to be verified already was
    forged, and fails.

    The programs of one exercise have ``limits.exercise`` seconds of the verifier in all,
    and every program must be done when the run's time (``ends``) is up: a program that
    takes longer costs its own cases, its verifier's whole sandbox is killed and a fresh
    verifier takes the next one."""
    todo: dict[tuple[str, str | None], list[tuple[str, tuple, object]]] = {}
    for case_id, outcome in result.outcomes.items():
        if not outcome.get("ok"):
            continue
        if plain.verified_paths(outcome.get("data")):
            result.outcomes[case_id] = {"ok": False, "unverified": "it claims to be verified"}
            continue
        for where, found in plain.programs(outcome.get("data")):
            blob, measure = found.get("blob"), found.get("measure")
            if not (isinstance(blob, str) and isinstance(measure, str)):
                result.outcomes[case_id] = {"ok": False, "unverified": "it is not a program"}
                break
            theirs = reference.programs.get((case_id, where, measure)) if reference else None
            if reference and theirs is None:  # the test took no such measure there
                result.outcomes[case_id] = {"ok": False, "unverified": "the test takes no "
                                            f"measure {measure!r} there"}
                break
            todo.setdefault((blob, theirs), []).append((case_id, where, measure))
    verifier, kind = None, (result.devices, limits, sandbox)
    deadlines: dict[str, float] = {}  # by exercise: when its programs' time is up
    try:
        for (blob, theirs), uses in todo.items():
            uses = [use for use in uses if result.outcomes[use[0]].get("ok")]
            if _stopping.is_set() or not uses:
                continue  # stopping, or an earlier program of these cases failed
            now = time.monotonic()
            exercises = {case_registry.exercise_of(case_id) for case_id, _, _ in uses}
            for exercise in exercises:
                deadlines.setdefault(exercise, now + limits.exercise)
            seconds = min(deadlines[exercise] for exercise in exercises) - now
            if ends is not None and ends - now < seconds:
                seconds = ends - now
                late = msg.MSG_RUN_TOO_LONG.format(seconds=limits.run, devices=result.devices)
            else:
                late = msg.MSG_VERIFIER_TIME_UP.format(seconds=limits.exercise)
            if seconds <= 0:
                for case_id, _, _ in uses:
                    result.outcomes[case_id] = {"ok": False, "unverified": late}
                continue
            if verifier is None:
                try:
                    verifier = _take_verifier(kind)
                except (OSError, WorkerDied, WorkerTimeout) as exc:
                    why = msg.MSG_VERIFIER_FAILED.format(devices=result.devices,
                                                         why=str(exc) or "no answer in time")
                    result.unfinished = result.unfinished or why
                    for case_id, _, _ in uses:
                        result.outcomes[case_id] = {"ok": False, "not_run": why}
                    continue
            try:
                reply = verifier.request("verify", seconds,
                                         measures=[measure for _, _, measure in uses], blob=blob,
                                         reference=theirs, seed=secrets.randbits(63))
            except (WorkerDied, WorkerTimeout) as exc:  # the program took it down: a new one
                verifier.close()
                verifier = None
                how = late if isinstance(exc, WorkerTimeout) else \
                    msg.MSG_VERIFIER_DIED.format(how=exc)
                reply = {"ok": False, "error": {"message": how}}
            measured = reply.get("measured")
            if reply.get("ok") and isinstance(measured, list) and len(measured) == len(uses):
                for (case_id, where, measure), taken in zip(uses, measured, strict=True):
                    outcome = result.outcomes[case_id]
                    if not outcome.get("ok"):
                        continue  # another of its measures failed
                    if not (isinstance(taken, dict) and taken.get("ok")):
                        result.outcomes[case_id] = {"ok": False, "unverified": _why(taken)}
                        continue
                    _put(outcome, where, {"verified": taken.get("data")})
                    if reply.get("differs"):  # judged as measured, and cannot pass
                        outcome["differs"] = str(reply["differs"])
                    else:
                        result.programs[(case_id, where, measure)] = blob
                continue
            for case_id, _, _ in uses:
                result.outcomes[case_id] = {"ok": False, "unverified": _why(reply)}
    finally:
        if verifier is not None:
            with _live_lock:
                _idle_verifiers.setdefault(kind, []).append(verifier)


def _why(reply: object) -> str:
    """The reason a verifier gave for not taking a measure."""
    error = reply.get("error") if isinstance(reply, dict) else None
    return str(error.get("message", "unknown error") if isinstance(error, dict)
               else "unknown error")


#: Verifiers waiting for work, by device count, limits and sandbox. A verifier runs none of a
#: submission's code, so it serves one run after another (saving a JAX start each time);
#: one that crashed or stalled is never put back. :func:`close_verifiers` ends them.
_idle_verifiers: dict[tuple[int, Limits, Sandbox], list[WorkerProcess]] = {}


def _take_verifier(kind: tuple[int, Limits, Sandbox]) -> WorkerProcess:
    """An idle verifier of this kind that is still alive, or a new one."""
    while True:
        with _live_lock:
            idle = _idle_verifiers.get(kind, [])
            verifier = idle.pop() if idle else None
        if verifier is None:
            return _start_verifier(*kind)
        if verifier.process.poll() is None:
            return verifier
        verifier.close()


def close_verifiers() -> None:
    """End every idle verifier (at the end of a batch)."""
    with _live_lock:
        idle = [v for verifiers in _idle_verifiers.values() for v in verifiers]
        _idle_verifiers.clear()
    for verifier in idle:
        verifier.close()


atexit.register(close_verifiers)  # after a batch that ended in an error, say


def _start_verifier(devices: int, limits: Limits, sandbox: Sandbox) -> WorkerProcess:
    verifier = WorkerProcess(devices, limits, sandbox, module="grader.workers.verifier")
    try:
        ready = verifier.receive("ready", limits.start)
    except (WorkerDied, WorkerTimeout):
        verifier.close()
        raise
    if not ready.get("ok"):
        verifier.close()
        raise WorkerDied(f"it has {ready.get('devices')} devices")
    return verifier


def _put(outcome: dict, where: tuple, value: dict) -> None:
    """Replace the tagged value at ``where`` (keys and indices) in an outcome's data."""
    if not where:
        outcome["data"] = value
        return
    container = outcome["data"]
    for step in where[:-1]:
        container = next(iter(container.values()))[step]
    next(iter(container.values()))[where[-1]] = value


def _could_not_go_on(result: Run, todo: dict[str, list[Case]], exc: Exception) -> None:
    """A worker would not start or answer: every case left is not run, and the run is marked
    unfinished, so that it is reported but not kept."""
    why = str(exc) or "no answer in time"
    result.unfinished = msg.MSG_WORKER_FAILED.format(devices=result.devices, why=why)
    _give_up(result, todo, result.unfinished)


def _load(worker, sources, skip, reported, result, limits, ends) -> bool:
    """Run the sources not skipped; False when one of them took the worker down, or the
    run's time (``ends``) ran out."""
    for index, source in enumerate(sources):
        if index in skip:
            continue
        seconds = min(limits.cell, ends - time.monotonic())
        try:
            reply = worker.request(
                "cell", seconds, file=source.file, label=source.label, source=source.code
            )
        except (WorkerDied, WorkerTimeout) as exc:
            if isinstance(exc, WorkerTimeout) and seconds < limits.cell:
                return False  # the run's time is up, whatever this cell's share of it
            skip.add(index)
            reported.add(index)
            if isinstance(exc, WorkerTimeout):
                text = msg.MSG_CELL_TIMEOUT.format(where=source.label, seconds=limits.cell)
            else:
                text = msg.MSG_CELL_CRASHED.format(where=source.label, how=exc)
            result.problems.append(text)
            return False
        if not reply.get("ok") and index not in reported:
            reported.add(index)
            error = reply.get("error") or {}
            result.problems.append(
                msg.MSG_CELL_RAISED.format(
                    where=source.label,
                    type=error.get("type", "an error"),
                    message=str(error.get("message", ""))[:300],
                )
            )
    return True


def _measure(worker, todo: dict[str, list[Case]], result: Run, limits: Limits,
             ends: float) -> None:
    """Measure the cases of every exercise still to do, removing each as it is done; stop at
    the first exercise that took the worker down or stalled it, or when the run's time
    (``ends``) is up, leaving what was not measured in ``todo``."""
    seconds = min(limits.cell, ends - time.monotonic())
    try:
        found = worker.request("lookup", seconds, names=list(todo)).get("found", {})
    except (WorkerDied, WorkerTimeout) as exc:  # the cells left something that stalls it
        if isinstance(exc, WorkerTimeout) and seconds < limits.cell:
            return  # the run's time is up, which run() reports
        how = f"took over {seconds:g} s" if isinstance(exc, WorkerTimeout) else f"failed: {exc}"
        _give_up(result, todo, msg.MSG_LOOKUP_FAILED.format(how=how, devices=worker.devices))
        return
    for exercise in list(todo):
        kind = found.get(exercise, "missing")
        if kind != "function":
            text = (
                msg.MSG_NOT_FOUND.format(name=exercise)
                if kind == "missing"
                else msg.MSG_NOT_CALLABLE.format(name=exercise, kind=kind)
            )
            _settle(result, todo, exercise, {"missing": text})
    for exercise in list(todo):
        own = time.monotonic() + limits.exercise
        deadline = min(own, ends)
        pending = todo.pop(exercise)
        for i, c in enumerate(pending):
            try:
                reply = worker.request("probe", deadline - time.monotonic(), case_id=c.id)
            except WorkerTimeout:
                if deadline < own:  # the run's time is up: not this exercise's fault
                    todo[exercise] = pending[i:]
                    return
                failure = {"ok": False, "timeout": limits.exercise, "devices": worker.devices}
            except WorkerDied as exc:
                failure = {"ok": False, "crashed": str(exc), "devices": worker.devices}
            else:
                result.kept += worker.cost
                if result.kept > replies.MAX_RUN_ITEMS:  # kept until judged: bounded
                    reply = replies.failed(msg.MSG_REPLIES_TOO_LARGE.format(
                        devices=worker.devices, items=replies.MAX_RUN_ITEMS))
                restored = reply.pop("restored", None)
                if restored:
                    text = msg.MSG_RESTORED.format(what=case_registry.changes(restored))
                    if text not in result.problems:
                        result.problems.append(text)
                result.outcomes[c.id] = reply
                continue
            for rest in pending[i:]:
                result.outcomes[rest.id] = failure
            return


def _settle(result: Run, todo: dict[str, list[Case]], exercise: str, outcome: dict) -> None:
    """Give every case of ``exercise`` the same failed outcome and take it off the list."""
    for c in todo.pop(exercise):
        result.outcomes[c.id] = {"ok": False, **outcome}


def _give_up(result: Run, todo: dict[str, list[Case]], why: str) -> None:
    for exercise in list(todo):
        _settle(result, todo, exercise, {"not_run": why})
