"""Eager shard_map's programs, kept for a worker's life.

A ``jax.shard_map`` called outside ``jax.jit`` runs one primitive at a time: JAX jits each as
a small program of its own, made from a new ``HashablePartial`` of the primitive, its
parameters and the mesh (``jax/_src/shard_map.py``). JAX's caches of traced, lowered and
compiled programs hold the function they were made from weakly, so each entry goes as soon as
that partial is freed, right after the primitive ran: the next primitive of the same kind, or
the same function called again, is traced, lowered to StableHLO and compiled anew (the batch's
compiled programs, :mod:`grader.workers.compiled`, spare only XLA's part). Many lessons'
functions run eagerly, and the grader calls each several times on several device counts.

:func:`install` makes equal partials one object, kept among the newest :data:`KEPT`, so
JAX's own caches find them again: a function of ten ``tanh``, ``psum`` steps, called eagerly on
8 devices, went from 2.6 CPU-seconds and 92 programs lowered a call to 0.04 and none
(``benchmarks/eager_shard_map.py``). Two equal partials are the same primitive with the same
parameters on the same mesh: JAX itself would reuse one's programs for the other while both
lived. The table is the process's own, and a worker serves one submission.
"""

from __future__ import annotations

from typing import Any

from grader.caches import Newest

#: Partials kept alive: the distinct primitives (with their parameters) a submission runs
#: eagerly under shard_map, and their inputs' and outputs' placements.
KEPT = 4096


def install() -> bool:
    """Keep eager shard_map's programs in this process; whether JAX's internals allowed it (a
    release that changed them runs as before: correct, only slower)."""
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
