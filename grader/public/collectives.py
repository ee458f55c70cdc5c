"""Public tests of lesson 3 (collectives): ``check`` runs them in the notebook, and the
grader runs them too. Inputs are built from the number of devices there are."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from grader import messages as msg
from grader.cases import case
from grader.judge import Hint, close, compiles_to, traces
from grader.probes import hlo_collectives, jaxpr_summary

forgot_psum = Hint(lambda got, want: close(got["result"], want["_first_shard"]),
                   msg.HINT_FORGOT_PSUM)
not_per_device = Hint(lambda got, want: got["result"].ndim < want["result"].ndim,
                      msg.HINT_NOT_PER_DEVICE)
wrong_direction = Hint(lambda got, want: close(got["result"], want["_backwards"]),
                       msg.HINT_WRONG_DIRECTION)
forgot_pmean = Hint(lambda got, want: close(got["result"], want["_one_device"]),
                    msg.HINT_FORGOT_PMEAN)
psum_not_pmean = Hint(lambda got, want: close(got["result"], want["_summed"]),
                      msg.HINT_PSUM_NOT_PMEAN)


def dot_inputs(rows_per_device: int, seed: int | None = None):
    """Two (N, 3) arrays with N a multiple of the device count, and one device's share."""
    n = jax.device_count()
    shape = (rows_per_device * n, 3)
    if seed is None:
        v1 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10
        v2 = np.ones(shape, np.float32)
    else:
        rng = np.random.default_rng(seed)
        v1, v2 = rng.normal(size=(2, *shape)).astype(np.float32)
    first = float(np.vdot(v1[:rows_per_device], v2[:rows_per_device]))
    return jnp.asarray(v1), jnp.asarray(v2), first


def linear_step(params: dict, x: np.ndarray, y: np.ndarray, lr: float) -> dict:
    """One gradient step of mean((w * x + b - y) ** 2), in numpy."""
    error = params["w"] * x + params["b"] - y
    return {"w": params["w"] - lr * np.mean(2 * error * x),
            "b": params["b"] - lr * np.mean(2 * error)}


def step_context(params: dict, batch: dict, lr: float) -> dict:
    """What a step that forgot pmean, or used psum instead, would give: hint material."""
    n = batch["x"].shape[0]
    local = linear_step(params, batch["x"][0], batch["y"][0], lr)
    full = linear_step(params, batch["x"], batch["y"], lr)
    summed = {k: params[k] + n * (full[k] - params[k]) for k in full}
    per_device = lambda step: {k: np.full(n, v, np.float32) for k, v in step.items()}  # noqa: E731
    return {"_one_device": per_device(local), "_summed": per_device(summed)}


def regression_batch(per_device: int, seed: int):
    """A batch for y = 3x - 1 plus noise, one row per device."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(jax.device_count(), per_device)).astype(np.float32)
    y = (3 * x - 1 + 0.1 * rng.normal(size=x.shape)).astype(np.float32)
    return {"x": x, "y": y}


# --- shard_map_psum -----------------------------------------------------------------------
@case("shard_map_psum", hidden=False)
def sums_three_values(fn):
    return {"result": fn(jnp.array([1.0, 2.0, 3.0]))}


@case("shard_map_psum", hidden=False, judge=traces("psum", "data", msg.HINT_MISSING_PSUM))
def traces_a_psum_over_data(fn):
    return jaxpr_summary(fn, jnp.arange(5.0))


# --- pmap_scaled_sum ----------------------------------------------------------------------
@case("pmap_scaled_sum", hidden=False, hints=[not_per_device])
def doubles_and_sums_rows(fn):
    n = jax.device_count()
    return {"result": fn(jnp.arange(n * 3, dtype=jnp.float32).reshape(n, 3))}


# --- distributed_dot ----------------------------------------------------------------------
@case("distributed_dot", hidden=False, hints=[forgot_psum])
def dot_of_two_small_arrays(fn):
    v1, v2, first = dot_inputs(2)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=False, judge=compiles_to("all-reduce", msg.HINT_FORGOT_PSUM))
def compiles_to_an_all_reduce(fn):
    v1, v2, _ = dot_inputs(2)
    return hlo_collectives(fn, v1, v2)


# --- pmean_update_step --------------------------------------------------------------------
@case("pmean_update_step", hidden=False, hints=[forgot_pmean, psum_not_pmean])
def one_step_from_zero(fn):
    params = {"w": 0.0, "b": 0.0}
    batch = regression_batch(4, seed=0)
    return {"result": fn(params, batch), **step_context(params, batch, 0.01)}


@case("pmean_update_step", hidden=False, hints=[forgot_pmean, psum_not_pmean])
def takes_the_learning_rate(fn):
    params = {"w": 1.0, "b": 0.5}
    batch = regression_batch(4, seed=1)
    return {"result": fn(params, batch, learning_rate=0.1), **step_context(params, batch, 0.1)}


# --- ring_shift ---------------------------------------------------------------------------
@case("ring_shift", hidden=False, hints=[wrong_direction])
def moves_each_block_to_the_next_device(fn):
    x = np.arange(2 * jax.device_count(), dtype=np.float32)
    return {"result": fn(jnp.asarray(x)), "_backwards": np.roll(x, -2)}


@case("ring_shift", hidden=False, judge=compiles_to("collective-permute"))
def compiles_to_a_collective_permute(fn):
    return hlo_collectives(fn, jnp.arange(2.0 * jax.device_count()))
