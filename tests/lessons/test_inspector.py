"""The compiled-code inspector: collectives, their operands and bytes, device groups, shardings.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import probes
from grader.lessons.inspector import (
    as_partition_spec,
    inspect_compiled,
)
from grader.palette import device_colour

N = 8


@pytest.fixture(scope="module")
def line():
    return jax.make_mesh((N,), ("d",), axis_types=(AxisType.Auto,))


@pytest.fixture(scope="module")
def grid():
    return jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)


def test_a_psum_in_shard_map_is_one_all_reduce_of_the_block(line):
    """Is a psum of 2-element blocks over 8 devices one all-reduce of f32[2], 8 bytes, among all
    8 devices?"""
    def total(x):
        return jax.shard_map(lambda b: jax.lax.psum(b, "d"), mesh=line, in_specs=P("d"),
                             out_specs=P())(x)

    report = inspect_compiled(total, jnp.arange(2.0 * N))
    (c,) = report.collectives
    assert (c.op, c.operands, c.bytes) == ("all-reduce", (("f32", (2,)),), 8)
    assert c.sent == 2 * (N - 1) / N * 8  # a ring all-reduce: 14 bytes
    assert c.groups == (tuple(range(N)),)
    assert report.counts == probes.hlo_collectives(total, jnp.arange(2.0 * N)).value
    assert report.outputs[0].sharding.startswith("P() on mesh {'d': 8}")


def test_a_psum_over_one_axis_of_a_grid_groups_the_devices_along_it(grid):
    """Does a psum over 'x' on a 4 x 2 mesh group the devices of each mesh column?"""
    def column_sum(x):
        return jax.shard_map(lambda b: jax.lax.psum(b, "x"), mesh=grid, in_specs=P("x", "y"),
                             out_specs=P(None, "y"))(x)

    x = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(grid, P("x", "y")))
    (c,) = inspect_compiled(column_sum, x).collectives
    assert c.groups == ((0, 2, 4, 6), (1, 3, 5, 7))
    assert c.operands == (("f32", (2, 4)),) and c.bytes == 32
    assert c.sent == 2 * 3 / 4 * 32  # a ring over the 4 devices of a group


def test_gathering_a_row_split_array_is_an_all_gather_of_each_block(line):
    """Does replicating a row-split (16, 4) array compile to one all-gather whose operand is
    one device's (2, 4) block, 32 bytes?"""
    x = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(line, P("d")))
    report = inspect_compiled(
        lambda v: jax.lax.with_sharding_constraint(v, NamedSharding(line, P())), x)
    assert [(c.op, c.operands, c.bytes, c.sent) for c in report.collectives] == [
        ("all-gather", (("f32", (2, 4)),), 32, (N - 1) * 32)
    ]
    assert report.collectives[0].result == (("f32", (16, 4)),)
    assert report.inputs[0].block == (2, 4) and report.outputs[0].block == (16, 4)


def test_rows_to_columns_is_an_all_to_all(line):
    """Does moving a row-split array to a column split compile to an all-to-all?"""
    x = jax.device_put(np.ones((16, 16), np.float32), NamedSharding(line, P("d")))
    report = inspect_compiled(
        lambda v: jax.lax.with_sharding_constraint(v, NamedSharding(line, P(None, "d"))), x)
    assert [c.op for c in report.collectives] == ["all-to-all"]
    assert report.total_bytes == 2 * 16 * 4  # its operands: the whole (2, 16) block, in pieces
    assert report.total_sent == (N - 1) / N * 2 * 16 * 4  # all but the piece it keeps


def test_an_elementwise_function_has_no_collectives_and_keeps_its_sharding(line):
    """Does an elementwise op report no collectives, and the same sharding in and out?"""
    x = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(line, P("d")))

    def wave(v):
        return jnp.sin(v) * 2

    report = inspect_compiled(wave, x)
    assert report.collectives == [] and report.total_bytes == 0
    assert [(i.path, i.sharding) for i in report.inputs] == [
        ("v", "P('d') on mesh {'d': 8}")
    ]
    assert report.outputs[0].sharding == "P('d') on mesh {'d': 8}"
    assert "no collectives" in str(report) and "<table>" not in report._repr_html_().split(
        "Inputs")[0]


def test_an_already_jitted_function_keeps_its_shardings(line):
    """Is a jitted function with in/out shardings compiled as it is, pytree inputs named?"""
    rows, replicated = NamedSharding(line, P("d")), NamedSharding(line, P())
    step = jax.jit(lambda params, x: x @ params["w"], in_shardings=({"w": replicated}, rows),
                   out_shardings=replicated)
    report = inspect_compiled(step, {"w": np.ones((4, 2), np.float32)},
                              np.ones((16, 4), np.float32))
    assert [(i.path, i.sharding.split(" on ")[0]) for i in report.inputs] == [
        ("params['w']", "P()"), ("x", "P('d')")
    ]
    assert [c.op for c in report.collectives] == ["all-gather"]


def test_the_report_renders_as_a_table_with_device_colours(grid):
    """Does the HTML have one row per collective, its device ids in their palette colours,
    and the text the same numbers?"""
    x = jax.device_put(np.ones((8, 8), np.float32), NamedSharding(grid, P("x", "y")))
    report = inspect_compiled(
        lambda v: jax.lax.with_sharding_constraint(v, NamedSharding(grid, P())), x)
    page = report._repr_html_()
    assert page.count("<code>all-gather</code>") == len(report.collectives) == 2
    assert f"background:{device_colour(6)}" in page
    text = str(report)
    assert ("2 collectives (2 all-gather); per device 96 bytes of operands, 224 bytes sent "
            "(traffic model)") in text
    assert "{0,1} {2,3} {4,5} {6,7}" in text and "{0,2,4,6} {1,3,5,7}" in text
    assert "bytes sent per device*" in page and "2(n-1)/n × operand" in page
    assert [c.sent for c in report.collectives] == [1 * 32, 3 * 64]  # groups of 2, then of 4
    assert "* bytes sent: what each device sends" in text


def test_a_reduce_scatter_of_a_replicated_array_sends_all_but_its_slice(line):
    """Is a tiled psum_scatter of a replicated f32[16] one reduce-scatter of 64 bytes, of which
    each device sends 7/8?"""
    def scatter(x):
        return jax.shard_map(lambda b: jax.lax.psum_scatter(b, "d", tiled=True), mesh=line,
                             in_specs=P(), out_specs=P("d"))(x)

    (c,) = inspect_compiled(scatter, jnp.arange(16.0)).collectives
    assert (c.op, c.bytes, c.sent) == ("reduce-scatter", 64, 7 / 8 * 64)


def test_a_shift_round_the_ring_sends_each_block_once(line):
    """Does a ppermute around the ring send one f32[2] block per device?"""
    def shift(x):
        return jax.shard_map(
            lambda b: jax.lax.ppermute(b, "d", [(k, (k + 1) % N) for k in range(N)]),
            mesh=line, in_specs=P("d"), out_specs=P("d"))(x)

    report = inspect_compiled(shift, jnp.arange(2.0 * N))
    assert [(c.op, c.bytes, c.sent) for c in report.collectives] == [
        ("collective-permute", 8, 8)]


@pytest.mark.parametrize(("mesh_name", "spec", "shape"), [
    ("line", P("d"), (32,)),
    ("grid", P("x", "y"), (8, 6)),
    ("grid", P(("y", "x")), (16,)),
    ("grid", P(None, "x"), (2, 8)),
    ("grid", P(), (4, 2)),
])
def test_a_jitted_shard_map_names_its_inputs_by_position_and_spec_on_the_mesh(
        mesh_name, spec, shape, line, grid):
    """For jax.jit(jax.shard_map(body, ...)) called on plain arrays, is each input shown as the
    in_spec on the shard_map's mesh (not as a raw GSPMDSharding) and named by its position,
    not by the body's parameter, which names a block?"""
    mesh = {"line": line, "grid": grid}[mesh_name]

    def body(block):
        return block * 2

    fn = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=spec, out_specs=spec))
    report = inspect_compiled(fn, jnp.zeros(shape))
    axes = ", ".join(f"{name!r}: {size}" for name, size in mesh.shape.items())
    want = f"{'P(' + ', '.join(map(repr, spec)) + ')'} on mesh {{{axes}}}"
    assert [(i.path, i.sharding) for i in report.inputs] == [("args[0]", want)]
    assert report.outputs[0].sharding == want
    assert "GSPMDSharding" not in str(report) and "P('d',)" not in str(report)


def test_an_outer_function_names_its_inputs(line):
    """Is the input of a function that calls a shard_map named by that function's parameter,
    jitted or not?"""
    def count_above(block):
        return jax.lax.psum(jnp.sum(block > 3), "d")

    def count(values):
        return jax.shard_map(count_above, mesh=line, in_specs=P("d"), out_specs=P())(values)

    for f in (count, jax.jit(count)):
        (info,) = inspect_compiled(f, jnp.arange(32.0)).inputs
        assert (info.path, info.sharding) == ("values", "P('d') on mesh {'d': 8}")
    assert inspect_compiled(lambda v: v + 1, jnp.ones(4)).function == "a lambda"


def test_a_sharding_on_a_shuffled_mesh_is_read_back_as_its_spec():
    """Is the HLO sharding JAX compiles for a spec on a mesh of shuffled devices turned back
    into that spec on that mesh, and refused on a mesh of other devices?"""
    devices = np.array(jax.devices())[[3, 6, 0, 5, 1, 7, 2, 4]].reshape(4, 2)
    mesh = jax.sharding.Mesh(devices, ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    fn = jax.jit(jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("y", "x"),
                               out_specs=P("y", "x")))
    compiled = fn.lower(jnp.zeros((4, 8))).compile()
    ((sharding,), _) = compiled.input_shardings
    assert not isinstance(sharding, NamedSharding)
    assert as_partition_spec(sharding, (4, 8), mesh) == P("y", "x")
    other = jax.make_mesh((4,), ("d",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])
    assert as_partition_spec(sharding, (4, 8), other) is None


def test_the_bytes_of_a_matmul_are_those_of_its_operands_and_the_counts_match_the_hlo(line):
    """For the three placements of lesson 2's matmul, do the inspector's counts agree with
    grader.lessons.hlo.collective_names, and its bytes with the operand shapes: the all-reduce
    of the split contraction carries the whole (M, N) output, more than the inputs' share per
    device, and the all-gather one column block of b, less?"""
    from grader.lessons.hlo import collective_names

    k = 2 * N
    a = np.arange(4 * N * k, dtype=np.float32).reshape(4 * N, k)
    b = np.ones((k, 3 * N), np.float32)
    rows, cols = NamedSharding(line, P("d", None)), NamedSharding(line, P(None, "d"))
    placements = {"replicated b": (rows, NamedSharding(line, P())), "split k": (cols, rows),
                  "b by columns": (rows, cols)}
    reports = {}
    for label, (sharding_a, sharding_b) in placements.items():
        args = jax.device_put(a, sharding_a), jax.device_put(b, sharding_b)
        reports[label] = inspect_compiled(jnp.dot, *args)
        found = sorted(op for op, count in reports[label].counts.items() if count)
        assert found == collective_names(jnp.dot, *args)
    assert reports["replicated b"].collectives == []
    (reduce,) = reports["split k"].collectives
    (gather,) = reports["b by columns"].collectives
    input_bytes = (a.nbytes + b.nbytes) // N
    assert reduce.bytes == a.shape[0] * b.shape[1] * a.itemsize > input_bytes
    assert gather.bytes == b.nbytes // N < reduce.bytes
    assert reports["split k"].total_bytes == reduce.bytes
