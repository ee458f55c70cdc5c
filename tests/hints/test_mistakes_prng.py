"""The usual mistakes of lesson 4 (PRNG keys on many devices), each written as a student would:
does check() fail it with the hint of that mistake, and no other hint? And does a correct
function, written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import (
    Mistakes,
    assert_passes_without_hint,
    hidden_result,
    lesson_tests,
)

from grader import messages as msg
from grader.course import EXERCISES
from grader.hints import common
from grader.hints import prng as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "04_prng"]


def data_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("data",))


# --- correct functions ----------------------------------------------------------------------
def split_keys(key):
    return jax.random.split(key, jax.device_count())


def device_keys(key):
    return jax.device_put(split_keys(key), NamedSharding(data_mesh(), P("data")))


def noise_with(own_index, scale_it=True, check_vma=True):
    def replicated_noise(key, x, scale):
        mesh = jax.typeof(x).sharding.mesh

        def add(block):
            own = key if own_index is None else jax.random.fold_in(key, own_index())
            noise = jax.random.normal(own, block.shape)
            return block + (scale * noise if scale_it else noise)

        return jax.shard_map(add, mesh=mesh, in_specs=P("data", None),
                             out_specs=P("data", None), check_vma=check_vma)(x)

    return replicated_noise


def data_position():
    return jax.lax.axis_index("data")


def overall_position():
    return (jax.lax.axis_index("data") * jax.lax.axis_size("model")
            + jax.lax.axis_index("model"))


def dropout_with(keep_probability, scale=True):
    @jax.jit
    def sharded_dropout(key, x, rate):
        keep = jax.random.bernoulli(key, keep_probability(rate), x.shape)
        return jnp.where(keep, x / (1 - rate) if scale else x, 0)

    return sharded_dropout


RATE, LR, NOISE = 0.25, 0.1, 0.01


def noisy_step_with(mask_per_device, noise_per_device, noise_sent_from_device_0=False):
    """The exercise's step, written apart: each key folded with the device's index or not,
    and, as a wrong fix, every device's noise replaced by device 0's (an all-gather)."""
    def fixed_noisy_step(params, batch, key):
        mesh = jax.make_mesh((jax.device_count(),), ("data",))
        drop_key, noise_key = jax.random.split(key)

        def loss(p, x, y):
            return jnp.mean((x @ p["w"] + p["b"] - y) ** 2)

        def step(p, x, y):
            i = jax.lax.axis_index("data")
            keep = jax.random.bernoulli(jax.random.fold_in(drop_key, i) if mask_per_device
                                        else drop_key, 1 - RATE, x.shape)
            grads = jax.grad(loss)(p, jnp.where(keep, x / (1 - RATE), 0.0), y)
            grads = jax.lax.pmean(grads, "data")
            w_key, b_key = jax.random.split(jax.random.fold_in(noise_key, i) if noise_per_device
                                            else noise_key)
            noise = {"w": jax.random.normal(w_key, p["w"].shape),
                     "b": jax.random.normal(b_key, ())}
            if noise_sent_from_device_0:
                noise = jax.tree.map(lambda z: jax.lax.all_gather(z, "data")[0], noise)
            return jax.tree.map(lambda q, g, z: q - LR * (g + NOISE * z), p, grads, noise)

        params = jax.reshard(params, NamedSharding(mesh, P()))
        batch = jax.reshard(batch, NamedSharding(mesh, P("data")))
        return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data"), P("data")),
                             out_specs=P(), check_vma=False)(params, batch["x"], batch["y"])

    return fixed_noisy_step


CORRECT = {
    "device_keys": device_keys,
    "replicated_noise": noise_with(data_position),
    "sharded_dropout": dropout_with(lambda rate: 1 - rate),
    "fixed_noisy_step": noisy_step_with(mask_per_device=True, noise_per_device=False),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- device_keys ----------------------------------------------------------------------------
@mistake("device_keys", hints.HINT_LEGACY_KEYS)
def returns_raw_key_data(key):
    return jax.random.key_data(device_keys(key))


@mistake("device_keys", hints.HINT_KEYS_COUNT)
def splits_without_a_count(key):
    return jax.random.split(key)


@mistake("device_keys", common.HINT_DOES_NOT_DIVIDE)
def places_keys_split_without_a_count(key):
    return jax.device_put(jax.random.split(key), NamedSharding(data_mesh(), P("data")))


# --- replicated_noise -----------------------------------------------------------------------
mistake("replicated_noise", common.HINT_NOT_REPLICATED, "folds_in_the_overall_index")(
    noise_with(overall_position))
mistake("replicated_noise", hints.HINT_NOISE_DIFFERS_OVER_MODEL, "and_switches_the_check_off")(
    noise_with(overall_position, check_vma=False))
mistake("replicated_noise", hints.HINT_NOISE_SAME_EVERY_BLOCK, "no_fold_in")(
    noise_with(None))
mistake("replicated_noise", hints.HINT_NOISE_UNSCALED, "noise_unscaled")(
    noise_with(data_position, scale_it=False))


@mistake("replicated_noise", hints.HINT_NOISE_ONE_DRAW)
def draws_noise_for_the_whole_array(key, x, scale):
    return x + scale * jax.random.normal(key, x.shape)


# --- sharded_dropout ------------------------------------------------------------------------
@mistake("sharded_dropout", hints.HINT_MASK_PER_DEVICE)
def draws_a_mask_on_each_device(key, x, rate):
    def local(block):
        own = jax.random.fold_in(key, jax.lax.axis_index("data"))
        keep = jax.random.bernoulli(own, 1 - rate, block.shape)
        return jnp.where(keep, block / (1 - rate), 0)

    return jax.shard_map(local, mesh=data_mesh(), in_specs=P("data"), out_specs=P("data"))(x)


mistake("sharded_dropout", hints.HINT_DROPOUT_UNSCALED, "keeps_values_unscaled")(
    dropout_with(lambda rate: 1 - rate, scale=False))


@mistake("sharded_dropout", hints.HINT_DROPOUT_NOT_SPLIT)
def replicates_x_first(key, x, rate):
    x = jax.device_put(x, NamedSharding(data_mesh(), P()))
    return CORRECT["sharded_dropout"](key, x, rate)


# --- fixed_noisy_step -----------------------------------------------------------------------
mistake("fixed_noisy_step", hints.HINT_NOISY_BOTH_BUGS, "hands_in_the_step_as_given")(
    noisy_step_with(mask_per_device=False, noise_per_device=True))
mistake("fixed_noisy_step", hints.HINT_NOISY_MASK_SHARED, "fixes_the_noise_only")(
    noisy_step_with(mask_per_device=False, noise_per_device=False))
mistake("fixed_noisy_step", hints.HINT_NOISY_NOISE_PER_DEVICE, "fixes_the_mask_only")(
    noisy_step_with(mask_per_device=True, noise_per_device=True))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "04_prng")


@pytest.mark.parametrize("case_id", ["device_keys:one_key_on_each_device",
                                     "device_keys:device_i_holds_key_i"])
def test_keys_left_on_one_device_get_the_placement_hint_from_the_grader(case_id):
    """Keys split but never placed pass check() (its tests read their values): do the
    grader's hidden tests of where they sit fail them with the hint to place them, and pass
    the placed keys?"""
    def device_keys(key):
        return split_keys(key)

    wrong = hidden_result(case_id, device_keys, CORRECT["device_keys"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_KEYS_NOT_PLACED
    right = hidden_result(case_id, CORRECT["device_keys"], CORRECT["device_keys"])
    assert right.status == msg.PASSED and right.hint is None


def test_keeping_with_probability_rate_gets_its_hint_from_the_grader():
    """bernoulli(key, rate) keeps as often as bernoulli(key, 1 - rate) at the public test's
    rate 0.5, so check() passes it: does the grader's hidden test at rate 0.25 fail it with the
    hint about the keep probability?"""
    wrong = dropout_with(lambda rate: rate)
    result = hidden_result("sharded_dropout:same_mask_on_every_device_count", wrong,
                           CORRECT["sharded_dropout"])
    assert result.status == msg.FAILED
    assert result.hint == hints.HINT_DROPOUT_KEEP_PROBABILITY


def test_scaling_by_the_kept_fraction_gets_the_communication_hint_from_the_grader():
    """Dividing by the fraction of the mask actually kept (a mean over every device) instead
    of 1 - rate: does the grader's test of the compiled program fail it with the hint that
    dropout needs no communication?"""
    @jax.jit
    def sharded_dropout(key, x, rate):
        keep = jax.random.bernoulli(key, 1.0 - rate, x.shape)
        return jnp.where(keep, x / keep.mean(), 0.0)

    wrong = hidden_result("sharded_dropout:draws_without_communication", sharded_dropout,
                          CORRECT["sharded_dropout"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_DROPOUT_COMMUNICATES


def test_noise_gathered_then_sliced_gets_the_communication_hint_from_the_grader():
    """Gathering x over 'data' and slicing a device's rows back out gives the right numbers,
    so check() passes it: does the grader's test of the compiled program fail it with the
    hint that nothing needs to move?"""
    def replicated_noise(key, x, scale):
        def add(block):
            everything = jax.lax.all_gather(block, "data", tiled=True)
            i = jax.lax.axis_index("data")
            mine = jax.lax.dynamic_slice_in_dim(everything, i * block.shape[0], block.shape[0])
            return mine + scale * jax.random.normal(jax.random.fold_in(key, i), block.shape)

        return jax.shard_map(add, mesh=jax.typeof(x).sharding.mesh, in_specs=P("data", None),
                             out_specs=P("data", None))(x)

    assert_passes_without_hint(replicated_noise)
    wrong = hidden_result("replicated_noise:adds_noise_without_communication", replicated_noise,
                          CORRECT["replicated_noise"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_NOISE_COMMUNICATES


def test_noise_returned_replicated_gets_the_layout_hint_from_the_grader():
    """The right numbers placed on every device at the end pass check() (its tests read
    values): does the grader's test of where they sit fail them with the hint to keep x's
    layout?"""
    def replicated_noise(key, x, scale):
        y = CORRECT["replicated_noise"](key, x, scale)
        return jax.device_put(y, NamedSharding(x.sharding.mesh, P()))

    wrong = hidden_result("replicated_noise:laid_out_as_x", replicated_noise,
                          CORRECT["replicated_noise"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_NOISE_LAYOUT


def test_noise_sent_from_device_0_gets_the_communication_hint_from_the_grader():
    """Copies kept equal by sending device 0's noise to every device (an all-gather) instead
    of drawing it from noise_key everywhere: does the grader's test of the compiled program
    fail it with the hint to add no collective?"""
    wrong = hidden_result("fixed_noisy_step:one_all_reduce_for_the_gradients",
                          noisy_step_with(True, True, noise_sent_from_device_0=True),
                          CORRECT["fixed_noisy_step"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_NOISY_COMMUNICATION
