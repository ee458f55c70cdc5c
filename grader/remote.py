"""The student's function as the tester sees it: every call is made in the worker.

In grading, the tests run in the tester (:mod:`grader.workers.tester`), a process that holds
them and runs none of the submission's code, and the student's function stays in the worker
that ran the submission. A test gets a :class:`Remote` in its place: calling it sends the
arguments to the worker as data (:mod:`grader.wire`), where the function runs, and gives back
what it returned, rebuilt here; an exception it raised is raised here, under its own name.
What a test does with a function besides calling it has a request of its own: its program
(:meth:`Remote.export`, for :meth:`grader.framework.probes.Program.of`), the shardings its compiled
program takes its arguments in (:meth:`Remote.input_shardings`), the function jitted or with
arguments added (:func:`.probes.jitted`, :func:`.probes.trailing`), and lesson 6's
runs in several processes (:meth:`Remote.replay`). So no test's code, expected value or
measure ever enters the worker: only the inputs of each call, and the names of the functions.
"""

from __future__ import annotations

import base64
import builtins
from collections.abc import Callable
from typing import Any

from grader import messages as msg
from grader import wire
from grader.framework.plain import NotPlain

#: Sends one request to the worker (through the runner) and returns its reply.
Ask = Callable[[dict], dict]

#: The built-in exceptions a test may catch by type: one the function raised is raised here as
#: a subclass of the first of these it derives from (any other as an Exception), named as the
#: worker named it.
CATCHABLE = ("ValueError", "TypeError", "KeyError", "IndexError", "AttributeError",
             "NotImplementedError", "ZeroDivisionError", "OverflowError", "ArithmeticError",
             "LookupError", "AssertionError", "RuntimeError", "MemoryError")


class Remote:
    """A function of the submission, called in its worker: by its name, or by the handle of a
    function that another call returned; ``steps`` are what the worker does to it before each
    call (``("trailing", values)``: the values added after the arguments; ``("jit",
    static_argnums)``: ``jax.jit``)."""

    def __init__(self, ask: Ask, name: str | None = None, handle: int | None = None,
                 steps: tuple = ()) -> None:
        self._ask, self.name, self.handle, self.steps = ask, name, handle, steps

    def _target(self) -> dict:
        return {"name": self.name} if self.handle is None else {"handle": self.handle}

    def _steps(self) -> list:
        return [[kind, wire.encode(list(value))] for kind, value in self.steps]

    def _request(self, op: str, args: tuple, kwargs: dict | None = None) -> Any:
        import jax

        if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((args, kwargs))):
            raise TypeError(msg.REMOTE_TRACED)
        others = [a for a in args if not callable(a)]
        request = {"op": op, "function": self._target(), "steps": self._steps(),
                   "args": wire.encode(list(args), lambda f: _exported(f, others))}
        if kwargs is not None:
            request["kwargs"] = wire.encode(dict(kwargs))
        mesh = jax.sharding.get_mesh()
        if not mesh.empty:  # a test that set a mesh (jax.set_mesh): the call is made under it
            request["mesh"] = wire.encode(mesh)
        return self._answer(self._ask(request))

    def _answer(self, reply: dict) -> Any:
        if not reply.get("ok"):
            raise raised(reply.get("error") or {})
        return reply

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        reply = self._request("call", args, kwargs)
        return _read(reply, self._returned)

    def _returned(self, handle: int) -> Remote:
        return Remote(self._ask, handle=handle)

    def export(self, *args: Any) -> bytes:
        """The serialized ``jax.export`` of ``jax.jit`` of this function on ``args``, made in
        the worker (see :meth:`grader.framework.probes.Program.of`)."""
        reply = self._request("export", args)
        program = reply.get("program")
        try:
            return base64.b64decode(program, validate=True)
        except (TypeError, ValueError):
            raise NotPlain(msg.WIRE_MALFORMED.format(why="no program")) from None

    def input_shardings(self, *args: Any) -> tuple:
        """The shardings this function, compiled for ``args`` in the worker, takes them in
        (see :func:`grader.framework.probes.input_shardings`)."""
        return _read(self._request("shardings", args))

    def then(self, kind: str, value: Any) -> Remote:
        """This function with one more step."""
        return Remote(self._ask, self.name, self.handle, (*self.steps, (kind, value)))

    def replay(self, probe: Callable, processes: int, devices_per_process: int) -> list:
        """Lesson 6: the values of ``probe`` (a function of a public test module) on this
        function in each of ``processes`` processes that replay the worker's cells (see
        :func:`grader.workers.replay.replay`)."""
        reply = self._answer(self._ask({
            "op": "replay", "function": self._target(),
            "probe": f"{probe.__module__}:{probe.__qualname__}",
            "processes": processes, "devices_per_process": devices_per_process}))
        return _read(reply)


def _read(reply: dict, function: Callable[[int], Remote] | None = None) -> Any:
    """The value a worker's reply holds; data that is no value fails as such."""
    try:
        return wire.decode(reply.get("value"), function=function)
    except wire.Unreadable as exc:
        raise NotPlain(str(exc)) from None


def _exported(function: Callable, others: list) -> dict:
    """A function given to the student's function, as its program exported for the other
    arguments of the call (a test's function of arrays, such as one whose collectives the
    student's function counts)."""
    import jax

    if isinstance(function, Remote):
        raise wire.Unreadable(msg.WIRE_CANNOT_SEND.format(type="function of the submission"))
    exported = jax.export.export(jax.jit(function))(*others)
    return {"program": base64.b64encode(exported.serialize()).decode()}


_RAISED: dict[str, type] = {}


def raised(error: dict) -> BaseException:
    """The exception a function raised in the worker, as reported (see
    :func:`grader.framework.cases.describe_error`), to raise here."""
    base = error.get("base") if error.get("base") in CATCHABLE else "Exception"
    kind = _RAISED.get(base)
    if kind is None:
        kind = _RAISED[base] = type(f"Raised{base}", (getattr(builtins, base),), {})
    exc = kind(str(error.get("message", "")))
    exc.raised = {key: error[key] for key in ("type", "message", "where", "base")
                  if isinstance(error.get(key), str)}  # reported as it came (describe_error)
    return exc
