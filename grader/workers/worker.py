"""The worker: runs a student's code in a process of its own, and calls its functions as the
tests, in the tester, ask (:mod:`grader.remote`): it holds the submission and nothing of the
tests but the arguments of each call.

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
import warnings
from typing import Any, TextIO

from grader import reuse
from grader.workers import compiled, replay
from grader.workers import seal as sealing
from grader.workers.confine import begin
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
    in a kernel of its own (two notebooks may both define a global ``mesh``), and the
    functions its functions returned, by handle."""

    def __init__(self, replies: TextIO) -> None:
        self.replies = replies
        self.namespaces: dict[str, dict[str, Any]] = {}
        RECORD.namespaces = self.namespaces  # lesson 6: which file defines a name
        self.handles: list[Any] = []

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
        from grader.framework.cases import describe_error

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

    def seal(self) -> sealing.Seal:
        """A seal on the modules and this worker (a method shadowed on it is removed too), as
        they are now."""
        return sealing.Seal([("the worker", self)])

    # --- what a test asks of the function under test (see grader.remote) -------------------
    def call(self, function: dict, steps: list, args: Any, kwargs: Any,
             mesh: Any = None) -> dict[str, Any]:
        """Call the function with arguments sent as data; what it returned, as data."""
        from grader import wire

        def run() -> Any:
            fn = self._function(function, steps)
            with _under(mesh):
                out = fn(*wire.decode(args, program=_exported_call),
                         **wire.decode(kwargs, program=_exported_call))
            return _sent(out, self._keep)

        return self._attempt(lambda: {"ok": True, "value": run()})

    def export(self, function: dict, steps: list, args: Any, mesh: Any = None) -> dict[str, Any]:
        """The function's program for arguments sent as data (probes.Program.of)."""
        import base64

        from grader import wire
        from grader.framework.probes import Program

        def run() -> str:
            fn = self._function(function, steps)
            with _under(mesh):
                program = Program.of(fn, *wire.decode(args, program=_exported_call))
            return base64.b64encode(program.serialize()).decode()

        return self._attempt(lambda: {"ok": True, "program": run()})

    def shardings(self, function: dict, steps: list, args: Any,
                  mesh: Any = None) -> dict[str, Any]:
        """The shardings the function's compiled program takes its arguments in
        (grader.framework.probes.input_shardings)."""
        from grader import wire
        from grader.framework.probes import input_shardings

        def run() -> Any:
            fn = self._function(function, steps)
            with _under(mesh):
                found = input_shardings(fn, *wire.decode(args, program=_exported_call))
            return _sent(found)

        return self._attempt(lambda: {"ok": True, "value": run()})

    def replay(self, function: dict, probe: str, processes: int,
               devices_per_process: int) -> dict[str, Any]:
        """Lesson 6: the function's cells replayed in launched processes, each running a
        public probe (grader.workers.replay)."""
        from grader import wire
        from grader.workers import replay

        return self._attempt(lambda: {"ok": True, "value": wire.encode(replay.run(
            str(function.get("name")), str(probe), int(processes), int(devices_per_process)))})

    def _attempt(self, work: Any) -> dict[str, Any]:
        """``work()``, or the error it raised (anything the function raises included)."""
        from grader.framework.cases import describe_error

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return work()
        except BaseException as exc:  # noqa: BLE001 - the student's code may raise anything
            return {"ok": False, "error": describe_error(exc)}

    def _function(self, function: dict, steps: list) -> Any:
        """The function a request names (by name or handle), with its steps applied."""
        import jax

        from grader import messages as msg
        from grader import wire

        if "handle" in function:
            handle = function["handle"]
            found = self.handles[handle] if type(handle) is int and handle >= 0 else None
        else:
            replay.asked_about(str(function.get("name")))  # lesson 6's processes, kept until then
            found = self.find(str(function.get("name")))
        if not callable(found):
            raise LookupError(msg.MSG_NOT_FOUND.format(name=function.get("name")))
        for kind, values in steps:
            values = wire.decode(values)
            if kind == "trailing":
                found = _with_trailing(found, tuple(values))
            elif kind == "jit":
                found = jax.jit(found, static_argnums=tuple(values))
        return found

    def _keep(self, function: Any) -> dict:
        """A function the function under test returned: kept here, sent as its handle."""
        self.handles.append(function)
        return {"function": len(self.handles) - 1}

    def serve(self, requests: TextIO) -> None:
        """Answer requests until stdin closes.

        What a test asks of the function (a call, its program, lesson 6's processes) trusts
        only what this frame's locals hold, taken before any student code ran (and, since
        :func:`forbid_trace_hooks`, out of reach of Python code): the seal's state, the
        function that restores it with that function's code and defaults (put back before each
        use), the table of what answers each request, the reply stream's methods and the
        interpreter's own functions. Before each such
        request everything sealed is put back (what had changed is reported); one during
        which it changed again is void, and so is one while a thread the submission started
        still runs (it could change things back and forth).
        """
        write, flush, dumps = self.replies.write, self.replies.flush, json.dumps
        gettrace, getprofile, threads = sys.gettrace, sys.getprofile, sys._current_frames
        state, restore = self.seal().state, sealing.restore  # before any student code
        code, defaults = restore.__code__, restore.__defaults__
        sealed_ops, open_ops = dict(SEALED), dict(OPEN)  # what answers each request
        for line in requests:
            request = json.loads(line)
            op, req = request.pop("op"), request.pop("req")
            if op in sealed_ops:
                restore.__code__, restore.__defaults__ = code, defaults
                before = restore(state)
                if gettrace() or getprofile():
                    reply = {"ok": False, "tampered": ["a trace or profile function"]}
                elif len(threads()) > 1:
                    reply = {"ok": False, "threads": len(threads()) - 1}
                else:
                    reply = sealed_ops[op](self, **request)
                    restore.__code__, restore.__defaults__ = code, defaults
                    during = restore(state)
                    if during:
                        reply = {"ok": False, "tampered": during}
                    elif before:
                        reply = {**reply, "restored": before}
            else:
                reply = open_ops[op](self, **request)
            write(dumps({"req": req, **reply}) + "\n")
            flush()


#: What the runner may ask of a worker: running the submission, and (behind the seal) what a
#: test asks of the function under test.
OPEN = {"cell": Worker.cell, "lookup": Worker.lookup}
SEALED = {"call": Worker.call, "export": Worker.export, "shardings": Worker.shardings,
          "replay": Worker.replay}


def _under(mesh: Any) -> Any:
    """The mesh context a test called the function in (jax.set_mesh), or none."""
    import contextlib

    import jax

    from grader import wire

    return contextlib.nullcontext() if mesh is None else jax.set_mesh(wire.decode(mesh))


def _sent(value: Any, keep: Any = None) -> Any:
    """What the function returned, as data; a value that cannot be sent is the function's
    failure to return a readable result."""
    from grader import wire
    from grader.framework.plain import NotPlain

    try:
        return wire.encode(value, function=keep)
    except wire.Unreadable as exc:
        raise NotPlain(str(exc)) from None


def _with_trailing(fn: Any, values: tuple) -> Any:
    def with_values(*args: Any) -> Any:
        return fn(*args, *values)

    return with_values


def _exported_call(blob: bytes) -> Any:
    """A function a test gave the function under test, rebuilt from its exported program."""
    import jax

    return jax.export.deserialize(bytearray(blob)).call


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
    devices, have, requests, replies = begin()
    from grader.devices import WORKER_ENV

    os.environ[WORKER_ENV] = "1"  # from now on notebooks' device set-up and check() stand down
    compiled.install()  # processes started here keep none of JAX's cache settings
    reuse.install()
    worker = Worker(replies)
    forbid_trace_hooks()
    import grader.framework.cases
    import grader.framework.probes
    import grader.wire
    import grader.workers.replay  # noqa: F401 - what serving uses, imported before the seal

    worker.send({"req": "ready", "ok": have == devices, "devices": have})
    worker.serve(requests)


if __name__ == "__main__":
    main()
