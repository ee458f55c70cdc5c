"""The usual mistakes of lesson 3 (collectives), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint?

The correct functions of alternatives.py pass with no hint (test_check.py). A mistake that
JAX refuses is caught by the hint of its error message; one that computes a wrong value, by
the hint that recognises that value.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from alternatives import CORRECT
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_hidden_hint, hidden_result, lesson_tests

from grader import messages as msg
from grader.hints import collectives as hints
from grader.hints import common

mistake = Mistakes()


def data_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("data",))


def ring(n: int) -> list[tuple[int, int]]:
    return [(i, (i + 1) % n) for i in range(n)]


# --- nan_mean_var ---------------------------------------------------------------------------
def moments_with(body, **options):
    """shard_map of ``body`` over every device, x split over 'data', two replicated results."""
    return lambda x: jax.shard_map(body, mesh=data_mesh(), in_specs=P("data"),
                                   out_specs=(P(), P()), **options)(x)


def present_and_zeroed(block):
    present = ~jnp.isnan(block)
    return present, jnp.where(present, block, 0.0)


@mistake("nan_mean_var", hints.HINT_MOMENTS_NAN)
def adds_the_missing_entries_in(x):
    def moments(block):
        count, total, squares = jax.lax.psum(
            (jnp.ones_like(block).sum(), block.sum(), (block * block).sum()), "data")
        return total / count, squares / count - (total / count) ** 2

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_LENGTH)
def divides_by_the_length_of_x(x):
    def moments(block):
        _, values = present_and_zeroed(block)
        total, squares = jax.lax.psum((values.sum(), (values * values).sum()), "data")
        mean = total / x.shape[0]
        return mean, squares / x.shape[0] - mean * mean

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_SAMPLE)
def takes_the_sample_variance(x):
    def moments(block):
        present, values = present_and_zeroed(block)
        count, total, squares = jax.lax.psum(
            (present.sum().astype(x.dtype), values.sum(), (values * values).sum()), "data")
        mean = total / count
        return mean, (squares - count * mean * mean) / (count - 1)

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_MEAN_OF_MEANS, also=(hints.HINT_MOMENTS_ROUNDS,))
def averages_the_blocks_own_means(x):
    def moments(block):
        mean = jax.lax.pmean(jnp.nanmean(block), "data")
        return mean, jax.lax.pmean(jnp.nanmean((block - mean) ** 2), "data")

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_ROUNDS)
def takes_the_mean_before_the_deviations(x):
    def moments(block):
        present, values = present_and_zeroed(block)
        count, total = jax.lax.psum((present.sum().astype(x.dtype), values.sum()), "data")
        mean = total / count
        deviations = jnp.where(present, block - mean, 0.0)
        return mean, jax.lax.psum((deviations * deviations).sum(), "data") / count

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_DTYPES)
def counts_in_integers(x):
    def moments(block):
        present, values = present_and_zeroed(block)
        count, total, squares = jax.lax.psum(
            (present.sum(), values.sum(), (values * values).sum()), "data")
        mean = total / count
        return mean, squares / count - mean * mean

    return moments_with(moments)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_VALUES)
def psums_the_blocks_before_summing_them(x):
    def moments(block):
        present, values = present_and_zeroed(block)
        counts, totals, squares = jax.lax.psum(
            (present.astype(x.dtype), values, values * values), "data")
        mean = totals.sum() / counts.sum()
        return mean, squares.sum() / counts.sum() - mean * mean

    return moments_with(moments)(x)


@mistake("nan_mean_var", common.HINT_SPEC_TOO_LONG)
def gives_a_1d_array_a_2d_spec(x):
    def moments(block):
        present, values = present_and_zeroed(block)
        count, total, squares = jax.lax.psum(
            (present.sum().astype(x.dtype), values.sum(), (values * values).sum()), "data")
        return total / count, squares / count - (total / count) ** 2

    return jax.shard_map(moments, mesh=data_mesh(), in_specs=P("data", None),
                         out_specs=(P(), P()))(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_GATHERS)
def gathers_x_onto_every_device(x):
    def moments(block):
        whole = jax.lax.all_gather(block, "data", tiled=True)
        return jnp.nanmean(whole), jnp.nanvar(whole)

    # every device computes the same from the whole of x, which check_vma cannot tell
    return moments_with(moments, check_vma=False)(x)


@mistake("nan_mean_var", common.HINT_NOT_REPLICATED)
def returns_each_blocks_own_moments(x):
    return moments_with(lambda block: (jnp.nanmean(block), jnp.nanvar(block)))(x)


@mistake("nan_mean_var", hints.HINT_FORGOT_PSUM, also=(hints.HINT_MOMENTS_NO_PSUM,))
def silences_the_check_instead_of_adding_a_psum(x):
    return moments_with(lambda block: (jnp.nanmean(block), jnp.nanvar(block)),
                        check_vma=False)(x)


@mistake("nan_mean_var", hints.HINT_MOMENTS_LAYOUT)
def brings_the_moments_to_the_first_device(x):
    return tuple(jax.device_put(m, jax.devices()[0]) for m in CORRECT["nan_mean_var"](x))


# --- fixed_pmap_port ------------------------------------------------------------------------
def centre(rows, w):
    h = rows @ w
    return h - jax.lax.pmean(h.mean(axis=0), "batch")


def batch_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("batch",))


@mistake("fixed_pmap_port", hints.HINT_PORT_DEVICE_AXIS)
def keeps_the_reshape_to_one_block_per_device(x, w):
    per_device = x.reshape(jax.device_count(), -1, x.shape[1])
    out = jax.shard_map(centre, mesh=batch_mesh(), in_specs=(P("batch"), P()),
                        out_specs=P("batch"))(per_device, w)
    return out.reshape(x.shape[0], -1)


@mistake("fixed_pmap_port", hints.HINT_PORT_STACKED_ROWS)
def returns_one_slice_per_device_as_pmap_did(x, w):
    def centre_block(block, w):  # the (1, N / n, k) block handled right, but left stacked
        h = block @ w
        return h - jax.lax.pmean(h.mean(axis=(0, 1)), "batch")

    per_device = x.reshape(jax.device_count(), -1, x.shape[1])
    return jax.shard_map(centre_block, mesh=batch_mesh(), in_specs=(P("batch"), P()),
                         out_specs=P("batch"))(per_device, w)


@mistake("fixed_pmap_port", hints.HINT_PORT_NO_PMEAN)
def centres_each_block_by_its_own_mean(x, w):
    def own(rows, w):
        h = rows @ w
        return h - h.mean(axis=0)

    return jax.shard_map(own, mesh=batch_mesh(), in_specs=(P("batch", None), P()),
                         out_specs=P("batch", None))(x, w)


@mistake("fixed_pmap_port", hints.HINT_PORT_LAYOUT)
def gathers_the_result_onto_every_device(x, w):
    out = jax.shard_map(centre, mesh=batch_mesh(), in_specs=(P("batch", None), P()),
                        out_specs=P("batch", None))(x, w)
    return jax.device_put(out, NamedSharding(batch_mesh(), P()))


@mistake("fixed_pmap_port", common.HINT_PMAP_INPUT)
def hands_in_the_pmap_code(x, w):
    per_device = x.reshape(jax.local_device_count(), -1, x.shape[1])
    out = jax.pmap(centre, axis_name="batch", in_axes=(0, None))(per_device, w)
    return out.reshape(x.shape[0], -1)


@mistake("fixed_pmap_port", common.HINT_PMAP_SQUEEZE)
def maps_pmap_over_the_whole_batch(x, w):
    out = jax.pmap(centre, axis_name="batch", in_axes=(0, None))(jnp.asarray(x), w)
    return out.reshape(x.shape[0], -1)


@mistake("fixed_pmap_port", common.HINT_AXIS_NAME, also=(common.HINT_PMAP_INPUT,))
def pmaps_with_another_name_than_its_pmean(x, w):
    def centre_over_devices(rows, w):
        h = rows @ w
        return h - jax.lax.pmean(h.mean(axis=0), "devices")

    per_device = x.reshape(jax.local_device_count(), -1, x.shape[1])
    out = jax.pmap(centre_over_devices, axis_name="batch", in_axes=(0, None))(per_device, w)
    return out.reshape(x.shape[0], -1)


@mistake("fixed_pmap_port", common.HINT_DOES_NOT_DIVIDE)
def splits_w_as_well(x, w):
    return jax.shard_map(centre, mesh=batch_mesh(), in_specs=(P("batch", None), P("batch")),
                         out_specs=P("batch", None))(x, w)


# --- distributed_dot ------------------------------------------------------------------------
@mistake("distributed_dot", hints.HINT_FORGOT_PSUM)
def dot_without_psum_unchecked(v1, v2):
    return jax.shard_map(jnp.vdot, mesh=data_mesh(), in_specs=(P("data"), P("data")),
                         out_specs=P(), check_vma=False)(v1, v2)


@mistake("distributed_dot", common.HINT_NOT_REPLICATED)
def dot_without_psum(v1, v2):
    return jax.shard_map(jnp.vdot, mesh=data_mesh(), in_specs=(P("data"), P("data")),
                         out_specs=P())(v1, v2)


@mistake("distributed_dot", hints.HINT_OUT_SPECS_RANK)
def scalar_per_device_with_a_split_out_spec(v1, v2):
    return jax.shard_map(jnp.vdot, mesh=data_mesh(), in_specs=(P("data"), P("data")),
                         out_specs=P("data"))(v1, v2)


@mistake("distributed_dot", common.HINT_RESHARD)
def dot_on_an_explicit_mesh_without_placing_the_inputs(v1, v2):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return jax.shard_map(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"), mesh=mesh,
                         in_specs=(P("data"), P("data")), out_specs=P())(v1, v2)


@mistake("global_max_normalize", hints.HINT_SET_MESH_IN_JIT)
def places_x_under_set_mesh(x):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    with jax.set_mesh(mesh):
        x = jax.reshard(x, P("data"))
        return jax.shard_map(lambda b: b / jax.lax.pmax(jnp.abs(b).max(), "data"),
                             out_specs=P("data"))(x)


@mistake("global_max_normalize", common.HINT_RESHARD)
def normalizes_on_an_explicit_mesh_without_placing_x(x):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    return jax.shard_map(lambda b: b / jax.lax.pmax(jnp.abs(b).max(), "data"), mesh=mesh,
                         in_specs=P("data"), out_specs=P("data"))(x)


# --- pmean_update_step: the pmap step ported to shard_map -----------------------------------
def ported_step(average, out_spec=None, stack=False, vary=True, **options):
    def pmean_update_step(params, sharded_batch, learning_rate=0.01):
        mesh = Mesh(np.array(jax.devices()), ("data_parallel_axis",))

        def loss(q, x, y):
            return jnp.mean((q["w"] * x + q["b"] - y) ** 2)

        def step(p, batch):
            mine = jax.lax.pcast(p, "data_parallel_axis", to="varying") if vary else p
            grads = average(jax.grad(loss)(mine, batch["x"], batch["y"]))
            new = {k: p[k] - learning_rate * grads[k] for k in p}
            return {k: v[None] for k, v in new.items()} if stack else new

        return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data_parallel_axis")),
                             out_specs=P() if out_spec is None else out_spec,
                             **options)(params, sharded_batch)

    return pmean_update_step


def pmean(grads):
    return jax.lax.pmean(grads, "data_parallel_axis")


mistake("pmean_update_step", hints.HINT_PSUM_NOT_PMEAN, "copies_the_step_literally")(
    ported_step(pmean, vary=False))
mistake("pmean_update_step", common.HINT_NOT_REPLICATED, "no_pmean")(
    ported_step(lambda grads: grads))
mistake("pmean_update_step", hints.HINT_FORGOT_PMEAN, "no_pmean_unchecked")(
    ported_step(lambda grads: grads, vary=False, check_vma=False))
mistake("pmean_update_step", hints.HINT_PSUM_NOT_PMEAN, "psum_not_pmean")(
    ported_step(lambda grads: jax.lax.psum(grads, "data_parallel_axis")))
mistake("pmean_update_step", hints.HINT_PORT_STACKED, "one_copy_per_device")(
    ported_step(pmean, out_spec=P("data_parallel_axis"), stack=True))


@mistake("pmean_update_step", common.HINT_RESHARD)
def ports_onto_an_explicit_mesh_without_placing_the_batch(params, sharded_batch,
                                                          learning_rate=0.01):
    mesh = jax.make_mesh((jax.device_count(),), ("data_parallel_axis",))

    def step(p, batch):
        error = p["w"] * batch["x"] + p["b"] - batch["y"]
        grads = pmean({"w": jnp.mean(2 * error * batch["x"]), "b": jnp.mean(2 * error)})
        return {k: p[k] - learning_rate * grads[k] for k in p}

    return jax.shard_map(step, mesh=mesh, in_specs=(P(), P("data_parallel_axis")),
                         out_specs=P())(params, sharded_batch)


@mistake("pmean_update_step", hints.HINT_PORT_STACKED)
def keeps_the_pmap(params, sharded_batch, learning_rate=0.01):
    def step(p, batch):
        error = p["w"] * batch["x"] + p["b"] - batch["y"]
        grads = pmean({"w": jnp.mean(2 * error * batch["x"]), "b": jnp.mean(2 * error)})
        return {k: p[k] - learning_rate * grads[k] for k in p}

    return jax.pmap(step, axis_name="data_parallel_axis", in_axes=(None, 0))(
        params, sharded_batch)


# --- halo_difference ------------------------------------------------------------------------
def halo_with(before_pairs, after_pairs):
    """A halo exchange that sends each block's last element along ``before_pairs(n)`` and
    its first along ``after_pairs(n)``."""
    def halo_difference(x):
        n = jax.device_count()

        def difference(block):
            before = jax.lax.ppermute(block[-1:], "data", before_pairs(n))
            after = jax.lax.ppermute(block[:1], "data", after_pairs(n))
            padded = jnp.concatenate([before, block, after])
            return (padded[2:] - padded[:-2]) / 2

        return jax.shard_map(difference, mesh=data_mesh(), in_specs=P("data"),
                             out_specs=P("data"))(x)

    return halo_difference


def back(n: int) -> list[tuple[int, int]]:
    return [(i, (i - 1) % n) for i in range(n)]


mistake("halo_difference", hints.HINT_WRONG_DIRECTION, "halos_from_the_wrong_neighbours")(
    halo_with(back, ring))
mistake("halo_difference", hints.HINT_RING_NO_WRAP, "no_wrap_round")(
    halo_with(lambda n: [(i, i + 1) for i in range(n - 1)],
              lambda n: [(i, i - 1) for i in range(1, n)]))


@mistake("halo_difference", hints.HINT_HALO_OWN_BLOCK, also=(hints.HINT_HALO_NO_PERMUTE,))
def rolls_each_block_on_itself(x):
    return jax.shard_map(lambda b: (jnp.roll(b, -1) - jnp.roll(b, 1)) / 2, mesh=data_mesh(),
                         in_specs=P("data"), out_specs=P("data"))(x)


@mistake("halo_difference", hints.HINT_HALO_WHOLE_BLOCK)
def sends_whole_blocks_and_keeps_their_edges(x):
    n = jax.device_count()

    def difference(block):
        previous = jax.lax.ppermute(block, "data", ring(n))
        following = jax.lax.ppermute(block, "data", back(n))
        padded = jnp.concatenate([previous[-1:], block, following[:1]])
        return (padded[2:] - padded[:-2]) / 2

    return jax.shard_map(difference, mesh=data_mesh(), in_specs=P("data"),
                         out_specs=P("data"))(x)


@mistake("halo_difference", hints.HINT_HALO_OTHER_COLLECTIVES)
def gathers_x_and_rolls_it_whole(x):
    def difference(block):
        whole = jax.lax.all_gather(block, "data", tiled=True)
        start = jax.lax.axis_index("data") * block.size
        rolled = (jnp.roll(whole, -1) - jnp.roll(whole, 1)) / 2
        return jax.lax.dynamic_slice_in_dim(rolled, start, block.size)

    return jax.shard_map(difference, mesh=data_mesh(), in_specs=P("data"),
                         out_specs=P("data"))(x)


@mistake("halo_difference", common.HINT_AXIS_NAME_SILENT)
def sends_along_an_axis_the_mesh_does_not_have(x):
    pairs = ring(jax.device_count())
    return jax.shard_map(lambda b: jax.lax.ppermute(b, "devices", pairs), mesh=data_mesh(),
                         in_specs=P("data"), out_specs=P("data"))(x)


# --- global_max_normalize -------------------------------------------------------------------
def normalize_with(local):
    def global_max_normalize(x):
        return jax.shard_map(local, mesh=data_mesh(), in_specs=P("data"),
                             out_specs=P("data"))(x)

    return global_max_normalize


mistake("global_max_normalize", hints.HINT_NORMALIZE_LOCAL_MAX, "local_max",
        also=(hints.HINT_NORMALIZE_PMAX,))(
    normalize_with(lambda b: b / jnp.abs(b).max()))
mistake("global_max_normalize", hints.HINT_NORMALIZE_ABS, "max_without_abs")(
    normalize_with(lambda b: b / jax.lax.pmax(b.max(), "data")))


@mistake("global_max_normalize", hints.HINT_NORMALIZE_PMAX)
def normalizes_the_whole_array_without_shard_map(x):
    return x / jnp.abs(x).max()


# --- allreduce_from_ppermute ----------------------------------------------------------------
def ring_total(steps_of):
    def allreduce_from_ppermute(x):
        n = jax.device_count()

        def total(row):
            result, moving = row, row
            for _ in range(steps_of(n)):
                moving = jax.lax.ppermute(moving, "data", ring(n))
                result = result + moving
            return result

        return jax.shard_map(total, mesh=data_mesh(), in_specs=P("data"),
                             out_specs=P("data"))(x)

    return allreduce_from_ppermute


mistake("allreduce_from_ppermute", hints.HINT_RING_STEPS, "n_steps")(ring_total(lambda n: n))
mistake("allreduce_from_ppermute", hints.HINT_RING_STEPS, "one_step")(ring_total(lambda n: 1))


@mistake("allreduce_from_ppermute", hints.HINT_RING_USES_OTHER_COLLECTIVES)
def all_reduces_with_psum(x):
    return jax.shard_map(lambda row: jax.lax.psum(row, "data"), mesh=data_mesh(),
                         in_specs=P("data"), out_specs=P("data"))(x)


# --- sharded_cumsum -------------------------------------------------------------------------
def cumsum_with(earlier_of):
    def sharded_cumsum(x):
        def running(block):
            local = jnp.cumsum(block)
            totals = jax.lax.all_gather(local[-1], "data")
            earlier = earlier_of(jnp.arange(totals.shape[0]), jax.lax.axis_index("data"))
            return local + jnp.sum(jnp.where(earlier, totals, 0))

        return jax.shard_map(running, mesh=data_mesh(), in_specs=P("data"),
                             out_specs=P("data"))(x)

    return sharded_cumsum


mistake("sharded_cumsum", hints.HINT_CUMSUM_OWN_TOTAL, "own_total_too")(
    cumsum_with(lambda j, i: j <= i))
mistake("sharded_cumsum", hints.HINT_CUMSUM_OFFSET, "no_offset")(cumsum_with(lambda j, i: j < 0))


@mistake("sharded_cumsum", hints.HINT_CUMSUM_GATHERS_DATA)
def gathers_the_whole_vector(x):
    def running(block):
        whole = jax.lax.all_gather(block, "data", tiled=True)
        size = block.shape[0]
        return jax.lax.dynamic_slice(jnp.cumsum(whole), (jax.lax.axis_index("data") * size,),
                                     (size,))

    return jax.shard_map(running, mesh=data_mesh(), in_specs=P("data"),
                         out_specs=P("data"))(x)


# --- reduce_scatter_columns -----------------------------------------------------------------
def scatter_with(local, order=("y", "x")):
    def reduce_scatter_columns(parts, mesh):
        return jax.shard_map(local, mesh=mesh, in_specs=P("x", "y"),
                             out_specs=P(None, order))(parts)

    return reduce_scatter_columns


def psum_then_own_columns(block):
    total = jax.lax.psum(block, "x")
    width = total.shape[1] // jax.lax.axis_size("x")
    return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * width, width, axis=1)


mistake("reduce_scatter_columns", hints.HINT_SCATTER_NOT_PSUM, "psum_then_slice")(
    scatter_with(psum_then_own_columns))
mistake("reduce_scatter_columns", hints.HINT_SCATTER_ORDER, "columns_x_first")(
    scatter_with(lambda b: jax.lax.psum_scatter(b, "x", scatter_dimension=1, tiled=True),
                 order=("x", "y")))
mistake("reduce_scatter_columns", hints.HINT_SCATTER_DIMENSION, "scatters_the_rows")(
    scatter_with(lambda b: jax.lax.psum_scatter(b, "x", tiled=True)))
mistake("reduce_scatter_columns", hints.HINT_SCATTER_DIMENSION, "scatters_over_both_axes")(
    scatter_with(lambda b: jax.lax.psum_scatter(b, ("x", "y"), scatter_dimension=1,
                                                tiled=True)))
mistake("reduce_scatter_columns", hints.HINT_SCATTER_TILED, "scatters_without_tiled")(
    scatter_with(lambda b: jax.lax.psum_scatter(b, "x", scatter_dimension=1)))


@mistake("reduce_scatter_columns", hints.HINT_SCATTER_LAYOUT, also=(hints.HINT_SCATTER_NOT_PSUM,))
def gathers_the_total_onto_every_device(parts, mesh):
    own = scatter_with(lambda b: jax.lax.psum_scatter(b, "x", scatter_dimension=1,
                                                      tiled=True))(parts, mesh)
    return jax.device_put(own, NamedSharding(mesh, P()))


# --- rows_to_columns ------------------------------------------------------------------------
@mistake("rows_to_columns", hints.HINT_A2A_AXES)
def swaps_split_and_concat_axes(x):
    return jax.shard_map(lambda rows: jax.lax.all_to_all(rows, "data", 0, 1, tiled=True),
                         mesh=data_mesh(), in_specs=P("data", None),
                         out_specs=P(None, "data"))(x)


@mistake("rows_to_columns", hints.HINT_A2A_GATHERED)
def reshards_with_device_put(x):
    return jax.device_put(x, NamedSharding(data_mesh(), P(None, "data")))


@mistake("rows_to_columns", hints.HINT_A2A_LAYOUT, also=(hints.HINT_A2A_GATHERED,))
def gathers_the_columns_after_the_all_to_all(x):
    def resplit(rows):
        columns = jax.lax.all_to_all(rows, "data", 1, 0, tiled=True)
        return jax.lax.all_gather(columns, "data", axis=1, tiled=True, to="invarying")

    return jax.shard_map(resplit, mesh=data_mesh(), in_specs=P("data", None),
                         out_specs=P())(x)


# --- row_group_sums -------------------------------------------------------------------------
def row_sums_with(local, **options):
    def row_group_sums(x, mesh):
        return jax.shard_map(local, mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"),
                             **options)(x)

    return row_group_sums


mistake("row_group_sums", hints.HINT_ROW_SUMS_BOTH_AXES, "psum_over_x_and_y")(
    row_sums_with(lambda b: jax.lax.psum(b.sum(axis=1), ("x", "y")), check_vma=False))
mistake("row_group_sums", hints.HINT_ROW_SUMS_ONE_BLOCK, "no_psum_unchecked")(
    row_sums_with(lambda b: b.sum(axis=1), check_vma=False))
mistake("row_group_sums", hints.HINT_ROW_SUMS_REPLICATE_Y, "no_psum")(
    row_sums_with(lambda b: b.sum(axis=1)))


def row_sums_then(after):
    def row_group_sums(x, mesh):
        sums = row_sums_with(lambda b: jax.lax.psum(b.sum(axis=1), "y"))(x, mesh)
        return after(sums, mesh)

    return row_group_sums


mistake("row_group_sums", hints.HINT_ROW_SUMS_LAYOUT, "replicated_after_the_psum")(
    row_sums_then(lambda sums, mesh: jax.device_put(sums, NamedSharding(mesh, P()))))


@mistake("row_group_sums", common.HINT_DEVICE_COUNT)
def builds_a_4_by_4_grid_of_its_own(x, mesh):
    grid = jax.make_mesh((4, 4), ("x", "y"))
    return jax.shard_map(lambda b: jax.lax.psum(b.sum(axis=1), "y"), mesh=grid,
                         in_specs=P("x", "y"), out_specs=P("x"))(x)


@mistake("row_group_sums", hints.HINT_ROW_SUMS_GIVEN_MESH)
def builds_an_n_by_2_grid_of_its_own(x, mesh):
    """The mesh check()'s first case hands it has that shape: its second case's mesh has
    another."""
    grid = Mesh(np.array(jax.devices()).reshape(-1, 2), ("x", "y"))
    return row_sums_with(lambda b: jax.lax.psum(b.sum(axis=1), "y"))(x, grid)


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "03_collectives")


def test_row_sums_on_a_grid_of_its_own_get_the_given_mesh_hint_from_the_grader():
    """A function that builds its own n/2 x 2 grid instead of using `mesh`: does the grader's
    hidden test on a mesh of another shape fail it with the hint to use the mesh it was
    given, as check() does?"""
    wrong = hidden_result("row_group_sums:on_a_wide_auto_mesh", builds_an_n_by_2_grid_of_its_own,
                          CORRECT["row_group_sums"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_ROW_SUMS_GIVEN_MESH


def test_a_replicated_result_gets_the_stays_split_hint_from_the_grader():
    """A normalized vector moved onto every device has the right values: does the grader's
    test of its layout fail it with the hint to keep one block per device?"""
    def global_max_normalize(x):
        scale = jax.shard_map(lambda b: b / jax.lax.pmax(jnp.max(jnp.abs(b)), "data"),
                              mesh=data_mesh(), in_specs=P("data"), out_specs=P("data"))
        return jax.device_put(scale(x), NamedSharding(data_mesh(), P()))

    global_max_normalize.__name__ = global_max_normalize.__qualname__ = "global_max_normalize"
    wrong = hidden_result("global_max_normalize:result_is_split_over_data",
                          global_max_normalize, CORRECT["global_max_normalize"])
    assert wrong.status == msg.FAILED and wrong.hint == hints.HINT_STAYS_SPLIT


def test_a_reduce_scatter_over_both_axes_gets_its_hint_from_the_grader():
    """psum_scatter over ('x', 'y') adds column blocks that must stay apart: does the grader's
    test of the reduce-scatter's device groups fail it with the hint to scatter over 'x'?"""
    wrong = scatter_with(lambda b: jax.lax.psum_scatter(b, ("x", "y"), scatter_dimension=1,
                                                        tiled=True))
    assert_hidden_hint("reduce_scatter_columns:reduce_scatters_among_the_devices_along_x",
                       wrong, hints.HINT_SCATTER_OVER_BOTH, CORRECT)
