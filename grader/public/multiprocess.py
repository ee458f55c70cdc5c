"""Public tests of lesson 6 (several processes): ``check`` runs them in the notebook, in one
process on the kernel's devices, and the grader runs them too. The hidden tests also run the
functions in two real processes (see :mod:`grader.lessons.cluster`).

With a single process, a process's count is the total, its devices hold every block of the
dataset, and its rows are all the real rows: that is what these tests check.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, close
from grader.hints import multiprocess as hints


def rows(count: int, columns: int, seed: int) -> np.ndarray:
    """A float32 (count, columns) block of normal numbers."""
    return np.random.default_rng(seed).normal(size=(count, columns)).astype(np.float32)


def meshes_of_pairs() -> dict[str, Mesh]:
    """Two ('data', 'model') meshes of every device, 'model' of size 2: in device order (in
    several processes, 'model' within each process), and with 'model' along the other half
    of the devices (across the processes)."""
    devices = np.array(jax.devices())
    pairs = 2 if len(devices) % 2 == 0 else 1
    return {"in_order": Mesh(devices.reshape(-1, pairs), ("data", "model")),
            "across": Mesh(devices.reshape(pairs, -1).T, ("data", "model"))}


def reads(fn, sharding: NamedSharding, shape: tuple[int, int]) -> Any:
    """``fn(sharding, shape)``, its pairs made lists of ints where they can be."""
    ranges = fn(sharding, shape)
    try:
        return [[int(start), int(stop)] for start, stop in ranges]
    except (TypeError, ValueError):
        return ranges


def padded_mean(local_rows: np.ndarray, capacity: int) -> np.ndarray:
    """What a mean that counts the padding rows as real ones gives: hint material."""
    return local_rows.sum(axis=0) / capacity


# --- what each process measures in the grader's multi-process tests ------------------------
# The grader's hidden tests of lesson 6 run the student's function in several processes, each
# of which replays the student's cells and calls one of these (grader.workers.replay): they
# run next to the submission, so they live here, in the open, and take nothing hidden.
#: The shape of the global batch of the multi-process test of rows_to_read.
SOURCE_SHAPE = (16, 3)
#: The capacity and columns of the multi-process test of uneven_global_mean.
UNEVEN_CAPACITY, UNEVEN_COLUMNS = 8, 4


def count_of(process: int) -> int:
    """The count process number ``process`` passes to total_over_processes."""
    return 3 + 10 * process


def total_in_each_process(fn):
    """Per process: the total it gets from its own count."""
    return {"result": fn(count_of(jax.process_index()))}


def reads_in_each_process(fn):
    """Per process: the rows it must read of a batch split over 'data' of each of
    :func:`meshes_of_pairs`."""
    return {name: reads(fn, NamedSharding(mesh, P("data")), SOURCE_SHAPE)
            for name, mesh in meshes_of_pairs().items()}


def uneven_rows(process: int) -> np.ndarray:
    """The real rows of process number ``process``: 5, then 8, of random numbers."""
    return rows(min(5 + 3 * process, UNEVEN_CAPACITY), UNEVEN_COLUMNS, seed=80 + process)


def uneven_in_each_process(fn):
    """Per process: the mean it gets from its own rows, padded to the common capacity."""
    return {"result": np.asarray(fn(uneven_rows(jax.process_index()), UNEVEN_CAPACITY))}


reads_twice = Hint(lambda got, want: isinstance(got["result"], list)
                   and len(got["result"]) > len(want["result"]), hints.HINT_READS_TWICE)
mean_shape = Hint(lambda got, want: np.shape(got["result"]) != np.shape(want["result"]),
                  hints.HINT_MEAN_AXIS)
counts_padding = Hint(lambda got, want: close(got["result"], want["_padded"]),
                      hints.HINT_UNEVEN_PADDING)
not_an_int = Hint(lambda got, want: not got["python_int"], hints.HINT_TOTAL_NOT_INT)


# --- total_over_processes -----------------------------------------------------------------
@case("total_over_processes", hidden=False, hints=[not_an_int])
def one_process_holds_the_total(fn):
    total = fn(7)
    return {"result": total, "python_int": type(total) is int}


# --- rows_to_read ------------------------------------------------------------------------
@case("rows_to_read", hidden=False, hints=[reads_twice])
def one_range_per_device_of_a_1d_mesh(fn):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return {"result": reads(fn, NamedSharding(mesh, P("data")), (4 * jax.device_count(), 3))}


@case("rows_to_read", hidden=False, hints=[reads_twice])
def blocks_held_twice_are_read_once(fn):
    mesh = meshes_of_pairs()["in_order"]
    return {"result": reads(fn, NamedSharding(mesh, P("data")), (2 * jax.device_count(), 2))}


# --- uneven_global_mean --------------------------------------------------------------------
@case("uneven_global_mean", hidden=False, hints=[mean_shape, counts_padding])
def mean_of_the_real_rows_only(fn):
    local, capacity = rows(5, 3, seed=0), 8 * jax.local_device_count()
    return {"result": fn(local, capacity), "_padded": padded_mean(local, capacity)}
