"""The worker: runs a student's code and the probes next to it, in a process of its own.

Started by :mod:`grader.workers.runner` as
``python -I -c "from grader.workers.worker import main; main()" DEVICES MEMORY GRADER TASKS``
(imported under its own name, so that the seal covers it; GRADER is the grader's pid, or 0 in
the sandbox; TASKS is 1 where no control group caps its processes, see
:mod:`grader.workers.confine`). It fixes the device count before JAX starts, then answers
requests read as JSON lines on stdin with JSON lines on its original stdout. The student's
code sees /dev/null as stdin, and its stdout and stderr both go to the worker's stderr, so
nothing it prints can pass for a reply.
"""

from __future__ import annotations

import builtins
import json
import os
import sys
from typing import Any, TextIO

from grader.processes import die_with_parent
from grader.workers import seal as sealing
from grader.workers.confine import limit
from grader.workers.record import RECORD  # lesson 6: launched processes replay what ran here

#: Cell magics that only observe the code they wrap: the body still runs.
TRANSPARENT_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "memit"})
#: The descriptor behind ``type.__name__``, which a metaclass's own ``__name__`` cannot replace.
_TYPE_NAME = vars(type)["__name__"]


class _SilentShell:
    """Stands in for IPython's shell: magics and ``!`` commands do nothing, except that the
    body of a cell magic like ``%%time`` still runs."""

    def __init__(self, namespace: dict[str, Any]) -> None:
        self.namespace = namespace

    def run_cell_magic(self, name: str, line: str, body: str) -> None:
        if name in TRANSPARENT_CELL_MAGICS:
            exec(compile(_to_python(body), f"%%{name}", "exec"), self.namespace)  # noqa: S102

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: None


def _to_python(source: str) -> str:
    """Rewrite IPython syntax (magics, ``!`` lines) as calls on the silent shell."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _fresh_namespace() -> dict[str, Any]:
    namespace: dict[str, Any] = {
        "__name__": "__submission__",
        "__builtins__": builtins,
        "display": lambda *args, **kwargs: None,
    }
    shell = _SilentShell(namespace)
    namespace["get_ipython"] = lambda: shell
    return namespace


class Worker:
    """State of one worker: a namespace per file of the submission, as if each notebook ran
    in a kernel of its own (two notebooks may both define a global ``mesh``)."""

    def __init__(self, replies: TextIO) -> None:
        self.replies = replies
        self.namespaces: dict[str, dict[str, Any]] = {}
        RECORD.namespaces = self.namespaces  # lesson 6: which file defines a name
        self.cases: dict[str, Any] = {}

    def find(self, name: str) -> Any:
        """The object ``name`` is bound to in the last file that defines it, or None."""
        for namespace in reversed(self.namespaces.values()):
            if name in namespace:
                return namespace[name]
        return None

    def send(self, reply: dict[str, Any]) -> None:
        self.replies.write(json.dumps(reply) + "\n")
        self.replies.flush()

    def cell(self, file: str, label: str, source: str) -> dict[str, Any]:
        from grader.cases import describe_error

        namespace = self.namespaces.setdefault(file, _fresh_namespace())
        RECORD.cells.setdefault(file, []).append((label, source))  # lesson 6: replayed
        try:
            code = compile(_to_python(source), label, "exec")
            exec(code, namespace)  # noqa: S102 - running the submission is the point
        except BaseException as exc:  # noqa: BLE001 - a cell may raise anything
            return {"ok": False, "error": describe_error(exc)}
        return {"ok": True}

    def lookup(self, names: list[str]) -> dict[str, Any]:
        found = {}
        for name in names:
            value = self.find(name)
            found[name] = (
                "missing" if value is None else "function" if callable(value) else
                _TYPE_NAME.__get__(type(value), type)
            )
        return {"ok": True, "found": found}

    def tests(self, modules: dict[str, str]) -> dict[str, Any]:
        from grader import cases

        cases.install_sources(modules)
        RECORD.tests.update(modules)  # lesson 6: installed again in launched processes
        self.cases.update({c.id: c for c in cases.load(hidden=True)})
        return {"ok": True}

    def seal(self) -> sealing.Seal:
        """A seal on the modules, this worker (a method shadowed on it is removed too) and its
        tests, as they are now."""
        return sealing.Seal([("the worker", self), ("the grader's tests", self.cases),
                             *((f"test {c.id}", c) for c in self.cases.values())])

    def probe(self, case_id: str) -> dict[str, Any]:
        from grader import cases

        found = self.cases[case_id]
        return cases.measure(found, self.find(found.exercise))

    def serve(self, requests: TextIO) -> None:
        """Answer requests until stdin closes.

        A measurement trusts only what this frame's locals hold, taken before any student code
        ran (and, since :func:`forbid_trace_hooks`, out of reach of Python code): the seal's
        state, the function that restores it with that function's code and defaults (put back
        before each use), the reply stream's methods and the interpreter's own functions. Before
        a probe everything sealed is put back (what had changed is reported); a probe during
        which it changed again is void, and so is one while a thread the submission started
        still runs (it could change things back and forth).
        """
        write, flush, dumps = self.replies.write, self.replies.flush, json.dumps
        gettrace, getprofile, threads = sys.gettrace, sys.getprofile, sys._current_frames
        sealed = None  # (state, restore, its code, its defaults) once the tests are in
        for line in requests:
            request = json.loads(line)
            op, req = request.pop("op"), request.pop("req")
            if op == "probe" and sealed is not None:
                state, restore, code, defaults = sealed
                restore.__code__, restore.__defaults__ = code, defaults
                before = restore(state)
                if gettrace() or getprofile():
                    reply = {"ok": False, "tampered": ["a trace or profile function"]}
                elif len(threads()) > 1:
                    reply = {"ok": False, "threads": len(threads()) - 1}
                else:
                    reply = self.probe(**request)
                    restore.__code__, restore.__defaults__ = code, defaults
                    during = restore(state)
                    if during:
                        reply = {"ok": False, "tampered": during}
                    elif before:
                        reply = {**reply, "restored": before}
            else:
                reply = getattr(self, op)(**request)
            if op == "tests":  # before any student code: the runner sends cells after this
                sealed = (self.seal().state, sealing.restore, sealing.restore.__code__,
                          sealing.restore.__defaults__)
            write(dumps({"req": req, **reply}) + "\n")
            flush()


def forbid_trace_hooks() -> None:
    """Remove the functions that install a Python trace or profile function. Such a function
    could rewrite the locals of :meth:`Worker.serve`; without these (and without a debugger,
    which needs them) only ctypes could install one."""
    import threading

    for module in (sys, threading):
        for name in ("settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"):
            if hasattr(module, name):
                delattr(module, name)


def main() -> None:
    devices, memory, grader, tasks = (int(a) for a in sys.argv[1:5])
    if grader:  # not sandboxed: bubblewrap does this in the sandbox
        die_with_parent(grader)
    limit(memory, bool(tasks))  # before any student code runs
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)

    from grader.devices import WORKER_ENV, use_cpu_devices

    have = use_cpu_devices(devices)
    os.environ[WORKER_ENV] = "1"  # from now on notebooks' device set-up and check() stand down
    for name in [n for n in os.environ if n.startswith(("JAX_COMPILATION_CACHE_",
                                                         "JAX_PERSISTENT_CACHE_"))]:
        del os.environ[name]  # JAX has read its cache's settings: processes started here keep none
    worker = Worker(replies)
    forbid_trace_hooks()
    from grader import cases

    cases.load(hidden=False)  # the hidden tests arrive with the first request
    worker.send({"req": "ready", "ok": have == devices, "devices": have})
    worker.serve(requests)


if __name__ == "__main__":
    main()
