"""Probes: counting collectives in compiled HLO, summarising jaxprs, and array layouts.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader import probes

N = 8


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    assert jax.device_count() == N
    return Mesh(jax.devices(), ("data",))


def psum_of_sums(mesh):
    def fn(x):
        local = lambda block: jax.lax.psum(jnp.sum(block), "data")  # noqa: E731
        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    return fn


def shift_right(mesh):
    ring = [(i, (i + 1) % N) for i in range(N)]

    def fn(x):
        local = lambda block: jax.lax.ppermute(block, "data", ring)  # noqa: E731
        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    return fn


def only_counts(**nonzero) -> dict[str, int]:
    counts = dict.fromkeys(probes.COLLECTIVES, 0)
    counts.update({k.replace("_", "-"): v for k, v in nonzero.items()})
    return counts


# --- hlo_collectives on compiled functions --------------------------------------------------
def test_a_psum_in_shard_map_compiles_to_one_all_reduce(mesh):
    """Does a shard_map with one psum compile to exactly one all-reduce and nothing else?"""
    assert probes.hlo_collectives(psum_of_sums(mesh), jnp.arange(16.0)) == only_counts(all_reduce=1)


def test_a_ppermute_compiles_to_a_collective_permute(mesh):
    """Does a ring ppermute compile to one collective-permute and no all-reduce?"""
    assert probes.hlo_collectives(shift_right(mesh), jnp.arange(16.0)) == only_counts(
        collective_permute=1
    )


def test_an_elementwise_function_has_no_collectives():
    """Does x * 2 + 1 on one device compile to no collective at all?"""
    assert probes.hlo_collectives(lambda x: x * 2 + 1, jnp.arange(16.0)) == only_counts()


def test_elementwise_work_on_a_sharded_input_moves_no_data(mesh):
    """Does elementwise work on a row-sharded array stay on each device (no collective)?"""
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("data")))
    assert probes.hlo_collectives(lambda v: jnp.sin(v) * 3, x) == only_counts()


def test_different_collectives_in_one_function_are_each_counted(mesh):
    """Are a ppermute and a psum in one function counted as one of each?"""
    ring = [(i, (i + 1) % N) for i in range(N)]

    def fn(x):
        def local(block):
            return jax.lax.psum(jnp.sum(jax.lax.ppermute(block, "data", ring) * block), "data")

        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    assert probes.hlo_collectives(fn, jnp.arange(16.0)) == only_counts(
        all_reduce=1, collective_permute=1
    )


# --- hlo_collectives on synthetic HLO ----------------------------------------------------
ASYNC_HLO = """\
HloModule jit_fn, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[8]<=[8]}
  %all-reduce-start = f32[8]{0} all-reduce-start(f32[8]{0} %p), replica_groups={}, to_apply=%add
  %all-reduce-done = f32[8]{0} all-reduce-done(f32[8]{0} %all-reduce-start)
  %all-reduce-start.1 = f32[8]{0} all-reduce-start(f32[8]{0} %all-reduce-done), to_apply=%add
  %all-reduce-done.1 = f32[8]{0} all-reduce-done(f32[8]{0} %all-reduce-start.1)
  %cp = (f32[8]{0}, f32[8]{0}, u32[], u32[]) collective-permute-start(f32[8]{0} %p), \
source_target_pairs={{0,1},{1,0}}
  %cp.done = f32[8]{0} collective-permute-done((f32[8]{0}, f32[8]{0}, u32[], u32[]) %cp)
  %gathered = f32[64]{0} all-gather(f32[8]{0} %cp.done), dimensions={0}
  %uses = f32[8]{0} add(f32[8]{0} all-reduce.3, f32[8]{0} %all-reduce-done.1)
  ROOT %out = f32[8]{0} add(f32[8]{0} %uses, f32[8]{0} %cp.done)
}
"""


def test_async_start_done_pairs_are_counted_once(monkeypatch):
    """Is each -start/-done pair one collective, and an operand named all-reduce.3 none?"""
    monkeypatch.setattr(probes, "compiled_hlo", lambda fn, *args: ASYNC_HLO)
    assert probes.hlo_collectives(lambda x: x, None) == only_counts(
        all_reduce=2, collective_permute=1, all_gather=1
    )


def test_reduce_scatter_and_all_to_all_are_recognised(monkeypatch):
    """Are reduce-scatter and all-to-all counted, and not confused with each other?"""
    text = (
        "ENTRY %m (p: f32[8]) -> f32[1] {\n"
        "  %p = f32[8]{0} parameter(0)\n"
        "  %rs = f32[1]{0} reduce-scatter(f32[8]{0} %p), dimensions={0}, to_apply=%add\n"
        "  ROOT %a2a = f32[1]{0} all-to-all(f32[1]{0} %rs), dimensions={0}\n"
        "}\n"
    )
    monkeypatch.setattr(probes, "compiled_hlo", lambda fn, *args: text)
    assert probes.hlo_collectives(lambda x: x, None) == only_counts(reduce_scatter=1, all_to_all=1)


def test_a_named_scope_cannot_fake_an_all_reduce():
    """Is an elementwise function under a scope named 'fake all-reduce(x)' still free of
    collectives?"""

    def fn(x):
        with jax.named_scope("fake all-reduce(x)"):
            return x * 2

    assert probes.hlo_collectives(fn, jnp.arange(4.0)) == only_counts()


# --- jaxpr_summary ------------------------------------------------------------------------
def test_a_psum_is_found_with_its_axis_and_its_shard_map_mesh(mesh):
    """Does the summary list a psum over 'data' and a shard_map over {'data': 8}?"""
    found = probes.jaxpr_summary(psum_of_sums(mesh), jnp.arange(16.0))
    psums = [c for c in found["collectives"] if c["primitive"] in ("psum", "psum_invariant")]
    assert [c["axes"] for c in psums] == [["data"]]
    assert [m["mesh"] for m in found["shard_maps"]] == [{"data": N}]
    assert found["shard_maps"][0]["in_specs"] == [["data"]]
    assert found["shard_maps"][0]["out_specs"] == [[]]
    assert "reduce_sum" in found["primitives"] and "shard_map" in found["primitives"]


def test_reductions_over_positional_axes_are_not_collectives():
    """Is jnp.sum(x, axis=0) (reduce_sum with axes=(0,)) left out of the collectives?"""
    found = probes.jaxpr_summary(lambda x: jnp.sum(x, axis=0) + jnp.max(x), jnp.ones((4, 3)))
    assert {"reduce_sum", "reduce_max"} <= set(found["primitives"])
    assert found["collectives"] == []
    assert found["shard_maps"] == []


def test_a_ppermute_is_listed_with_its_axis(mesh):
    """Does a ppermute show up as a collective over 'data'?"""
    found = probes.jaxpr_summary(shift_right(mesh), jnp.arange(16.0))
    assert found["collectives"] == [{"primitive": "ppermute", "axes": ["data"]}]
    assert found["shard_maps"][0]["out_specs"] == [["data"]]


def test_collectives_inside_jit_and_loops_are_found(mesh):
    """Are collectives nested in a jit and a fori_loop inside shard_map still found?"""

    def fn(x):
        def local(block):
            partial = jnp.sum(block)
            body = lambda i, acc: acc + jax.lax.psum(partial, "data")  # noqa: E731
            return jax.lax.fori_loop(0, 3, body, jnp.zeros(()))

        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    found = probes.jaxpr_summary(jax.jit(fn), jnp.arange(16.0))
    assert any(
        c["primitive"].startswith("psum") and c["axes"] == ["data"] for c in found["collectives"]
    ), found
    assert [m["mesh"] for m in found["shard_maps"]] == [{"data": N}]


def test_a_pmap_psum_is_found_over_its_axis_name():
    """Does a pmap with a psum over 'devices' list that psum?"""
    doubled = jax.pmap(lambda row: jax.lax.psum(row * 2.0, "devices"), axis_name="devices")
    found = probes.jaxpr_summary(doubled, jnp.ones((N, 3)))
    assert any(
        c["primitive"].startswith("psum") and c["axes"] == ["devices"] for c in found["collectives"]
    ), found


def test_a_function_without_collectives_has_none(mesh):
    """Does a shard_map that only works locally list no collective?"""

    def fn(x):
        return jax.shard_map(jnp.sin, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    found = probes.jaxpr_summary(fn, jnp.arange(16.0))
    assert found["collectives"] == []
    assert len(found["shard_maps"]) == 1


def test_the_summary_is_plain_data(mesh):
    """Can a summary be sent from a worker as plain data and read back the same?"""
    from grader import plain

    found = probes.jaxpr_summary(psum_of_sums(mesh), jnp.arange(16.0))
    back = plain.from_plain(plain.to_plain(found))
    assert back["primitives"] == found["primitives"]
    assert back["collectives"] == found["collectives"]
    assert back["shard_maps"][0]["mesh"] == {"data": N}


# --- layout -------------------------------------------------------------------------------
def test_layout_of_a_row_sharded_array(mesh):
    """Is a (16, 3) array split over 8 devices seen as eight (2, 3) shards?"""
    x = jax.device_put(jnp.ones((16, 3)), NamedSharding(mesh, P("data")))
    assert probes.layout(x) == {"on_devices": N, "shard_shapes": [[2, 3]] * N}


def test_layout_of_a_replicated_array(mesh):
    """Is a replicated array a full copy on each of the 8 devices?"""
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P()))
    assert probes.layout(x) == {"on_devices": N, "shard_shapes": [[16]] * N}


def test_layout_of_an_array_on_one_device():
    """Does an array on a single device have one shard of its full shape?"""
    x = jax.device_put(jnp.arange(16.0), jax.devices()[3])
    assert probes.layout(x) == {"on_devices": 1, "shard_shapes": [[16]]}


def test_layout_of_a_pmap_result_is_one_row_per_device():
    """Does a pmap result live as one row on each device?"""
    out = jax.pmap(lambda row: row + 1)(jnp.ones((N, 3)))
    assert probes.layout(out) == {"on_devices": N, "shard_shapes": [[1, 3]] * N}


def test_layout_of_something_that_is_not_a_jax_array():
    """Is a numpy array or a list said to be on no device?"""
    assert probes.layout(np.ones(4)) == {"on_devices": 0, "shard_shapes": []}
    assert probes.layout([1, 2]) == {"on_devices": 0, "shard_shapes": []}

