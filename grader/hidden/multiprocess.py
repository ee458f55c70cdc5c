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

from grader.framework.cases import case
from grader.framework.judge import Hint, close, same
from grader.framework.placement import spec_of
from grader.hints import multiprocess as hints
from grader.public.multiprocess import (
    BATCH_COLUMNS,
    BATCH_ROWS,
    global_batch_in_each_process,
    global_mean_in_each_process,
    mean_rows,
    mean_shape,
    mesh_of,
    not_placed,
    other_spec,
    random_global_batch_in_each_process,
    rows,
    same_key,
    shards_of,
    unfolded_rows,
)
from grader.workers.replay import replay

local_only = Hint(
    lambda got, want: close(got["processes"][0]["global_shape"], want["_local_shape"]),
    hints.HINT_GB_LOCAL_ONLY,
)
local_means = Hint(
    lambda got, want: all(close(p["result"], m) for p, m in
                          zip(got["processes"], want["_local_means"], strict=True)),
    hints.HINT_MEAN_OF_LOCAL_ROWS,
)
same_rows_everywhere = Hint(
    lambda got, want: close(got["processes"][0]["shards"][0]["data"],
                            got["processes"][1]["shards"][0]["data"]),
    hints.HINT_SAME_KEY_EVERY_PROCESS,
)


# --- global_batch ---------------------------------------------------------------------------
@case("global_batch", hidden=True, hints=[not_placed, other_spec])
def random_rows_keep_their_values(fn):
    out = fn(rows(4 * jax.device_count(), 5, seed=60))
    return {"values": np.asarray(out), "spec": spec_of(out), "mesh": mesh_of(out)}


@case("global_batch", hidden=True, hints=[not_placed, other_spec])
def integer_rows_stay_integers(fn):
    local = np.arange(2 * jax.device_count(), dtype=np.int32).reshape(-1, 2)
    out = fn(local)
    return {"values": np.asarray(out), "spec": spec_of(out)}


@case("global_batch", hidden=True, judge=same("shards", hints=[not_placed]))
def one_block_of_rows_per_device(fn):
    out = fn(rows(3 * jax.device_count(), 2))
    return {"spec": spec_of(out), "shards": [{k: s[k] for k in ("device", "rows")}
                                             for s in shards_of(out)]}


@case("global_batch", hidden=True, devices=(8,), hints=[local_only])
def joins_the_rows_of_two_processes(fn):
    found = replay(fn, global_batch_in_each_process)
    return {"processes": found, "_local_shape": [BATCH_ROWS, BATCH_COLUMNS]}


# --- global_mean ----------------------------------------------------------------------------
@case("global_mean", hidden=True, hints=[mean_shape])
def random_rows(fn):
    return {"result": fn(rows(3 * jax.device_count(), 4, seed=61))}


@case("global_mean", hidden=True, hints=[mean_shape])
def a_single_row_per_device(fn):
    return {"result": fn(rows(jax.device_count(), 2, seed=62, offset=-5))}


@case("global_mean", hidden=True, devices=(8,), hints=[local_means])
def agrees_across_two_processes(fn):
    found = replay(fn, global_mean_in_each_process)
    mine = [mean_rows(p).mean(axis=0) for p in range(len(found))]
    return {"processes": found, "_local_means": mine}


# --- random_global_batch --------------------------------------------------------------------
@case("random_global_batch", hidden=True, hints=[same_key, not_placed, other_spec])
def another_key_and_shape(fn):
    key = jax.random.key(7)
    out = fn(key, 2 * jax.device_count(), 3)
    return {"values": np.asarray(out), "spec": spec_of(out),
            "_unfolded": unfolded_rows(key, 2 * jax.device_count(), 3)}


@case("random_global_batch", hidden=True, judge=same("shards", hints=[not_placed]))
def one_block_of_draws_per_device(fn):
    out = fn(jax.random.key(8), jax.device_count(), 4)
    return {"spec": spec_of(out), "shards": [{k: s[k] for k in ("device", "rows")}
                                             for s in shards_of(out)]}


@case("random_global_batch", hidden=True, devices=(8,), hints=[same_rows_everywhere])
def two_processes_draw_different_rows(fn):
    found = replay(fn, random_global_batch_in_each_process, devices_per_process=2)
    return {"processes": found}
