"""The one reader of program text (grader/framework/hlo.py): collectives, their operands,
device groups in every printed form, the bytes each sends under the traffic model, and author
text that never reads as structure."""

from __future__ import annotations

import pytest

from grader.framework.hlo import (
    COLLECTIVES,
    bytes_sent,
    collectives_in_hlo,
    count_collectives,
    kept_on_one_device,
    largest_array,
    matmuls,
    mesh_axes,
    operations,
    parse_replica_groups,
    received,
    sent_per_axis,
    turns,
    waiting_for_transfers,
)
from grader.lessons.inspector import TRAFFIC_NOTE

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
def test_bytes_sent_follow_the_traffic_model(op, operand, groups, sent):
    """Does each collective send, per device, what the traffic model says (ring, direct)?"""
    assert bytes_sent(op, operand, groups) == sent
    assert op in TRAFFIC_NOTE


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


def only_counts(**nonzero) -> dict[str, int]:
    counts = dict.fromkeys(COLLECTIVES, 0)
    counts.update({k.replace("_", "-"): v for k, v in nonzero.items()})
    return counts


# --- counting collectives ----------------------------------------------------
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


def test_async_start_done_pairs_are_counted_once():
    """Is each -start/-done pair one collective, and an operand named all-reduce.3 none?"""
    assert count_collectives(ASYNC_HLO) == only_counts(
        all_reduce=2, collective_permute=1, all_gather=1
    )


def test_reduce_scatter_and_all_to_all_are_recognised():
    """Are reduce-scatter and all-to-all counted, and not confused with each other?"""
    text = (
        "ENTRY %m (p: f32[8]) -> f32[1] {\n"
        "  %p = f32[8]{0} parameter(0)\n"
        "  %rs = f32[1]{0} reduce-scatter(f32[8]{0} %p), dimensions={0}, to_apply=%add\n"
        "  ROOT %a2a = f32[1]{0} all-to-all(f32[1]{0} %rs), dimensions={0}\n"
        "}\n"
    )
    assert count_collectives(text) == only_counts(reduce_scatter=1, all_to_all=1)


# --- author text: names a program's author chooses never read as structure -----------------
AUTHORED = """\
HloModule jit_f, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, num_partitions=8

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(f32[] %a, f32[] %b)
}

%max (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %a, f32[] %b)
}

%noisy (c: f32[8]) -> f32[8] {
  %c = f32[8]{0} parameter(0)
  ROOT %r = f32[8]{0} all-reduce(f32[8]{0} %c), replica_groups={}, to_apply=%add
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %call = f32[8]{0} custom-call(f32[8]{0} %p), custom_call_target="x), to_apply=%max, \
calls=%noisy, /*", backend_config="all-gather(f32[8]{0} %p), num_partitions=1"
  ROOT %s = f32[8]{0} all-reduce(f32[8]{0} %call), metadata={op_name="a, to_apply=%max, \
replica_groups={{0}}" source_file="/*x*/"}, frontend_attributes={x="all-to-all(%p), \
calls=%noisy"}, replica_groups=[1,8]<=[8], to_apply=%add
}
"""


def test_names_and_strings_an_author_chooses_are_never_read_as_structure():
    """Do a custom call's strings, a name scope and frontend attributes that spell
    collectives, computations to call, device groups and a partition count all stay text:
    one all-reduce over 8 devices that adds, nothing received through a computation that is
    never called, and the line shown without the metadata?"""
    assert count_collectives(AUTHORED) == only_counts(all_reduce=2)  # one in %noisy
    [*_, last] = collectives_in_hlo(AUTHORED)
    assert (last.reduction, last.groups, last.sent) == ("add", (tuple(range(8)),),
                                                         2 * 7 / 8 * 32)
    assert "metadata" not in last.line and "op_name" not in last.line
    assert last.line.endswith("all-reduce(f32[8]{0} %call)")
    assert received(AUTHORED) == ({"all-reduce": 32}, set())


def test_the_cpu_backend_keeps_a_collective_over_one_device():
    """Does the measure the lessons guard their one-device claims with read the CPU backend
    right: a psum over a group of one device is still compiled there (a GPU's is not)?"""
    import jax

    assert jax.devices()[0].platform == "cpu"
    assert kept_on_one_device()


LOOPED = """
HloModule m, num_partitions=8
%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]{0}) parameter(0)
  %x = f32[4]{0} get-tuple-element(%p), index=1
  %i = s32[] get-tuple-element(%p), index=0
  %gathered = f32[8]{0} all-gather(%x), channel_id=1, replica_groups=[4,2]<=[8], dimensions={0}
  %half = f32[4]{0} slice(%gathered), slice={[0:4]}
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %half)
}
%cond (q: (s32[], f32[4])) -> pred[] {
  %q = (s32[], f32[4]{0}) parameter(0)
  ROOT %c = pred[] constant(true)
}
ENTRY %main (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %summed = f32[4]{0} all-reduce(%a), channel_id=2, replica_groups=[2,4]<=[4,2]T(1,0), to_apply=%add
  %zero = s32[] constant(0)
  %start = (s32[], f32[4]{0}) tuple(%zero, %summed)
  %loop = (s32[], f32[4]{0}) while(%start), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"3"}}
  ROOT %out = f32[4]{0} get-tuple-element(%loop), index=1
}
"""  # noqa: E501 (HLO lines as XLA prints them)


def test_a_loop_body_runs_once_per_turn_and_its_collectives_count_so():
    """On a 4 x 2 mesh, is the all-gather of a 3-turn loop's body, in pairs of neighbouring
    ids, read as over the second axis and counted three times, and the entry's all-reduce, in
    groups of ids 2 apart, as over the first axis and counted once?"""
    assert turns(LOOPED)["main"] == 1 and turns(LOOPED)["body"] == 3
    sizes = {"data": 4, "model": 2}
    gather, reduce = sorted(collectives_in_hlo(LOOPED), key=lambda c: c.op)
    assert mesh_axes(gather, sizes) == ("model",)
    assert mesh_axes(reduce, sizes) == ("data",)
    assert sent_per_axis(LOOPED, sizes) == {
        ("model",): {"all-gather": 3 * 1 * 16},
        ("data",): {"all-reduce": 2 * 3 / 4 * 16},
    }
    # Another order of the devices on the mesh: the same groups now run along other axes.
    assert mesh_axes(gather, sizes, [0, 2, 4, 6, 1, 3, 5, 7]) is None


def test_a_compiled_step_is_split_by_the_mesh_axes_it_communicates_over():
    """Does a step on a data x model mesh send its batch reduction over 'data' and its
    contraction's reduction over 'model', read from the compiled program?"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    if jax.device_count() < 4:
        pytest.skip("needs a 2 x 2 mesh")
    mesh = jax.make_mesh((2, 2), ("data", "model"), devices=jax.devices()[:4])
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("data", "model")))
    w = jax.device_put(jnp.ones((4, 2)), NamedSharding(mesh, P("model", None)))

    def f(x, w):  # the contraction over 'model', then the sum over the batch on 'data'
        return jnp.matmul(x, w, out_sharding=NamedSharding(mesh, P("data", None))).sum()

    text = jax.jit(f).lower(x, w).compile().as_text()
    sent = sent_per_axis(text, dict(mesh.shape), [d.id for d in mesh.devices.flat])
    assert ("model",) in sent and sent.keys() <= {("data",), ("model",), ("data", "model")}


# A ring's turn twice over: a loop whose product reads the block the turn received (through a
# fusion that holds the dot), and one whose product reads the block it began with while that
# block is sent on, as an async pair; and a cuBLAS product, which prints no dot.
RING_TURNS = """
HloModule m, num_partitions=4
%product (a: f32[8,4], b: f32[8,4]) -> f32[8,8] {
  %a = f32[8,4]{1,0} parameter(0)
  %b = f32[8,4]{1,0} parameter(1)
  ROOT %dot.1 = f32[8,8]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
%waits (p: (f32[8,4], f32[8,8])) -> (f32[8,4], f32[8,8]) {
  %p = (f32[8,4]{1,0}, f32[8,8]{1,0}) parameter(0)
  %k = f32[8,4]{1,0} get-tuple-element(%p), index=0
  %received = f32[8,4]{1,0} collective-permute(%k), channel_id=1, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %moved = f32[8,4]{1,0} copy(%received)
  %scores = f32[8,8]{1,0} fusion(%k, %moved), kind=kCustom, calls=%product
  ROOT %t = (f32[8,4]{1,0}, f32[8,8]{1,0}) tuple(%received, %scores)
}
%overlaps (p: (f32[8,4], f32[8,8])) -> (f32[8,4], f32[8,8]) {
  %p = (f32[8,4]{1,0}, f32[8,8]{1,0}) parameter(0)
  %k = f32[8,4]{1,0} get-tuple-element(%p), index=0
  %send = (f32[8,4]{1,0}, f32[8,4]{1,0}) collective-permute-start(%k), channel_id=2, source_target_pairs={{0,1},{1,2},{2,3},{3,0}}
  %scores = f32[8,8]{1,0} custom-call(%k, %k), custom_call_target="__cublas$gemm"
  %received = f32[8,4]{1,0} collective-permute-done(%send)
  ROOT %t = (f32[8,4]{1,0}, f32[8,8]{1,0}) tuple(%received, %scores)
}
%cond (q: (f32[8,4], f32[8,8])) -> pred[] {
  %q = (f32[8,4]{1,0}, f32[8,8]{1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}
ENTRY %main (k: f32[8,4], s: f32[8,8]) -> (f32[8,4], f32[8,8]) {
  %k = f32[8,4]{1,0} parameter(0)
  %s = f32[8,8]{1,0} parameter(1)
  %start = (f32[8,4]{1,0}, f32[8,8]{1,0}) tuple(%k, %s)
  %first = (f32[8,4]{1,0}, f32[8,8]{1,0}) while(%start), condition=%cond, body=%waits
  ROOT %second = (f32[8,4]{1,0}, f32[8,8]{1,0}) while(%first), condition=%cond, body=%overlaps
}
"""  # noqa: E501 (HLO lines as XLA prints them)


def test_a_product_that_reads_its_turns_transfer_waits_for_it():
    """Is the product reading the block received in its own turn (through a copy, inside a
    fusion) found waiting, and the one reading the block the turn began with, beside an async
    send, not?"""
    assert waiting_for_transfers(RING_TURNS) == [["scores"], []]
    assert waiting_for_transfers(LOOPED) == [[]]  # a loop with a transfer and no product


# Transfers and products one call away: a transfer wrapped in an async computation; products
# in an inner loop's body and in a conditional's branch, each reading what the turn received.
CALLED = """
HloModule m, num_partitions=2
%wrapped (w: f32[4,4]) -> f32[4,4] {
  %w = f32[4,4]{1,0} parameter(0)
  ROOT %permuted = f32[4,4]{1,0} collective-permute(%w), channel_id=1, source_target_pairs={{0,1},{1,0}}
}
%inner (a: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  %a = (s32[], f32[4,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%a), index=0
  %m = f32[4,4]{1,0} get-tuple-element(%a), index=1
  %squared = f32[4,4]{1,0} dot(%m, %m), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (s32[], f32[4,4]{1,0}) tuple(%i, %squared)
}
%branch (b: f32[4,4]) -> f32[4,4] {
  %b = f32[4,4]{1,0} parameter(0)
  ROOT %product = f32[4,4]{1,0} dot(%b, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
%other (c: f32[4,4]) -> f32[4,4] {
  ROOT %c = f32[4,4]{1,0} parameter(0)
}
%cond (q: (s32[], f32[4,4])) -> pred[] {
  %q = (s32[], f32[4,4]{1,0}) parameter(0)
  ROOT %c = pred[] constant(true)
}
%outer (p: (s32[], f32[4,4])) -> (s32[], f32[4,4]) {
  %p = (s32[], f32[4,4]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[4,4]{1,0} get-tuple-element(%p), index=1
  %start = ((f32[4,4]{1,0}), f32[4,4]{1,0}) async-start(%x), calls=%wrapped
  %received = f32[4,4]{1,0} async-done(%start)
  %pair = (s32[], f32[4,4]{1,0}) tuple(%i, %received)
  %looped = (s32[], f32[4,4]{1,0}) while(%pair), condition=%cond, body=%inner
  %flag = pred[] constant(true)
  %chosen = f32[4,4]{1,0} conditional(%flag, %received, %x), true_computation=%branch, false_computation=%other
  %alone = f32[4,4]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %t = (s32[], f32[4,4]{1,0}) tuple(%i, %chosen)
}
ENTRY %main (e: f32[4,4]) -> (s32[], f32[4,4]) {
  %e = f32[4,4]{1,0} parameter(0)
  %zero = s32[] constant(0)
  %go = (s32[], f32[4,4]{1,0}) tuple(%zero, %e)
  ROOT %run = (s32[], f32[4,4]{1,0}) while(%go), condition=%cond, body=%outer
}
"""  # noqa: E501 (HLO lines as XLA prints them)


def test_a_transfer_or_a_product_one_call_away_is_still_found():
    """Is a transfer wrapped in an async computation a transfer, and are an inner loop and a
    conditional whose called computations hold a product, both reading what the turn received,
    found waiting, the product reading what the turn began with not, each loop listed in the
    order printed (the inner one, which holds no transfer, first)?"""
    assert waiting_for_transfers(CALLED) == [[], ["looped", "chosen"]]


def test_matrix_products_are_counted_as_a_dot_or_a_librarys_call():
    """Are the dot inside a fused computation and cuBLAS' custom call both products, and
    nothing else? And is the largest array the (8, 8) scores?"""
    assert matmuls(RING_TURNS) == 2
    assert matmuls(LOOPED) == 0
    assert largest_array(RING_TURNS) == 64
    assert largest_array(LOOPED) == 8


def test_a_lowered_programs_operations_leave_its_annotations_out():
    """Do two lowerings of one product, over arrays placed differently, have the same
    operations (names and whole-array types), and does a program with another shape not?"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    mesh = jax.make_mesh((2,), ("data",), devices=jax.devices()[:2])
    a, b = jnp.ones((4, 6)), jnp.ones((6, 2))
    lowered = {spec: jax.jit(jnp.dot).lower(jax.device_put(a, NamedSharding(mesh, spec)), b)
               .as_text() for spec in (PartitionSpec("data"), PartitionSpec(None, "data"))}
    first, second = (operations(text) for text in lowered.values())
    assert first == second == [("stablehlo.dot_general",
                                "(tensor<4x6xf32>, tensor<6x2xf32>) -> tensor<4x2xf32>")]
    assert operations(jax.jit(jnp.dot).lower(a[:2], b).as_text())[0][1].startswith(
        "(tensor<2x6xf32>")
    # An elementwise operation's one type, and a function called twice: two calls, listed.
    twice = jax.jit(lambda v: jax.jit(jnp.sin)(jax.jit(jnp.sin)(v)) + 1)
    listed = operations(twice.lower(jnp.ones(4)).as_text())
    assert [name for name, _ in listed].count("func.call") == 2
    assert ("stablehlo.sine", "tensor<4xf32>") in listed
