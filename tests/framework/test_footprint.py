"""The footprint of a compiled program (framework/footprint.py): the bytes one device holds and
receives, read from XLA's compiled HLO text, and the bounds the verifier holds programs to."""

from __future__ import annotations

import pytest

from grader.framework import footprint, hlo

# A module as XLA prints one compiled for 8 devices: an all-gather in the entry, a ring of
# collective-permutes in a loop of 7 turns, a conditional whose branches receive 4 and 400
# bytes, and a loop whose turns the compiler could not count. Author-chosen text (a name
# scope) sits in `metadata` and poses as the compiler's count of a loop's turns.
MODULE = "\n".join([
    "HloModule jit_f, entry_computation_layout={(f32[64]{0})->f32[]}",
    "",
    "%add (a: f32[], b: f32[]) -> f32[] {",
    "  %a = f32[] parameter(0)",
    "  %b = f32[] parameter(1)",
    "  ROOT %sum = f32[] add(%a, %b)",
    "}",
    "",
    "%ring_body (p: (s32[], f32[64])) -> (s32[], f32[64]) {",
    "  %p = (s32[], f32[64]{0}) parameter(0)",
    "  %block = f32[64]{0} get-tuple-element(%p), index=1",
    '  %moved = f32[64]{0} collective-permute(%block), channel_id=1, '
    'source_target_pairs={{0,1},{1,0}}, metadata={op_name="x" source_file="f.py"}',
    "  ROOT %t = (s32[], f32[64]{0}) tuple(%i, %moved)",
    "}",
    "",
    "%ring_cond (q: (s32[], f32[64])) -> pred[] {",
    "  %q = (s32[], f32[64]{0}) parameter(0)",
    "  ROOT %lt = pred[] compare(%i, %seven), direction=LT",
    "}",
    "",
    "%cheap (c: f32[]) -> f32[] {",
    "  %c = f32[] parameter(0)",
    '  ROOT %r = f32[] all-reduce(%c), channel_id=2, replica_groups={{0,1,2,3,4,5,6,7}}, '
    'to_apply=%add',
    "}",
    "",
    "%costly (d: f32[100]) -> f32[100] {",
    "  %d = f32[100]{0} parameter(0)",
    '  ROOT %r2 = f32[100]{0} all-reduce(%d), channel_id=3, replica_groups={{0,1,2,3,4,5,6,7}}, '
    'to_apply=%add',
    "}",
    "",
    "%unknown_body (u: (s32[], f32[8])) -> (s32[], f32[8]) {",
    "  %u = (s32[], f32[8]{0}) parameter(0)",
    "  %piece = f32[8]{0} get-tuple-element(%u), index=1",
    "  %whole = f32[64]{0} all-gather(%piece), channel_id=4, dimensions={0}",
    "  ROOT %t2 = (s32[], f32[8]{0}) tuple(%j, %piece)",
    "}",
    "",
    "ENTRY %main (x: f32[8]) -> f32[] {",
    "  %x = f32[8]{0} parameter(0), sharding={devices=[8]<=[8]}",
    "  %gathered = f32[64]{0} all-gather(%x), channel_id=5, dimensions={0}",
    '  %ring = (s32[], f32[64]{0}) while(%start), condition=%ring_cond, body=%ring_body, '
    'backend_config={"known_trip_count":{"n":"7"}}',
    "  %chosen = f32[] conditional(%which, %s, %v), branch_computations={%cheap, %costly}",
    '  %loose = (s32[], f32[8]{0}) while(%start2), condition=%ring_cond, body=%unknown_body, '
    'metadata={op_name="\\"known_trip_count\\":{\\"n\\":\\"1\\"}"}',
    "  ROOT %out = f32[] add(%chosen, %chosen)",
    "}",
    "",
])


def received(module: str) -> tuple[dict[str, int], set[str]]:
    return hlo.received(module)


@pytest.mark.parametrize(("text", "size"), [
    ("f32[512]{0}", 2048), ("(f32[], bf16[4,2])", 4 + 16), ("pred[3]", 3), ("s8[]", 1),
    ("(s32[], f32[64]{0})", 260), ("f64[<=10]", 80), ("token[]", 0)])
def test_the_bytes_of_an_hlo_type(text, size):
    assert hlo.type_bytes(text) == size


def test_what_a_device_receives_counts_loops_branches_and_no_author_text():
    """Is the all-gather counted for what it adds (7 of 8 pieces), the permute 7 times (the
    compiler's count, not the name scope's), the costlier branch only, and the loop of unknown
    turns named rather than counted once?"""
    got, uncounted = received(MODULE)
    assert got == {"all-gather": 224 + 224, "collective-permute": 7 * 256,
                   "all-reduce": 400}
    assert uncounted == {"all-gather"}


def test_a_collective_nested_past_the_walks_depth_is_not_left_out():
    """A program whose collective sits under 70 nested calls: is it named as uncounted rather
    than silently dropped?"""
    calls = [f"%c{k} (a: f32[]) -> f32[] {{\n  %a{k} = f32[] parameter(0)\n"
             f"  ROOT %r{k} = f32[] call(%a{k}), to_apply=%c{k + 1}\n}}\n" for k in range(70)]
    last = ("%c70 (a: f32[]) -> f32[] {\n  %a70 = f32[] parameter(0)\n"
            "  ROOT %r70 = f32[] all-reduce(%a70), to_apply=%c0\n}\n")
    entry = "ENTRY %main (x: f32[]) -> f32[] {\n  %x = f32[] parameter(0)\n" \
            "  ROOT %y = f32[] call(%x), to_apply=%c0\n}\n"
    _, uncounted = received("".join(calls) + last + entry)
    assert uncounted


def bounds(arguments, outputs=(4,), temporaries=0, received=None, uncounted=()):
    return {"held": {"arguments": list(arguments), "outputs": list(outputs),
                     "temporaries": temporaries},
            "received": received or {}, "uncounted": list(uncounted)}


def test_the_bounds_refuse_what_a_whole_computation_needs_and_allow_the_rest():
    reference = bounds([64, 64], received={"all-reduce": 4})
    assert footprint.beyond_bounds(bounds([64, 64], received={"all-reduce": 4}), reference,
                                   8) is None
    within = bounds([64, 32], received={"all-reduce": 64, "all-gather": 28}, temporaries=900)
    assert footprint.beyond_bounds(within, reference, 8) is None
    taken_whole = footprint.beyond_bounds(bounds([512, 64]), reference, 8)
    assert "512 bytes of array 1 of its arguments" in taken_whole
    gathered = footprint.beyond_bounds(bounds([64, 64], received={"all-gather": 896}),
                                       reference, 8)
    assert gathered.endswith("it gathers what it should keep split")
    result = footprint.beyond_bounds(bounds([64, 64], outputs=(512,)), reference, 8)
    assert "array 1 of its results" in result
    held = footprint.beyond_bounds(bounds([64, 64], temporaries=4096), reference, 8)
    assert held.endswith("it holds what it should keep split")
    loose = footprint.beyond_bounds(bounds([64, 64], uncounted=["all-gather"]), reference, 8)
    assert "number of turns" in loose
    assert footprint.beyond_bounds(bounds([512, 64]), reference, 2) is None  # no bounds on 2
