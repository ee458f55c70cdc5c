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

from grader import probes
from grader.inspector import collectives_in_hlo, inspect_compiled, parse_replica_groups
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
    assert c.groups == (tuple(range(N)),)
    assert report.counts == probes.hlo_collectives(total, jnp.arange(2.0 * N))
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


def test_gathering_a_row_split_array_is_an_all_gather_of_each_block(line):
    """Does replicating a row-split (16, 4) array compile to one all-gather whose operand is
    one device's (2, 4) block, 32 bytes?"""
    x = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(line, P("d")))
    report = inspect_compiled(
        lambda v: jax.lax.with_sharding_constraint(v, NamedSharding(line, P())), x)
    assert [(c.op, c.operands, c.bytes) for c in report.collectives] == [
        ("all-gather", (("f32", (2, 4)),), 32)
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


def test_an_elementwise_function_has_no_collectives_and_keeps_its_sharding(line):
    """Does an elementwise op report no collectives, and the same sharding in and out?"""
    x = jax.device_put(np.ones((16, 4), np.float32), NamedSharding(line, P("d")))

    def wave(v):
        return jnp.sin(v) * 2

    report = inspect_compiled(wave, x)
    assert report.collectives == [] and report.total_bytes == 0
    assert [(i.path, i.sharding) for i in report.inputs] == [
        ("v", "P('d',) on mesh {'d': 8}")
    ]
    assert report.outputs[0].sharding == "P('d',) on mesh {'d': 8}"
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
        ("params['w']", "P()"), ("x", "P('d',)")
    ]
    assert [c.op for c in report.collectives] == ["all-gather"]


ASYNC = """
HloModule m
ENTRY %main (p: f32[4,8]) -> f32[32,8] {
  %p = f32[4,8]{1,0} parameter(0)
  %all-gather-start = (f32[4,8]{1,0}, f32[32,8]{1,0}) all-gather-start(%p), channel_id=1, replica_groups=[1,8]<=[8], dimensions={0}
  %all-gather-done = f32[32,8]{1,0} all-gather-done(%all-gather-start)
  %all-reduce-start = f32[32,8]{1,0} all-reduce-start(%all-gather-done), replica_groups={}, to_apply=%add
  ROOT %all-reduce-done = f32[32,8]{1,0} all-reduce-done(%all-reduce-start)
}
"""  # noqa: E501 (HLO lines as XLA prints them)


def test_an_async_pair_is_one_collective_with_the_operands_of_its_start():
    """Is each -start/-done pair counted once, with its operand from -start and its result
    from -done?"""
    gather, reduce = collectives_in_hlo(ASYNC)
    assert (gather.op, gather.asynchronous, gather.bytes) == ("all-gather", True, 128)
    assert gather.result == (("f32", (32, 8)),)
    assert gather.groups == (tuple(range(8)),)
    assert (reduce.op, reduce.operands, reduce.groups) == ("all-reduce",
                                                           (("f32", (32, 8)),), ())


RESHARD = """
  %p.1 = f32[4,2]{1,0} parameter(0)
  %s.0 = f32[2,1,2]{2,1,0} fusion(%p.1), kind=kLoop, calls=%c0
  %s.1 = f32[2,1,2]{2,1,0} fusion(%p.1), kind=kLoop, calls=%c1
  %all-to-all.1 = (f32[2,1,2]{2,1,0}, /*index=1*/f32[2,1,2]{2,1,0}) all-to-all(%s.0, /*index=1*/%s.1), channel_id=1, replica_groups=mesh['axis_0'=2,'axis_1'=4], device_ids=([2,2,2]T(0,2,1)) {'axis_1':(2)2}, metadata={op_name="all-reduce(x)"}
  ROOT %collective-permute = f32[4,2]{1,0} collective-permute(%p.1), channel_id=2, source_target_pairs={{0,0},{1,4},{4,1}}
"""  # noqa: E501 (HLO lines as XLA prints them)


def test_operands_and_groups_are_read_from_a_full_instruction_line():
    """Are operand types looked up by name (past /*index*/ comments), the mesh form with
    device_ids kept whole, a name scope that mentions a collective ignored, and the pairs of
    a collective-permute read?"""
    a2a, permute = collectives_in_hlo(RESHARD)
    assert a2a.operands == (("f32", (2, 1, 2)),) * 2 and a2a.bytes == 32
    assert a2a.groups == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert (permute.op, permute.pairs, permute.groups) == (
        "collective-permute", ((0, 0), (1, 4), (4, 1)), None)


@pytest.mark.parametrize(
    ("text", "groups"),
    [
        ("{{0,1},{2,3}}", ((0, 1), (2, 3))),
        ("[2,4]<=[8]", ((0, 1, 2, 3), (4, 5, 6, 7))),
        ("[4,2]<=[2,4]T(1,0)", ((0, 4), (1, 5), (2, 6), (3, 7))),
        ("mesh['axis_0'=4,'axis_1'=2] {'axis_0'}", ((0, 2, 4, 6), (1, 3, 5, 7))),
        ("mesh['axis_0'=1,'axis_1'=8] {'axis_1'}", (tuple(range(8)),)),
        ("mesh['a'=8] {'a':(2)2}", ((0, 2), (1, 3), (4, 6), (5, 7))),
        ("mesh['axis_0'=2,'axis_1'=4], device_ids=([2,2,2]T(0,2,1)) {'axis_1':(2)2}",
         ((0, 2), (1, 3), (4, 6), (5, 7))),
        ("{}", ()),
        ("something new", None),
    ],
)
def test_every_printed_form_of_device_groups_is_expanded(text, groups):
    """Are XLA's list, iota and mesh forms of replica groups expanded to device ids?"""
    assert parse_replica_groups(text) == groups


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
    assert "2 collectives (2 all-gather), 96 bytes per device" in text
    assert "{0,1} {2,3} {4,5} {6,7}" in text and "{0,2,4,6} {1,3,5,7}" in text
