"""Public tests of lesson 6 (several processes): ``check`` runs them in the notebook, in one
process on the kernel's devices, and the grader runs them too. The hidden tests also run the
functions in two real processes (see :mod:`grader.lessons.cluster`).

With a single process, a process's rows are the whole batch, and ``fold_in(key, 0)`` is the
key of process 0: that is what these tests check.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from grader.framework import placement
from grader.framework.cases import case
from grader.framework.judge import Hint, close
from grader.framework.placement import spec_of
from grader.hints import multiprocess as hints


def mesh_of(x: Any) -> dict | str:
    """The axis sizes of the mesh an array lives on, and whether it holds every device of
    every process (where each device sits is the process's own choice)."""
    mesh = placement.mesh_of(x)
    if isinstance(mesh, str):
        return mesh
    ids = mesh["device_ids"]
    return {"axes": dict(zip(mesh["names"], (int(s) for s in ids.shape), strict=True)),
            "all_devices": sorted(ids.flat) == sorted(d.id for d in jax.devices())}


def shards_of(x: Any) -> list[dict]:
    """This process's blocks of ``x``: the position of each one's device in jax.devices(),
    the rows it holds and their values."""
    if not isinstance(x, jax.Array):
        return []
    order = {d.id: i for i, d in enumerate(jax.devices())}
    blocks = []
    for shard in sorted(x.addressable_shards, key=lambda s: s.device.id):
        rows = shard.index[0] if shard.index else slice(None)
        start, stop, _ = rows.indices(x.shape[0])
        blocks.append({"device": order[shard.device.id], "rows": [start, stop],
                       "data": np.asarray(shard.data)})
    return blocks


def describe_global(x: Any) -> dict:
    """Where the blocks of a (global) array are, as seen from this process."""
    return {
        "global_shape": list(np.shape(x)),
        "spec": spec_of(x),
        "mesh": mesh_of(x),
        "shards": shards_of(x),
    }


def rows(count: int, columns: int, seed: int | None = None, offset: float = 0.0) -> np.ndarray:
    """A float32 (count, columns) block: 0, 1, 2, ... or normal numbers, plus ``offset``."""
    if seed is None:
        block = np.arange(count * columns, dtype=np.float32).reshape(count, columns)
    else:
        block = np.random.default_rng(seed).normal(size=(count, columns)).astype(np.float32)
    return block + np.float32(offset)


# --- what each process measures in the grader's multi-process tests ------------------------
# The grader's hidden tests of lesson 6 run the student's function in several processes, each
# of which replays the student's cells and calls one of these (grader.workers.replay): they
# run next to the submission, so they live here, in the open, and take nothing hidden.
#: Rows and columns each process holds in the multi-process tests.
BATCH_ROWS, BATCH_COLUMNS = 8, 3
MEAN_ROWS, MEAN_COLUMNS = 8, 4
DRAW_ROWS, DRAW_COLUMNS = 4, 3


def column_sums(x) -> np.ndarray:
    """Column sums of ``x`` by a jitted program that every process runs, read from this
    process's copy of the (replicated) result."""
    total = jax.jit(lambda a: a.sum(axis=0))(x)
    return np.asarray(total.addressable_data(0))


def global_batch_in_each_process(fn):
    """Per process: its own rows (offset by 100 times its index) into the global batch."""
    out = fn(rows(BATCH_ROWS, BATCH_COLUMNS, offset=100 * jax.process_index()))
    return {**describe_global(out), "column_sums": column_sums(out)}


def mean_rows(process: int) -> np.ndarray:
    """The random rows process number ``process`` averages."""
    return rows(MEAN_ROWS, MEAN_COLUMNS, seed=70 + process)


def global_mean_in_each_process(fn):
    """Per process: the mean it gets from its own random rows."""
    return {"result": np.asarray(fn(mean_rows(jax.process_index())))}


def random_global_batch_in_each_process(fn):
    """Per process: the global batch drawn from the same key in every process."""
    return describe_global(fn(jax.random.key(11), DRAW_ROWS, DRAW_COLUMNS))


def unfolded_rows(key: jax.Array, count: int, columns: int) -> np.ndarray:
    """What drawing from the key itself gives, the same in every process: hint material."""
    return np.asarray(jax.random.normal(key, (count, columns)))


not_placed = Hint(lambda got, want: not isinstance(got["spec"], list), hints.HINT_GB_NOT_PLACED)
other_spec = Hint(lambda got, want: isinstance(got["spec"], list) and got["spec"] != want["spec"],
                  hints.HINT_GB_SPEC)
mean_shape = Hint(lambda got, want: np.shape(got["result"]) != np.shape(want["result"]),
                  hints.HINT_MEAN_AXIS)
same_key = Hint(lambda got, want: close(got["values"], want["_unfolded"]),
                hints.HINT_SAME_KEY_EVERY_PROCESS)


# --- global_batch ---------------------------------------------------------------------------
@case("global_batch", hidden=False, hints=[not_placed, other_spec])
def one_process_holds_the_whole_batch(fn):
    local = rows(2 * jax.device_count(), 3)
    out = fn(local)
    return {"values": np.asarray(out), "spec": spec_of(out), "mesh": mesh_of(out)}


# --- global_mean ----------------------------------------------------------------------------
@case("global_mean", hidden=False, hints=[mean_shape])
def mean_of_every_column(fn):
    return {"result": fn(rows(2 * jax.device_count(), 3))}


# --- random_global_batch --------------------------------------------------------------------
@case("random_global_batch", hidden=False, hints=[same_key, not_placed, other_spec])
def rows_of_process_zero(fn):
    key = jax.random.key(0)
    out = fn(key, jax.device_count(), 2)
    return {
        "values": np.asarray(out),
        "spec": spec_of(out),
        "mesh": mesh_of(out),
        "_unfolded": unfolded_rows(key, jax.device_count(), 2),
    }
