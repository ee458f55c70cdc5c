"""Hidden tests of lesson 6 (several processes): only the grader runs them.

Single-process tests run on 8 and 2 devices, as for every exercise that must work on all
devices. The ``..._processes`` tests run the student's function for real in several processes
joined by ``jax.distributed`` (:func:`grader.workers.replay.replay`): each process replays the
student's notebook, calls the function on its own data and measures what it sees; the test's
measurements are those of every process, in order.
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, close
from grader.hints import multiprocess as hints
from grader.launcher import DEFAULT_DEVICES_PER_PROCESS, DEFAULT_PROCESSES
from grader.public.multiprocess import (
    SOURCE_SHAPE,
    UNEVEN_CAPACITY,
    count_of,
    counts_padding,
    mean_shape,
    meshes_of_pairs,
    not_an_int,
    padded_mean,
    reads,
    reads_in_each_process,
    reads_twice,
    rows,
    total_in_each_process,
    uneven_in_each_process,
    uneven_rows,
)
from grader.workers.replay import replay

own_count = Hint(
    lambda got, want: [p["result"] for p in got["processes"]] == want["_own"],
    hints.HINT_TOTAL_OWN_COUNT,
)
reads_other_processes_blocks = Hint(
    lambda got, want: all(g == want["_every_device"] for g in got["processes"]),
    hints.HINT_READS_OTHER_PROCESSES,
)
local_means = Hint(
    lambda got, want: all(close(p["result"], m) for p, m in
                          zip(got["processes"], want["_local_means"], strict=True)),
    hints.HINT_MEAN_OF_LOCAL_ROWS,
)
mean_of_means = Hint(
    lambda got, want: all(close(p["result"], want["_mean_of_means"]) for p in got["processes"]),
    hints.HINT_UNEVEN_MEAN_OF_MEANS,
)
padding_counted = Hint(
    lambda got, want: all(close(p["result"], want["_padded"]) for p in got["processes"]),
    hints.HINT_UNEVEN_PADDING,
)


# --- total_over_processes -----------------------------------------------------------------
@case("total_over_processes", hidden=True, hints=[not_an_int])
def a_count_of_zero(fn):
    total = fn(0)
    return {"result": total, "python_int": type(total) is int}


@case("total_over_processes", hidden=True, hints=[not_an_int])
def a_count_beyond_float32(fn):
    total = fn(2**24 + 1)
    return {"result": total, "python_int": type(total) is int}


@case("total_over_processes", hidden=True, devices=(8,), hints=[own_count])
def adds_the_counts_of_two_processes(fn):
    found = replay(fn, total_in_each_process)
    return {"processes": found, "_own": [count_of(p) for p in range(len(found))]}


# --- rows_to_read ------------------------------------------------------------------------
@case("rows_to_read", hidden=True, hints=[reads_twice])
def rows_split_over_both_axes(fn):
    mesh = meshes_of_pairs()["across"]
    sharding = NamedSharding(mesh, P(("data", "model")))
    return {"result": reads(fn, sharding, (3 * jax.device_count(), 2))}


@case("rows_to_read", hidden=True, hints=[reads_twice])
def rows_not_split_are_one_range(fn):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return {"result": reads(fn, NamedSharding(mesh, P()), (5, 2))}


@case("rows_to_read", hidden=True, hints=[reads_twice])
def columns_split_rows_whole(fn):
    mesh = meshes_of_pairs()["in_order"]
    return {"result": reads(fn, NamedSharding(mesh, P(None, "model")), (3, 4))}


@case("rows_to_read", hidden=True, devices=(8,),
      hints=[reads_other_processes_blocks])
def each_of_two_processes_reads_its_own_blocks(fn):
    found = replay(fn, reads_in_each_process)
    # what listing every device's block gives, in any process: the hint's material
    data = DEFAULT_PROCESSES * DEFAULT_DEVICES_PER_PROCESS // 2
    step = SOURCE_SHAPE[0] // data
    quarters = [[start, start + step] for start in range(0, SOURCE_SHAPE[0], step)]
    every = {"in_order": quarters, "across": quarters}
    return {"processes": found, "_every_device": every}


# --- uneven_global_mean --------------------------------------------------------------------
@case("uneven_global_mean", hidden=True, hints=[mean_shape, counts_padding])
def one_real_row(fn):
    local, capacity = rows(1, 4, seed=1), 2 * jax.local_device_count()
    return {"result": fn(local, capacity), "_padded": padded_mean(local, capacity)}


@case("uneven_global_mean", hidden=True, hints=[mean_shape])
def no_padding_needed(fn):
    capacity = jax.local_device_count()
    return {"result": fn(rows(capacity, 2, seed=2), capacity)}


@case("uneven_global_mean", hidden=True, devices=(8,),
      hints=[local_means, mean_of_means, padding_counted])
def weighs_every_real_row_of_two_processes(fn):
    found = replay(fn, uneven_in_each_process)
    parts = [uneven_rows(p) for p in range(len(found))]
    return {"processes": found,
            "_local_means": [part.mean(axis=0) for part in parts],
            "_mean_of_means": np.mean([part.mean(axis=0) for part in parts], axis=0),
            "_padded": sum(part.sum(axis=0) for part in parts) / (UNEVEN_CAPACITY * len(parts))}
