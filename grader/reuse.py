"""What a process reuses of JAX's work, where JAX itself would do it again: every grader
worker, tester and verifier, lesson 6's launched processes, and a student's kernel from its
first ``check`` on (with the process ``check`` runs the other device count in).

All three rest on JAX's internals (the pinned release's): should a release change them,
:func:`install` leaves JAX as it is, and the worker runs as before, only slower
(``tests/workers/test_reuse.py`` then fails, and says which).

**Eager shard_map's programs.** A ``jax.shard_map`` called outside ``jax.jit`` runs one
primitive at a time: JAX jits each as a small program of its own, made from a new
``HashablePartial`` of the primitive, its parameters and the mesh (``jax/_src/shard_map.py``).
JAX's caches of traced, lowered and compiled programs hold the function they were made from
weakly, so each entry goes as soon as that partial is freed, right after the primitive ran:
the next primitive of the same kind, or the same function called again, is traced, lowered to
StableHLO and compiled anew (the batch's compiled programs, :mod:`grader.workers.compiled`,
spare only XLA's part). Many lessons' functions run eagerly, and the grader calls each several
times on several device counts. Equal partials are made one object here, kept among the newest
:data:`KEPT`, so JAX's own caches find them again. Two equal partials are the same primitive
with the same parameters on the same mesh: JAX itself reuses one's programs for the other
while both live.

**One MLIR context.** JAX makes a new MLIR context for every program it lowers, loading every
dialect into it: about 3 ms a program, close to half the lowering of a lesson's small programs.
Here a context serves :data:`LOWERINGS` programs before the next is made (what a context holds,
the types and attributes of its programs, is freed with it).

**A shard_map as one program, while ``check`` measures.** Even with its primitives' programs
kept, the first call of an eager shard_map lowers and compiles each of its operations apart:
seconds for a training step's dozens of them, paid by every exercise's first ``check`` and again
in the process that checks it on 2 devices. Inside :func:`measuring` (``check``'s tests, in the
kernel and in that process), a shard_map called outside jit runs as ``jax.jit`` of itself: one
program, whose result has the layout its ``out_specs`` give either way (what JAX's own eager
path gives, value for value and device for device, ``tests/workers/test_reuse.py``), and
JAX's own path wherever tracing it fails (a number its body needs as a number). Outside it, in
the student's own cells and in every grader process, JAX runs it as it does (a ``print`` in the
body shows values). Each ``check`` is a scope of its own: no program is kept from an earlier
one, which a global rebound since would make stale. Measured (``benchmarks/check_time.py``):
lessons 3, 4, 8 and 9's first checks on this machine, 23.3 s in all, then 13.6 (2.3 s with
the 2-device run: 33.6, then 18.6).

Measured (``benchmarks/reuse.py``, this machine): a function of ten ``tanh``, ``psum`` steps
called eagerly on 8 devices, 2.6 CPU-seconds and 92 programs lowered a call, then 0.04 and none;
a whole course's submission, 25.7 CPU-seconds in its workers, then 18.3. The tables are the
process's own, and a worker serves one submission. Testers and verifiers install it too: they
serve one run after another, but no submission's code runs in them (a tester lowers the tests'
own programs, a verifier reads and compiles exported ones), and the benchmark's mixed class
of 6 took 147-152 CPU-seconds in all with it there, 157-162 without (alternated runs).
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

from grader.caches import Newest

#: Partials kept alive: the distinct primitives (with their parameters) a submission runs
#: eagerly under shard_map, and their inputs' and outputs' placements.
KEPT = 4096
#: Programs lowered in one MLIR context.
LOWERINGS = 256


#: What :func:`install` did in this process, once it has.
_installed: dict[str, bool] = {}
#: Whether a shard_map called outside jit runs as one program now (only inside
#: :func:`measuring`), and the count of measuring's scopes.
_as_one = {"now": False, "scope": 0}
#: The jitted shard_maps of the current scope, by what their body computes (:func:`_same_body`).
_programs: dict[Any, Any] = {}


def install() -> dict[str, bool]:
    """Reuse all three in this process (once, however often it is asked); which of them JAX's
    internals allowed. The third acts only inside :func:`measuring`."""
    if not _installed:
        _installed.update({"eager shard_map": _keep_eager_programs(),
                           "one MLIR context": _share_context(),
                           "a shard_map as one program": _one_program_per_shard_map()})
    return dict(_installed)


def _keep_eager_programs() -> bool:
    try:
        from jax._src import shard_map, util
    except ImportError:
        return False
    made = getattr(util, "HashablePartial", None)
    if made is None or getattr(shard_map, "HashablePartial", None) is not made:
        return False
    kept: Newest[Any, Any] = Newest(KEPT)

    def one_of_each(f: Any, *args: Any, **kwargs: Any) -> Any:
        partial = made(f, *args, **kwargs)
        try:
            return kept.get(partial, lambda: partial)
        except TypeError:  # parameters that cannot be hashed: JAX could not cache it either
            return partial

    shard_map.HashablePartial = one_of_each
    return True


def _one_program_per_shard_map() -> bool:
    try:
        from jax._src import core, shard_map
    except ImportError:
        return False
    made = getattr(shard_map, "_shard_map", None)
    eval_trace, context = getattr(core, "EvalTrace", None), getattr(core, "trace_ctx", None)
    if made is None or eval_trace is None or not hasattr(context, "trace"):
        return False

    def as_one_program(f: Any, **kwargs: Any) -> Any:
        import functools

        import jax

        wrapped = made(f, **kwargs)
        mine: dict[str, Any] = {}

        def jitted() -> Any:
            """This scope's jitted shard_map: made anew in each scope, of a new function, so
            that JAX keeps no trace of it from an earlier one (a global rebound since)."""
            if mine.get("scope") != _as_one["scope"]:
                def fresh(*args: Any) -> Any:
                    return wrapped(*args)

                try:  # a body that computes the same, on the same mesh: one jitted function
                    mine["jit"] = _programs.setdefault(_same_body(f, kwargs), jax.jit(fresh))
                except TypeError:  # it closes over what cannot be compared (arrays): its own
                    mine["jit"] = jax.jit(fresh)
                mine["scope"] = _as_one["scope"]
            return mine["jit"]

        @functools.wraps(wrapped)
        def called(*args: Any) -> Any:
            if not _as_one["now"] or not isinstance(context.trace, eval_trace):
                return wrapped(*args)  # JAX's way: outside measuring, in jit, grad, a shard_map
            try:
                return jitted()(*args)
            except Exception:  # noqa: BLE001 - what one program cannot take: as JAX runs it
                return wrapped(*args)

        return called

    shard_map._shard_map = as_one_program
    return True


@contextlib.contextmanager
def measuring() -> Iterator[None]:
    """Inside it, a shard_map called outside jit runs as one program (see the module's
    docstring); each outermost entry is a new scope, sharing no program with the last."""
    before = _as_one["now"]
    if not before:
        _as_one["scope"] += 1
        _programs.clear()
    _as_one["now"] = True
    try:
        yield
    finally:
        _as_one["now"] = before


#: What a shard_map's body may close over and still be shared by value (or, a function, by
#: itself): the numbers, names, meshes and specs a body is made with.
_VALUES = (int, float, complex, str, bytes, bool, type(None), types.FunctionType)


def _same_body(f: Any, kwargs: dict) -> tuple:
    """What a shard_map's body computes, as a key: its code, what it closes over, its
    defaults and globals, and the shard_map's mesh and specs (a body defined inside the
    function under test is a new function at every call: the same code on the same values).
    TypeError for a body that is not a plain function or closes over anything else (an
    array, an object that could change): such a body is not shared."""
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    def value(v: Any) -> Any:
        if isinstance(v, tuple | frozenset):
            return type(v)(value(item) for item in v)
        if not isinstance(v, (*_VALUES, Mesh, NamedSharding, PartitionSpec)):
            raise TypeError(type(v).__name__)
        return v

    if type(f) is not types.FunctionType:
        raise TypeError(type(f).__name__)
    cells = value(tuple(cell.cell_contents for cell in f.__closure__ or ()))
    key = (f.__code__, cells, value(f.__defaults__ or ()), id(f.__globals__),
           tuple(sorted(kwargs.items(), key=lambda item: item[0])))
    hash(key)
    return key


def _share_context() -> bool:
    try:
        from jax._src.interpreters import mlir
    except ImportError:
        return False
    make = getattr(mlir, "make_ir_context", None)
    if make is None:
        return False
    current: list[Any] = [None, 0]  # the context, and the programs lowered in it

    def shared() -> Any:
        if current[0] is None or current[1] >= LOWERINGS:
            current[0], current[1] = make(), 0
        current[1] += 1
        return current[0]

    mlir.make_ir_context = shared
    return True
