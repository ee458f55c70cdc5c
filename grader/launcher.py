"""Several JAX processes on this machine, joined by ``jax.distributed``: the launcher that
lesson 6 (:mod:`grader.lessons.cluster`) and its grader tests (:mod:`grader.workers.replay`)
share.

:func:`launch` starts ``processes`` Python processes, each with ``devices_per_process`` CPU
devices, on a job given as plain data: a function's source shipped by
:func:`grader.lessons.cluster.run`, or ``{"entry": "module:function", ...}``, whose function
each process calls with the job. Results travel back as plain data on a pipe of their own,
never as printed text. Everything is bounded: if a process fails, or they are not all done
within ``timeout`` seconds, every process is killed and a :class:`ClusterError` says which one
and shows the last lines it wrote.

A :class:`Cluster` keeps its processes for one request after another (lesson 6's grader keeps
one in a worker): the job's entry returns what answers each request, and a failure or a timeout
kills them all, as a launch does, so that the next request starts anew.
"""

from __future__ import annotations

import importlib
import json
import os
import secrets
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from grader import messages as msg
from grader import processes
from grader.framework import plain

DEFAULT_PROCESSES = 2
DEFAULT_DEVICES_PER_PROCESS = 4
#: Seconds the processes of one launch may take, start-up included.
DEFAULT_TIMEOUT = 30.0
#: After the first failure, how long the others may still report theirs: the error then names
#: the first process in order that raised, not whichever happened to be fastest.
GRACE = 2.0
#: How much of a process's output is kept to explain a failure.
KEEP_TAIL = 3000
#: The largest result a process may send back.
MAX_RESULT = 64 * 2**20

#: What every launched process finds in its environment: who it is and where to meet.
ENV_COORDINATOR = "CLUSTER_COORDINATOR"
ENV_NUM_PROCESSES = "CLUSTER_NUM_PROCESSES"
ENV_PROCESS_ID = "CLUSTER_PROCESS_ID"
ENV_DEVICES = "CLUSTER_DEVICES_PER_PROCESS"


class ClusterError(RuntimeError):
    """The launched processes did not all deliver a result."""


class ProcessFailed(ClusterError):
    """A process raised an exception or ended without a result."""

    def __init__(self, text: str, index: int, error_type: str, error_message: str) -> None:
        super().__init__(text)
        self.index = index
        self.error_type = error_type
        self.error_message = error_message


class ClusterTimeout(ClusterError):
    """The processes were not all done in time."""


class _PortTaken(ProcessFailed):
    """Process 0 could not listen on the coordinator's port: worth one more try."""


def launch(job: dict, processes: int, devices_per_process: int, timeout: float,
           xla_flags: str = "") -> list[Any]:
    """Start the processes on ``job`` (plain data: a function shipped by :func:`run`, or
    ``{"entry": "module:function", ...}``, whose function each process calls with the job),
    with ``xla_flags`` added to their ``XLA_FLAGS``, collect their results, and kill every
    one of them in the end."""
    if processes < 1 or devices_per_process < 1:
        raise ValueError(msg.MSG_CLUSTER_TOO_FEW)
    with tempfile.TemporaryDirectory(prefix="grader-cluster-") as folder:
        job_path = Path(folder, "job.json")
        job_path.write_text(json.dumps(job))
        try:
            return _start(job_path, processes, devices_per_process, timeout, xla_flags)
        except _PortTaken:  # another program took the free port before process 0 could
            return _start(job_path, processes, devices_per_process, timeout, xla_flags)


def _start(job_path: Path, processes: int, devices_per_process: int, timeout: float,
           xla_flags: str) -> list:
    children: list[_Child] = []
    try:
        children = _children(job_path, processes, devices_per_process, xla_flags)
        return _collect(children, timeout)
    finally:
        for child in children:
            child.kill()


def _children(job_path: Path, processes: int, devices_per_process: int, xla_flags: str,
              serve: bool = False) -> list[_Child]:
    """The processes of one launch, started (each killed again if another fails to start)."""
    nonce = secrets.token_hex(16)
    port = _free_port()
    children: list[_Child] = []
    try:
        for index in range(processes):
            env = _environment(index, processes, devices_per_process, port, xla_flags)
            children.append(_Child(index, job_path, env, nonce, serve))
    except BaseException:
        for child in children:
            child.kill()
        raise
    return children


class Cluster:
    """``processes`` processes launched on ``job`` once, that answer one request after
    another: the job's entry returns a function, which each process calls on each request
    (plain data) in turn. A request that fails or takes longer than its ``timeout`` kills
    every process, as a launch does, and the next one launches them anew. :meth:`close`
    kills them; so does the end of the process that launched them."""

    def __init__(self, job: dict, processes: int, devices_per_process: int,
                 xla_flags: str = "") -> None:
        if processes < 1 or devices_per_process < 1:
            raise ValueError(msg.MSG_CLUSTER_TOO_FEW)
        self._folder = tempfile.TemporaryDirectory(prefix="grader-cluster-")
        self._job_path = Path(self._folder.name, "job.json")
        self._job_path.write_text(json.dumps({**job, "serve": True}))
        self._shape = (processes, devices_per_process, xla_flags)
        self._children: list[_Child] = []
        self._asked = 0  # requests these processes were sent

    def ask(self, request: dict, timeout: float) -> list[Any]:
        """Every process's answer to ``request``, in process order."""
        try:
            try:
                return self._ask(request, timeout)
            except _PortTaken:  # another program took the free port before process 0 could
                self._kill()
                return self._ask(request, timeout)
        except BaseException:
            self._kill()
            raise

    def _ask(self, request: dict, timeout: float) -> list[Any]:
        if not self._children:
            self._children, self._asked = _children(self._job_path, *self._shape, serve=True), 0
        self._asked += 1
        line = json.dumps(request)
        for child in self._children:
            child.expect(self._asked, line)
        return _collect(self._children, timeout)

    def _kill(self) -> None:
        for child in self._children:
            child.kill()
        self._children = []

    def close(self) -> None:
        """Kill every process and remove the job's folder."""
        self._kill()
        self._folder.cleanup()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _environment(index: int, processes: int, devices: int, port: int,
                 xla_flags: str = "") -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        ENV_COORDINATOR: f"127.0.0.1:{port}",
        ENV_NUM_PROCESSES: str(processes),
        ENV_PROCESS_ID: str(index),
        ENV_DEVICES: str(devices),
        "JAX_PLATFORMS": "cpu",
    })
    # The device count comes from ENV_DEVICES alone, whatever this process was given.
    flags = [f for f in f"{env.get('XLA_FLAGS', '')} {xla_flags}".split()
             if not f.startswith("--xla_force_host_platform_device_count")]
    env["XLA_FLAGS"] = " ".join(flags)
    return env


#: What a launched process runs (with -c rather than -m, so that this module is imported once).
_CHILD = "import sys; from grader.launcher import _child_main; _child_main(sys.argv)"


class _Child:
    """One launched process: its result pipe, and the tail of what it printed."""

    def __init__(self, index: int, job_path: Path, env: dict[str, str], nonce: str,
                 serve: bool = False) -> None:
        self.index = index
        self.nonce = nonce
        self.number: int | None = None  # of the request it answers now (a Cluster's)
        read_end, write_end = os.pipe()
        isolated = ["-I"] if sys.flags.isolated else []
        try:
            self.process = subprocess.Popen(
                [sys.executable, *isolated, "-c", _CHILD, str(job_path), str(write_end),
                 str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(write_end,),
                env=env,
                start_new_session=True,  # its own process group: killed as a whole
            )
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self.result_fd = read_end
        self.output_fd = self.process.stdout.fileno()
        self.result = b""
        self.tail = b""
        self.reply: dict | None = None
        self.done = False  # its result pipe is closed: it has said all it will say
        try:  # the nonce travels on stdin, read before any of the program's code runs
            self.process.stdin.write(f"{nonce}\n".encode())
            self.process.stdin.flush()
            if not serve:  # a Cluster's requests follow it, one a line
                self.process.stdin.close()
        except OSError:
            pass

    def expect(self, number: int, request: str) -> None:
        """Send a Cluster's request ``number``, and wait for its answer from now on."""
        self.number, self.result, self.reply = number, b"", None
        try:
            self.process.stdin.write(f"{request}\n".encode())
            self.process.stdin.flush()
        except OSError:  # it has ended: it fails the request
            self.done = True

    def read(self, fd: int) -> bool:
        """Read what is ready on ``fd``; False at its end."""
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if fd == self.output_fd:
            self.tail = (self.tail + chunk)[-KEEP_TAIL:]
        elif chunk and len(self.result) + len(chunk) <= MAX_RESULT:
            self.result += chunk
        elif chunk:  # too large to be a result: stop listening
            chunk = b""
        if not chunk and fd == self.result_fd:
            self.done = True
        if fd == self.result_fd and self.reply is None and (b"\n" in chunk or self.done):
            self.reply = self._parse()
        return bool(chunk)

    def _parse(self) -> dict | None:
        for line in self.result.decode(errors="replace").splitlines():
            try:
                reply = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if (isinstance(reply, dict) and reply.get("nonce") == self.nonce
                    and reply.get("request") == self.number):
                return reply
        return None

    @property
    def ok(self) -> bool:
        return self.reply is not None and self.reply.get("ok") is True

    @property
    def failed(self) -> bool:
        return (self.done or self.reply is not None) and not self.ok

    def output(self) -> str:
        """The last lines the process wrote, without Gloo's connection messages."""
        lines = self.tail.decode(errors="replace").splitlines()
        return "\n".join(line for line in lines if not line.startswith("[Gloo]")).strip()

    def how_it_ended(self) -> str:
        # its result pipe closes as it exits: give the exit a moment to complete
        return processes.how_it_ended(self.process, wait=1)

    def kill(self) -> None:
        """Kill the process and whatever it started (its process group), reap it, and close
        its pipes."""
        processes.kill_group(self.process)
        self.process.wait()
        os.close(self.result_fd)
        self.process.stdout.close()
        try:  # a Cluster's process still has its requests' pipe
            self.process.stdin.close()
        except OSError:
            pass


def _collect(children: list[_Child], timeout: float) -> list[Any]:
    """Wait for every result; raise as soon as one process failed (after a short grace for
    the others to report) or the time is up."""
    deadline = time.monotonic() + timeout
    first_failure = None
    with selectors.DefaultSelector() as selector:
        for child in children:
            selector.register(child.result_fd, selectors.EVENT_READ, child)
            selector.register(child.output_fd, selectors.EVENT_READ, child)
        while True:
            if all(c.ok for c in children):
                return [_from_plain(c.reply.get("value")) for c in children]
            now = time.monotonic()
            if any(c.failed for c in children):
                first_failure = first_failure or now
                if now - first_failure >= GRACE or all(c.done for c in children):
                    raise _failure(children)
            if now >= deadline:
                raise _timeout(children, timeout)
            for key, _ in selector.select(min(deadline - now, 0.1)):
                if not key.data.read(key.fd):
                    selector.unregister(key.fd)


def _failure(children: list[_Child]) -> ProcessFailed:
    """The error of the first process that raised, or else of the first that ended."""
    count = len(children)
    raised = [c for c in children if c.failed and c.reply is not None]
    child = (raised or [c for c in children if c.failed])[0]
    if child.reply is not None:
        error = child.reply.get("error") or {}
        kind, message = str(error.get("type", "an error")), str(error.get("message", ""))
        text = msg.MSG_CLUSTER_RAISED.format(index=child.index, count=count, type=kind,
                                             message=message)
    else:
        kind, message = "", child.how_it_ended()
        text = msg.MSG_CLUSTER_ENDED.format(index=child.index, count=count, how=message)
    failure = (NotImplementedError(text) if kind == "NotImplementedError"
               else _PortTaken(text, child.index, kind, message)
               if child.index == 0 and "Failed to add port" in child.output()
               else ProcessFailed(text, child.index, kind, message))
    _add_output(failure, [child])
    return failure


def _timeout(children: list[_Child], seconds: float) -> ClusterTimeout:
    late = [c for c in children if c.reply is None and not c.done]  # still owe an answer
    names = " and ".join(str(c.index) for c in late)
    which = f"process {names}" if len(late) == 1 else f"processes {names}"
    error = ClusterTimeout(msg.MSG_CLUSTER_TIMEOUT.format(which=which, count=len(children),
                                                          seconds=seconds))
    _add_output(error, late)
    return error


def _add_output(error: BaseException, children: list[_Child]) -> None:
    for child in children:
        error.add_note(msg.MSG_CLUSTER_OUTPUT.format(index=child.index,
                                                     output=child.output() or "(nothing)"))


# --- sending a function as source ---------------------------------------------------------


# --- plain data, keeping dtypes --------------------------------------------------------------
def _from_plain(data: Any) -> Any:
    """Read what a process returned (:func:`~grader.framework.plain.to_plain`) back, as it was."""
    try:
        return plain.from_plain(data, as_returned=True)
    except plain.NotPlain as exc:
        raise ClusterError(msg.MSG_CLUSTER_MALFORMED.format(error=exc)) from None


# --- the child's side -----------------------------------------------------------------------
def join() -> None:
    """Give JAX this process's devices and join the others: before anything starts JAX."""
    import jax

    jax.config.update("jax_num_cpu_devices", int(os.environ[ENV_DEVICES]))
    jax.distributed.initialize(
        os.environ[ENV_COORDINATOR],
        num_processes=int(os.environ[ENV_NUM_PROCESSES]),
        process_id=int(os.environ[ENV_PROCESS_ID]),
    )


def _execute(job: dict) -> Any:
    """Run the job in this process: a function shipped by :func:`run`, or a job's entry."""
    if "entry" in job:
        module, name = job["entry"].split(":")
        return getattr(importlib.import_module(module), name)(job)
    if job["initialize"]:
        join()
    namespace: dict[str, Any] = {"__name__": "__cluster__"}
    exec(compile(job["code"], f"<{job['name']}>", "exec"), namespace)  # noqa: S102
    return namespace[job["name"]](*[_from_plain(a) for a in job["args"]])


def _child_main(argv: list[str]) -> None:
    job_path, result_fd, parent = argv[1], int(argv[2]), int(argv[3])
    processes.die_with_parent(parent)
    nonce = _line(0).strip()  # unbuffered: a Cluster's requests follow on the same pipe
    requests = os.fdopen(os.dup(0), "r")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    results = os.fdopen(result_fd, "w")
    job = json.loads(Path(job_path).read_text())
    if not job.get("serve"):
        requests.close()
        _answer(results, {"nonce": nonce}, lambda: _execute(job))
        results.close()
        # Then end as usual: jax.distributed's exit waits for the others, and the launcher
        # kills every process once it has all results, or after a failure.
        return
    answer: list[Any] = []  # what the job's entry returned: it answers each request
    for number, line in enumerate(requests, start=1):
        def work(line: str = line) -> Any:
            if not answer:
                answer.append(_execute(job))
            return answer[0](json.loads(line))

        _answer(results, {"nonce": nonce, "request": number}, work)


def _line(fd: int) -> str:
    """One line read from ``fd`` a byte at a time, so that nothing after it is taken."""
    read = b""
    while not read.endswith(b"\n"):
        byte = os.read(fd, 1)
        if not byte:
            break
        read += byte
    return read.decode(errors="replace")


def _answer(results: Any, reply: dict, work: Any) -> None:
    """Write ``reply`` with what ``work()`` returned, or the error it raised, to the results."""
    try:
        reply = {**reply, "ok": True, "value": plain.to_plain(work())}
    except BaseException as exc:  # noqa: BLE001 - the program may raise anything
        import traceback

        from grader.framework.cases import describe_error

        trace = exc.__traceback__  # from the program's own frames on
        while trace is not None and trace.tb_frame.f_code.co_filename == __file__:
            trace = trace.tb_next
        traceback.print_exception(type(exc), exc, trace)
        reply = {**reply, "ok": False, "error": describe_error(exc)}
    sys.stdout.flush()
    sys.stderr.flush()
    results.write(json.dumps(reply) + "\n")
    results.flush()
