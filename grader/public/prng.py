"""Public tests of lesson 4 (PRNG keys on many devices): ``check`` runs them in the notebook,
and the grader runs them too. Typed keys are measured through ``jax.random.key_data``."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import Hint, close, result_close_to, same
from grader.framework.placement import layout
from grader.framework.plain import Material
from grader.hints import prng as hints

#: Rows of the dropout inputs: a multiple of 1, 2, 4 and 8, so that the very same array can be
#: split over every device count and the masks compared across counts.
DROPOUT_ROWS = 16


legacy_keys = Hint(lambda got, want: not got["typed"], hints.HINT_LEGACY_KEYS)
keys_count = Hint(lambda got, want: got["keys"].shape[0] != want["keys"].shape[0],
                  hints.HINT_KEYS_COUNT)
KEYS_HINTS = [legacy_keys, keys_count]
mask_per_device = Hint(lambda got, want: close(got["result"], want["_fold_in_per_device"])
                       or close(got["result"], want["_same_key_per_device"]),
                       hints.HINT_MASK_PER_DEVICE)
unscaled = result_close_to("_unscaled", hints.HINT_DROPOUT_UNSCALED)
keeps_with_rate = result_close_to("_keep_with_rate", hints.HINT_DROPOUT_KEEP_PROBABILITY)
DROPOUT_HINTS = [mask_per_device, unscaled, keeps_with_rate]
not_split = Hint(lambda got, want: True, hints.HINT_DROPOUT_NOT_SPLIT)


def data_mesh() -> Mesh:
    """The Auto mesh the dropout inputs are split over."""
    return Mesh(jax.devices(), ("data",))


def explicit_data_mesh() -> Mesh:
    """The Explicit mesh of the exercises that build one: jax.make_mesh over every device."""
    return jax.make_mesh((jax.device_count(),), ("data",))


# --- device_keys --------------------------------------------------------------------------
def keys_case(fn, key) -> dict:
    keys = fn(key)
    return {
        "keys": jax.random.key_data(keys),
        "typed": bool(jnp.issubdtype(keys.dtype, jax.dtypes.prng_key)),
    }


@case("device_keys", hidden=False, hints=KEYS_HINTS)
def splits_key_zero(fn):
    return keys_case(fn, jax.random.key(0))


# --- replicated_noise ---------------------------------------------------------------------
#: Rows of the noise inputs: a multiple of every size 'data' takes on 1, 2, 4 and 8 devices.
NOISE_ROWS = 8


def noise_mesh(model: int) -> Mesh:
    """An Explicit ('data', 'model') mesh of every device with ``model`` of them along
    'model' (1 where that does not divide the device count)."""
    n = jax.device_count()
    model = model if model >= 1 and n % model == 0 else 1
    return jax.make_mesh((n // model, model), ("data", "model"))


def on_noise_mesh(x, model: int) -> jax.Array:
    """``x`` with its rows split over 'data' of the noise mesh and a copy along 'model'."""
    return jax.device_put(x, NamedSharding(noise_mesh(model), P("data", None)))


def noise_context(key, x: np.ndarray, mesh: Mesh, scale: float) -> dict:
    """What the likely mistakes give, block by block along 'data': hint material."""
    blocks = np.split(x, mesh.shape["data"])

    def drawn(key_of_block, factor=scale):
        return np.concatenate([b + factor * np.asarray(jax.random.normal(key_of_block(i), b.shape))
                               for i, b in enumerate(blocks)])

    return {
        "_overall_index": Material(lambda: drawn(
            lambda i: jax.random.fold_in(key, i * mesh.shape["model"]))),
        "_same_every_block": Material(lambda: drawn(lambda i: key)),
        "_unscaled": Material(lambda: drawn(lambda i: jax.random.fold_in(key, i), factor=1.0)),
        "_one_draw": Material(lambda: x + scale * np.asarray(jax.random.normal(key, x.shape))),
    }


def noise_case(fn, seed: int, model: int, scale: float, features: int = 3) -> dict:
    """x on a ('data', 'model') mesh with ``model`` devices along 'model', noised."""
    key = jax.random.key(seed)
    x = np.random.default_rng(seed).normal(size=(NOISE_ROWS, features)).astype(np.float32)
    placed = on_noise_mesh(x, model)
    return {"result": fn(key, placed, scale),
            **noise_context(key, x, placed.sharding.mesh, scale)}


NOISE_HINTS = [result_close_to("_overall_index", hints.HINT_NOISE_DIFFERS_OVER_MODEL),
               result_close_to("_same_every_block", hints.HINT_NOISE_SAME_EVERY_BLOCK),
               result_close_to("_one_draw", hints.HINT_NOISE_ONE_DRAW),
               result_close_to("_unscaled", hints.HINT_NOISE_UNSCALED)]


@case("replicated_noise", hidden=False, hints=NOISE_HINTS)
def two_copies_of_each_block(fn):
    return noise_case(fn, seed=0, model=2, scale=0.1)


@case("replicated_noise", hidden=False, hints=NOISE_HINTS)
def half_the_devices_along_model(fn):
    return noise_case(fn, seed=1, model=jax.device_count() // 2, scale=0.5)


# --- sharded_dropout ----------------------------------------------------------------------
def dropout_input(seed: int, features: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(DROPOUT_ROWS, features)).astype(np.float32)


def split_rows(x) -> jax.Array:
    """``x`` with its rows split over every device (an Auto mesh named 'data')."""
    return jax.device_put(x, NamedSharding(data_mesh(), P("data")))


def dropout_context(key, x: np.ndarray, rate: float) -> dict:
    """What the likely mistakes give: hint material."""

    def scaled(keep):
        return jnp.where(keep, x / (1.0 - rate), 0.0)

    return {
        "_fold_in_per_device": Material(lambda: _dropout_per_device(key, x, rate, True)),
        "_same_key_per_device": Material(lambda: _dropout_per_device(key, x, rate, False)),
        "_unscaled": Material(lambda: jnp.where(jax.random.bernoulli(key, 1.0 - rate, x.shape),
                                                x, 0.0)),
        "_keep_with_rate": Material(lambda: scaled(jax.random.bernoulli(key, rate, x.shape))),
    }


@partial(jax.jit, static_argnums=3)
def _dropout_per_device(key, x, rate, fold: bool) -> jax.Array:
    """Dropout on each device's rows, its key folded with the device's index or not: one
    program per variant and shape, compiled once per process."""

    def local(k, block):
        if fold:
            k = jax.random.fold_in(k, jax.lax.axis_index("data"))
        keep = jax.random.bernoulli(k, 1.0 - rate, block.shape)
        return jnp.where(keep, block / (1.0 - rate), 0.0)

    return jax.shard_map(local, mesh=data_mesh(), in_specs=(P(), P("data")),
                         out_specs=P("data"))(key, x)


def dropout_case(fn, seed: int, rate: float, features: int) -> dict:
    key = jax.random.key(seed)
    x = dropout_input(seed, features)
    return {"result": fn(key, split_rows(x), rate), **dropout_context(key, x, rate)}


@case("sharded_dropout", hidden=False, hints=DROPOUT_HINTS)
def drops_half_of_a_split_array(fn):
    return dropout_case(fn, seed=0, rate=0.5, features=4)


@case("sharded_dropout", hidden=False, judge=same("layout", hints=[not_split]))
def keeps_the_rows_split(fn):
    x = split_rows(dropout_input(1, 4))
    return {"layout": layout(fn(jax.random.key(1), x, 0.5))}


# --- fixed_noisy_step -----------------------------------------------------------------------
#: The rows of a batch: a multiple of every device count, so each device has rows to drop.
NOISY_ROWS = 16
RATE, LR, NOISE = 0.25, 0.1, 0.01  # as in the exercise notebook


def noisy_inputs(seed: int, features: int = 3) -> tuple[dict, dict]:
    rng = np.random.default_rng(seed)
    params = {"w": rng.normal(size=features).astype(np.float32),
              "b": np.asarray(rng.normal(), np.float32)}
    batch = {"x": rng.normal(size=(NOISY_ROWS, features)).astype(np.float32),
             "y": rng.normal(size=NOISY_ROWS).astype(np.float32)}
    return params, batch


def noisy_step_with(params, batch, key, *, fold_mask: bool, fold_noise: bool) -> dict:
    """The exercise's step with each key folded with the device's index or not (the
    exercise's noisy_step folds the noise's, the fix the mask's): hint material."""
    mesh = explicit_data_mesh()
    params = jax.device_put(params, NamedSharding(mesh, P()))
    batch = jax.device_put(batch, NamedSharding(mesh, P("data")))
    return _noisy_step(params, batch["x"], batch["y"], key, fold_mask, fold_noise)


@partial(jax.jit, static_argnums=(4, 5))
def _noisy_step(params, x, y, key, fold_mask: bool, fold_noise: bool) -> dict:
    """One program per variant and shape, compiled once per process (op by op, the step
    compiled over a hundred small programs at every call)."""

    def loss(p, x, y):
        return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

    def step(p, x, y, key):
        drop_key, noise_key = jax.random.split(key)
        i = jax.lax.axis_index("data")
        mask_key = jax.random.fold_in(drop_key, i) if fold_mask else drop_key
        keep = jax.random.bernoulli(mask_key, 1 - RATE, x.shape)
        grads = jax.lax.pmean(jax.grad(loss)(p, jnp.where(keep, x / (1 - RATE), 0.0), y), "data")
        w_key, b_key = jax.random.split(jax.random.fold_in(noise_key, i) if fold_noise
                                        else noise_key)
        noise = {"w": jax.random.normal(w_key, p["w"].shape), "b": jax.random.normal(b_key, ())}
        return jax.tree.map(lambda q, g, z: q - LR * (g + NOISE * z), p, grads, noise)

    return jax.shard_map(step, mesh=explicit_data_mesh(),
                         in_specs=(P(), P("data"), P("data"), P()), out_specs=P(),
                         check_vma=False)(params, x, y, key)


def noisy_case(fn, seed: int, features: int = 3) -> dict:
    params, batch = noisy_inputs(seed, features)
    key = jax.random.key(seed)

    def variant(fold_mask, fold_noise):
        return Material(lambda: noisy_step_with(params, batch, key, fold_mask=fold_mask,
                                                fold_noise=fold_noise))

    return {"result": fn(params, batch, key), "_as_given": variant(False, True),
            "_mask_shared": variant(False, False), "_noise_per_device": variant(True, True)}


NOISY_HINTS = [result_close_to("_as_given", hints.HINT_NOISY_BOTH_BUGS),
               result_close_to("_mask_shared", hints.HINT_NOISY_MASK_SHARED),
               result_close_to("_noise_per_device", hints.HINT_NOISY_NOISE_PER_DEVICE)]


@case("fixed_noisy_step", hidden=False, hints=NOISY_HINTS)
def one_step_from_key_0(fn):
    return noisy_case(fn, seed=0)
