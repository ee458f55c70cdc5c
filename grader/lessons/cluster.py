"""Several JAX processes on this machine, joined by ``jax.distributed``: lesson 6 and its grader.

:func:`run` starts ``processes`` Python processes, each with ``devices_per_process`` CPU
devices, joins them with ``jax.distributed.initialize`` on a free loopback port, calls the
same function in every one of them and returns what each returned, in process order::

    from grader.lessons import cluster

    def who_am_i():
        return {"process": jax.process_index(), "devices": jax.local_device_count()}

    cluster.run(who_am_i)  # [{'process': 0, 'devices': 4}, {'process': 1, 'devices': 4}]

The function travels as source code, with the imports, constants and notebook functions it
uses; data goes in as arguments. Results travel back as plain data (numbers, strings, lists,
dicts, NumPy arrays) on a pipe of their own, never as printed text. Everything is bounded: if
a process fails, or they are not all done within ``timeout`` seconds, every process is killed
and a :class:`ClusterError` says which one and shows the last lines it wrote. What the
processes print (Gloo's connection messages, for one) is shown only then.

Inside a grader worker, :func:`run` stands down and returns None, as ``check`` does, so that
grading a notebook never launches its demonstrations. The processes are started by
:mod:`grader.launcher`, which the grader's own tests of lesson 6 use with a job of their own
(:mod:`grader.workers.replay`).
"""

from __future__ import annotations

import ast
import dis
import inspect
import os
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any

from grader.devices import WORKER_ENV
from grader.framework import plain
from grader.launcher import (
    DEFAULT_DEVICES_PER_PROCESS,
    DEFAULT_PROCESSES,
    DEFAULT_TIMEOUT,
    ENV_COORDINATOR,
    ENV_DEVICES,
    ENV_NUM_PROCESSES,
    ENV_PROCESS_ID,
    ClusterError,
    ClusterTimeout,
    ProcessFailed,
    join,
    launch,
)
from grader.lessons import texts

__all__ = ["DEFAULT_DEVICES_PER_PROCESS", "DEFAULT_PROCESSES", "DEFAULT_TIMEOUT",
           "ENV_COORDINATOR", "ENV_DEVICES", "ENV_NUM_PROCESSES", "ENV_PROCESS_ID",
           "ClusterError", "ClusterTimeout", "ProcessFailed", "join", "run", "ship", "show"]


def run(
    program: Callable,
    *args: Any,
    processes: int = DEFAULT_PROCESSES,
    devices_per_process: int = DEFAULT_DEVICES_PER_PROCESS,
    timeout: float = DEFAULT_TIMEOUT,
    initialize: bool = True,
    xla_flags: str = "",
) -> list[Any] | None:
    """Call ``program(*args)`` in ``processes`` new processes and return their results.

    Before ``program`` runs, each process gives JAX ``devices_per_process`` CPU devices and
    calls ``jax.distributed.initialize``; with ``initialize=False`` the program does that
    itself, reading the coordinator address, the number of processes, its process id and its
    device count from the environment variables named by ``ENV_COORDINATOR``,
    ``ENV_NUM_PROCESSES``, ``ENV_PROCESS_ID`` and ``ENV_DEVICES``.

    ``xla_flags`` are added to the processes' ``XLA_FLAGS`` (XLA reads them as its backend
    starts), for example ``"--xla_cpu_collective_timeout_seconds=5"``.

    Inside a grader worker this does nothing and returns None.
    """
    if os.environ.get(WORKER_ENV):
        return None
    job = {
        "initialize": initialize,
        "name": program.__name__,
        "code": ship(program),
        "args": [plain.to_plain(a) for a in args],
    }
    return launch(job, processes, devices_per_process, timeout, xla_flags)


def show(program: Callable, *args: Any, **options: Any) -> None:
    """Run ``program`` as :func:`run` does and print each process's result, or what went
    wrong, without raising: for trying a function out in several processes."""
    try:
        results = run(program, *args, **options)
    except NotImplementedError:
        print("not attempted yet: a function still raises NotImplementedError")
        return
    except ClusterError as exc:
        print(f"{type(exc).__name__}: {exc}")
        return
    for index, result in enumerate(results or []):
        print(f"process {index}: {result}")


def ship(program: Callable) -> str:
    """Python source that defines ``program`` in a fresh interpreter: the imports, constants
    and notebook functions it uses, then its own source (a decorated function's, such as one
    under ``@jax.jit``, with its decorators)."""
    kind = type(program).__name__
    program = inspect.unwrap(program)  # a decorated def (jax.jit): its source has the decorator
    if not isinstance(program, types.FunctionType):
        raise TypeError(texts.MSG_CLUSTER_NOT_A_FUNCTION.format(kind=kind))
    if program.__code__.co_name == "<lambda>":  # whatever name it was given since
        raise TypeError(texts.MSG_CLUSTER_NOT_A_FUNCTION.format(kind="lambda"))
    imports: dict[str, str] = {}
    constants: dict[str, str] = {}
    sources: dict[str, str] = {}
    aliases: dict[str, str] = {}
    todo = [program]
    while todo:
        fn = todo.pop()
        if fn.__name__ in sources:
            continue
        if fn.__code__.co_freevars:
            raise TypeError(texts.MSG_CLUSTER_CLOSURE.format(
                name=fn.__name__, names=", ".join(fn.__code__.co_freevars)))
        source = textwrap.dedent(inspect.getsource(fn))
        sources[fn.__name__] = source
        for name in sorted(_global_names(fn, source)):
            if name not in fn.__globals__ or name in sources:
                continue
            value = fn.__globals__[name]
            line = _import_line(name, value)
            if isinstance(value, types.FunctionType) and value.__globals__ is fn.__globals__:
                todo.append(value)  # a function of the same notebook (or file): its source
                if value.__name__ != name:
                    aliases[name] = f"{name} = {value.__name__}"
            elif line is not None:
                imports[name] = line
            elif _is_literal(value):
                constants[name] = f"{name} = {value!r}"
            else:
                raise TypeError(texts.MSG_CLUSTER_UNSENDABLE.format(
                    program=program.__name__, name=name, kind=type(value).__name__))
    return "\n".join([*imports.values(), *constants.values(), "", *reversed(sources.values()),
                      *aliases.values()])


def _global_names(fn: types.FunctionType, source: str) -> set[str]:
    """The global names ``fn`` reads, its nested functions and decorators included."""
    names: set[str] = set()
    codes = [fn.__code__]
    while codes:
        code = codes.pop()
        for instruction in dis.get_instructions(code):
            if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                names.add(instruction.argval)
        codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    tree = ast.parse(source)
    for node in tree.body[:1]:
        for decorator in getattr(node, "decorator_list", []):
            names |= {n.id for n in ast.walk(decorator) if isinstance(n, ast.Name)}
    return names


def _import_line(name: str, value: Any) -> str | None:
    """How a fresh interpreter gets ``value`` under ``name``, if by an import."""
    if isinstance(value, types.ModuleType):
        module = value.__name__
        return f"import {module}" if module == name else f"import {module} as {name}"
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not module_name or not qualname or module_name == "__main__" or "." in qualname:
        return None
    if getattr(sys.modules.get(module_name), qualname, None) is not value:
        return None
    return f"from {module_name} import {qualname} as {name}"


def _is_literal(value: Any) -> bool:
    if not isinstance(value, (bool, int, float, str, type(None), tuple, list, dict)):
        return False
    try:
        return ast.literal_eval(repr(value)) == value
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return False


