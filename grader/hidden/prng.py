"""Hidden tests of lesson 4 (PRNG keys on many devices): only the grader runs them, on 8
devices and on 2 (every exercise of this lesson must work on all devices)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from grader.framework.cases import case
from grader.framework.judge import Hint, runs_on_mesh, same
from grader.framework.placement import layout
from grader.framework.probes import hlo_collectives, program_summary, trailing
from grader.hints import prng as hints
from grader.public.prng import (
    DROPOUT_HINTS,
    KEYS_HINTS,
    NOISE_HINTS,
    NOISE_ROWS,
    NOISY_HINTS,
    dropout_case,
    dropout_context,
    dropout_input,
    keys_case,
    noise_case,
    noisy_case,
    noisy_inputs,
    on_noise_mesh,
    split_rows,
)

keys_not_placed = Hint(lambda got, want: True, hints.HINT_KEYS_NOT_PLACED)
legacy_shards = Hint(lambda got, want: any(len(shape) == 2 for shape in
                                           got["layout"]["shard_shapes"]), hints.HINT_LEGACY_KEYS)
communicates = Hint(lambda got, want: True, hints.HINT_DROPOUT_COMMUNICATES)
communicates_noise = Hint(lambda got, want: True, hints.HINT_NOISE_COMMUNICATES)
averages_once = Hint(lambda got, want: True, hints.HINT_NOISY_COMMUNICATION)


# --- device_keys --------------------------------------------------------------------------
@case("device_keys", hidden=True, hints=KEYS_HINTS)
def splits_another_key(fn):
    return keys_case(fn, jax.random.key(31337))


@case("device_keys", hidden=True, judge=same("layout", hints=[legacy_shards, keys_not_placed]))
def one_key_on_each_device(fn):
    return {"layout": layout(fn(jax.random.key(3)))}


@case("device_keys", hidden=True, judge=same("held", hints=[keys_not_placed]))
def device_i_holds_key_i(fn):
    keys = fn(jax.random.key(4))
    shards = sorted(keys.addressable_shards, key=lambda shard: shard.device.id)
    return {"held": [jax.random.key_data(shard.data) for shard in shards]}


# --- replicated_noise ---------------------------------------------------------------------
noise_not_laid_out = Hint(lambda got, want: True, hints.HINT_NOISE_LAYOUT)


def noised(model: int) -> tuple:
    """A key, and NOISE_ROWS x 4 numbers on the noise mesh with ``model`` along 'model'."""
    x = jnp.arange(NOISE_ROWS * 4, dtype=jnp.float32).reshape(NOISE_ROWS, 4)
    return jax.random.key(11), on_noise_mesh(x, model)


@case("replicated_noise", hidden=True, hints=NOISE_HINTS)
def every_device_along_data(fn):
    return noise_case(fn, seed=12, model=1, scale=2.0, features=5)


@case("replicated_noise", hidden=True, hints=NOISE_HINTS)
def every_device_along_model(fn):
    return noise_case(fn, seed=13, model=jax.device_count(), scale=1.0, features=2)


@case("replicated_noise", hidden=True, judge=same("layout", hints=[noise_not_laid_out]))
def laid_out_as_x(fn):
    return {"layout": layout(fn(*noised(2), 0.1))}


@case("replicated_noise", hidden=True, judge=runs_on_mesh)
def shard_map_over_the_mesh_of_x(fn):
    return program_summary(trailing(fn, 0.1), *noised(2))


@case("replicated_noise", hidden=True, judge=same(hints=[communicates_noise]))
def adds_noise_without_communication(fn):
    return hlo_collectives(trailing(fn, 0.1), *noised(2))


# --- sharded_dropout ----------------------------------------------------------------------
@case("sharded_dropout", hidden=True, hints=DROPOUT_HINTS)
def same_mask_on_every_device_count(fn):
    return dropout_case(fn, seed=7, rate=0.25, features=6)


@case("sharded_dropout", hidden=True, hints=DROPOUT_HINTS)
def same_mask_whether_split_or_not(fn):
    key, x = jax.random.key(8), dropout_input(8, 3)
    return {
        "result": fn(key, split_rows(x), 0.3),
        "unsplit": fn(key, jnp.asarray(x), 0.3),
        **dropout_context(key, x, 0.3),
    }


@case("sharded_dropout", hidden=True, judge=same(hints=[communicates]))
def draws_without_communication(fn):
    x = split_rows(dropout_input(9, 5))
    return hlo_collectives(trailing(fn, 0.5), jax.random.key(9), x)


# --- fixed_noisy_step -----------------------------------------------------------------------
@case("fixed_noisy_step", hidden=True, hints=NOISY_HINTS)
def another_key_and_more_features(fn):
    return noisy_case(fn, seed=21, features=5)


@case("fixed_noisy_step", hidden=True, judge=same("layout"))
def parameters_replicated(fn):
    params, batch = noisy_inputs(22)
    return {"layout": layout(fn(params, batch, jax.random.key(22)))}


@case("fixed_noisy_step", hidden=True, judge=same(hints=[averages_once]))
def one_all_reduce_for_the_gradients(fn):
    params, batch = noisy_inputs(23)
    return hlo_collectives(fn, params, batch, jax.random.key(23))
