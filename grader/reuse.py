"""What a process reuses of JAX's work, where JAX itself would do it again: every grader
worker, tester and verifier, lesson 6's launched processes, and a student's kernel from its
first ``check`` on (with the process ``check`` runs the other device count in).

Both rest on JAX's internals (the pinned release's): should a release change them,
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

Measured (``benchmarks/reuse.py``, this machine): a function of ten ``tanh``, ``psum`` steps
called eagerly on 8 devices, 2.6 CPU-seconds and 92 programs lowered a call, then 0.04 and none;
a whole course's submission, 25.7 CPU-seconds in its workers, then 18.3. The tables are the
process's own, and a worker serves one submission. Testers and verifiers install it too: they
serve one run after another, but no submission's code runs in them (a tester lowers the tests'
own programs, a verifier reads and compiles exported ones), and the benchmark's mixed class
of 6 took 147-152 CPU-seconds in all with it there, 157-162 without (alternated runs).
"""

from __future__ import annotations

from typing import Any

from grader.caches import Newest

#: Partials kept alive: the distinct primitives (with their parameters) a submission runs
#: eagerly under shard_map, and their inputs' and outputs' placements.
KEPT = 4096
#: Programs lowered in one MLIR context.
LOWERINGS = 256


#: What :func:`install` did in this process, once it has.
_installed: dict[str, bool] = {}


def install() -> dict[str, bool]:
    """Reuse both in this process (once, however often it is asked); which of them JAX's
    internals allowed."""
    if not _installed:
        _installed.update({"eager shard_map": _keep_eager_programs(),
                           "one MLIR context": _share_context()})
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
