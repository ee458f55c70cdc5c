"""Reading compiled HLO (grader/lessons/hlo.py): collectives, their operands, device groups in
every printed form, and the bytes each sends under the ring model."""

from __future__ import annotations

import pytest

from grader.lessons.hlo import bytes_sent, collectives_in_hlo, parse_replica_groups
from grader.lessons.inspector import RING_NOTE

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
    assert gather.sent == 7 * 128
    assert gather.result == (("f32", (32, 8)),)
    assert gather.groups == (tuple(range(8)),)
    assert (reduce.op, reduce.operands, reduce.groups) == ("all-reduce",
                                                           (("f32", (32, 8)),), ())
    assert reduce.sent is None  # "all devices", and the text does not say how many
    assert collectives_in_hlo(ASYNC, n_devices=8)[1].sent == 2 * 7 / 8 * 32 * 8 * 4


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
    assert a2a.sent == 32 / 2  # groups of 2: half of the operand leaves the device
    assert a2a.groups == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert (permute.op, permute.pairs, permute.groups) == (
        "collective-permute", ((0, 0), (1, 4), (4, 1)), None)
    assert permute.sent == 32  # device 1 (and 4) sends its block; device 0 keeps its own


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


@pytest.mark.parametrize(("op", "operand", "groups", "sent"), [
    ("all-reduce", 800, ((0, 1, 2, 3),), 2 * 3 / 4 * 800),
    ("all-gather", 800, ((0, 1, 2, 3),), 3 * 800),
    ("reduce-scatter", 800, ((0, 1, 2, 3),), 3 / 4 * 800),
    ("all-to-all", 800, ((0, 1, 2, 3),), 3 / 4 * 800),
    ("all-reduce", 800, ((0,), (1,)), 0),  # groups of one device send nothing
    ("all-reduce", 800, None, None),  # a group form the inspector cannot read
])
def test_bytes_sent_follow_the_ring_model(op, operand, groups, sent):
    """Does each collective send what a ring over its group sends, per device?"""
    assert bytes_sent(op, operand, groups) == sent
    assert op in RING_NOTE


def test_a_permute_sends_its_block_once_and_nothing_to_itself():
    """Does a collective-permute cost its operand for a device that sends, and nothing when
    every pair sends a device's block to itself?"""
    assert bytes_sent("collective-permute", 64, None, ((0, 1), (1, 2), (2, 0))) == 64
    assert bytes_sent("collective-permute", 64, None, ((0, 0), (1, 1))) == 0


def test_a_lesson_reads_the_collectives_of_a_jitted_function():
    """Do the lessons' three readers agree with what a sharded sum and an unsharded one
    compile to: an all-reduce over every device, and nothing?"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from grader.lessons.hlo import collective_names, collectives, compiled_text

    n = jax.device_count()
    mesh = jax.make_mesh((n,), ("data",))
    x = jax.device_put(jnp.arange(2.0 * n), NamedSharding(mesh, P("data")))
    assert "all-reduce" in compiled_text(jnp.sum, x)
    (found,) = collectives(jnp.sum, x)
    assert (found.op, found.groups in ((), (tuple(range(n)),))) == ("all-reduce", True)
    assert collective_names(jnp.sum, x) == ["all-reduce"]
    assert collective_names(jnp.sum, jnp.arange(4.0)) == []


def test_a_collective_knows_how_it_combines_and_the_line_it_was_read_from():
    """Does each all-reduce of a pmin and a pmax name the operation it applies (the root of
    its to_apply computation), and keep its instruction line without the metadata?"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh
    from jax.sharding import PartitionSpec as P

    from grader.lessons.hlo import collectives

    mesh = Mesh(jax.devices(), ("data",))  # Auto axes: shard_map splits its argument itself

    def low_high(block):
        return jax.lax.pmin(block.min(), "data"), jax.lax.pmax(block.max(), "data")

    fn = jax.shard_map(low_high, mesh=mesh, in_specs=P("data"), out_specs=(P(), P()))
    found = collectives(fn, jnp.arange(4.0 * jax.device_count()))
    assert sorted(c.reduction for c in found) == ["maximum", "minimum"]
    for c in found:
        assert c.line.startswith(f"%{c.name} = ") and " all-reduce(" in c.line
        assert "metadata" not in c.line
    gather, _ = collectives_in_hlo(ASYNC)
    assert gather.reduction is None and gather.line.startswith("%all-gather-start = (f32[4,8]")
