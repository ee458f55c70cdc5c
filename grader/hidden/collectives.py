"""Hidden tests of lesson 3 (collectives): only the grader runs them, on 8 devices and, for
exercises that must work on all devices, on 2 as well."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader import messages as msg
from grader.cases import case
from grader.judge import compiles_to, runs_on_mesh, same, traces
from grader.probes import hlo_collectives, jaxpr_summary, layout
from grader.public.collectives import (
    dot_inputs,
    forgot_pmean,
    forgot_psum,
    not_per_device,
    psum_not_pmean,
    regression_batch,
    step_context,
    wrong_direction,
)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# --- shard_map_psum -----------------------------------------------------------------------
@case("shard_map_psum", hidden=True)
def sums_a_vector_of_odd_length(fn):
    return {"result": fn(jnp.asarray(_rng(10).normal(size=7).astype(np.float32)))}


@case("shard_map_psum", hidden=True)
def sums_a_single_element(fn):
    return {"result": fn(jnp.array([-2.5]))}


@case("shard_map_psum", hidden=True)
def sums_a_thousand_integers_exactly(fn):
    return {"result": fn(jnp.arange(1000.0))}


@case("shard_map_psum", hidden=True, judge=runs_on_mesh)
def uses_a_one_device_mesh_named_data(fn):
    return jaxpr_summary(fn, jnp.arange(4.0))


# --- pmap_scaled_sum ----------------------------------------------------------------------
@case("pmap_scaled_sum", hidden=True, hints=[not_per_device])
def random_rows(fn):
    n = jax.device_count()
    return {"result": fn(jnp.asarray(_rng(20).normal(size=(n, 5)).astype(np.float32)))}


@case("pmap_scaled_sum", hidden=True, hints=[not_per_device])
def rows_that_are_matrices(fn):
    n = jax.device_count()
    return {"result": fn(jnp.arange(n * 6, dtype=jnp.float32).reshape(n, 2, 3))}


@case("pmap_scaled_sum", hidden=True,
      judge=traces("psum", "devices", msg.HINT_MISSING_PSUM))
def psums_over_the_devices_axis(fn):
    n = jax.device_count()
    return jaxpr_summary(fn, jnp.ones((n, 3)))


@case("pmap_scaled_sum", hidden=True, judge=same("layout"))
def leaves_one_row_on_each_device(fn):
    n = jax.device_count()
    return {"layout": layout(fn(jnp.ones((n, 3))))}


# --- distributed_dot ----------------------------------------------------------------------
@case("distributed_dot", hidden=True, hints=[forgot_psum])
def random_arrays(fn):
    v1, v2, first = dot_inputs(4, seed=30)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=True, hints=[forgot_psum])
def inputs_already_split_over_devices(fn):
    v1, v2, first = dot_inputs(3, seed=31)
    placed = NamedSharding(Mesh(jax.devices(), ("data",)), P("data"))
    v1, v2 = jax.device_put(v1, placed), jax.device_put(v2, placed)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=True, judge=runs_on_mesh)
def shard_map_over_every_device(fn):
    v1, v2, _ = dot_inputs(1)
    return jaxpr_summary(fn, v1, v2)


@case("distributed_dot", hidden=True, judge=compiles_to("all-reduce", msg.HINT_FORGOT_PSUM))
def all_reduces_on_every_device_count(fn):
    v1, v2, _ = dot_inputs(2, seed=32)
    return hlo_collectives(fn, v1, v2)


# --- pmean_update_step --------------------------------------------------------------------
@case("pmean_update_step", hidden=True, hints=[forgot_pmean, psum_not_pmean])
def step_on_a_random_batch(fn):
    params = {"w": jnp.float32(0.3), "b": jnp.float32(-0.2)}
    batch = regression_batch(6, seed=40)
    plain_params = {k: float(v) for k, v in params.items()}
    return {"result": fn(params, batch), **step_context(plain_params, batch, 0.01)}


@case("pmean_update_step", hidden=True, hints=[forgot_pmean, psum_not_pmean])
def step_with_a_large_learning_rate(fn):
    params = {"w": 2.0, "b": 1.0}
    batch = regression_batch(3, seed=41)
    return {"result": fn(params, batch, 0.5), **step_context(params, batch, 0.5)}


@case("pmean_update_step", hidden=True,
      judge=traces("psum", "data_parallel_axis", msg.HINT_FORGOT_PMEAN))
def averages_over_the_named_axis(fn):
    return jaxpr_summary(fn, {"w": 0.0, "b": 0.0}, regression_batch(2, seed=42))


# --- ring_shift ---------------------------------------------------------------------------
@case("ring_shift", hidden=True, hints=[wrong_direction])
def random_blocks_of_five(fn):
    x = _rng(50).normal(size=5 * jax.device_count()).astype(np.float32)
    return {"result": fn(jnp.asarray(x)), "_backwards": np.roll(x, -5)}


@case("ring_shift", hidden=True, hints=[wrong_direction])
def keeps_integers(fn):
    x = np.arange(3 * jax.device_count(), dtype=np.int32)
    return {"result": fn(jnp.asarray(x)), "_backwards": np.roll(x, -3)}


@case("ring_shift", hidden=True, judge=same("layout"))
def result_stays_split_over_devices(fn):
    return {"layout": layout(fn(jnp.arange(4.0 * jax.device_count())))}


@case("ring_shift", hidden=True, judge=compiles_to("collective-permute"))
def permutes_on_every_device_count(fn):
    return hlo_collectives(fn, jnp.arange(3.0 * jax.device_count()))
