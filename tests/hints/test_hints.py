"""grader.hints.ERROR_HINTS: the errors JAX raises for the usual mistakes, first match wins.

Each entry gets a sample text written from its pattern (the gist of the message JAX, or
grader.lessons.cluster, gives); every entry must give its hint for its sample, so that no
entry is shadowed by one before it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

import pytest

from grader import hints
from grader import messages as msg
from grader.hints import capstone, collectives, common, jit_sharding

#: A message each entry of ERROR_HINTS must answer with its hint, by the hint's name.
SAMPLES = {
    "HINT_ROW_SUMS_REPLICATE_Y": (
        "shard_map applied to the function 'row_sums' was given out_specs which require "
        "replication which can't be statically inferred given the mesh: out_specs is P('x') "
        "which implies that the corresponding output value is replicated across mesh axis "
        "'y', but could not infer replication over any axes"),
    "HINT_NOT_REPLICATED": (
        "out_specs is P() which implies that the corresponding output value is replicated "
        "across mesh axis 'data', but could not infer replication over any axes"),
    "HINT_AXIS_NAME": "unbound axis name: model",
    "HINT_SET_MESH_IN_JIT": "`set_mesh` can only be used outside of `jax.jit`.",
    "HINT_RESHARD": (
        "shard_map in_specs P('data',) for argument x does not match the specs of the input "
        "P(None,)"),
    "HINT_DEVICES_SET_TOO_LATE": (
        "jax_num_cpu_devices config should be updated before backends are initialized"),
    "HINT_PMAP_INPUT": "sharding for _internal_pmap_axis_name is invalid",
    "HINT_PMAP_SQUEEZE": (
        "cannot select an axis to squeeze out which has size not equal to one, got "
        "shape=(16, 3) and dimensions=(0,)"),
    "HINT_SPEC_TOO_LONG": "PartitionSpec P('x', None, 'y') is only valid for values of rank at "
                          "least 3",
    "HINT_DOES_NOT_DIVIDE": (
        "the sharding implies that array axis 0 is partitioned 8 times, but the dimension size "
        "is 6"),
    "HINT_DEVICE_COUNT": "the mesh needs 8 devices but only 4 are there",
    "HINT_NEEDS_OUT_SHARDING": (
        "Contracting dimensions are sharded and it is ambiguous how the output should be "
        "sharded"),
    "HINT_ILLEGAL_SHARDING": (
        "dot_general operation with inputs: f32[64@data,16], f32[16,16@data] produces an "
        "illegally sharded result: f32[64@data,16@data]"),
    "HINT_SPEC_WITHOUT_MESH": (
        "Using PartitionSpec when you are not under a mesh context is not allowed"),
    "HINT_CONSTRAINT_ON_EXPLICIT": (
        "PartitionSpec passed to with_sharding_constraint can only refer to Auto axes"),
    "HINT_SHARDING_OF_TRACER": (
        "The 'sharding' attribute is not available on traced array with shape float32[8]"),
    "HINT_COMMITTED_MISMATCH": (
        "Sharding passed to jit does not match the sharding on the respective arg"),
    "HINT_COMMITTED_DEVICES": (
        "Received incompatible devices for jitted computation. Got argument x with device ids "
        "[0] and argument y with device ids [1]"),
    "HINT_MIXED_MESHES": "Mesh for all inputs should be equal",
    "HINT_RETURN_JITTED": "'function' object has no attribute 'lower'",
    "HINT_EXPLICIT_REFUSES": (
        "Input should be unsharded over the axis being reduced. Got input "
        "type=float32[16@data,24@model] and axis=1"),
    "HINT_SCATTER_TILED": (
        "reduce_scatter operand scatter dimension size 8 must match shard count 4"),
    "HINT_SCATTER_DIMENSION": (
        "tiled reduce_scatter operand scatter dimension size 2 must be divisible by "
        "shard_count 4"),
    "HINT_OUT_SPECS_RANK": (
        "shard_map applied to the function 'f' was given an out_specs entry which is too long "
        "to be compatible with the corresponding output value from the function"),
    "HINT_A2A_AXES": (
        "all_to_all split_axis 0 of the operand has to be divisible by the size of the named "
        "axis data"),
    "HINT_GATHER_NOT_TILED": (
        "dot_general requires contracting dimensions to have the same shape, got (16,) and "
        "(2,)."),
    "HINT_FETCH_NON_ADDRESSABLE": (
        "Fetching value for `jax.Array` that spans non-addressable (non process local) devices "
        "is not possible"),
    "HINT_DEVICE_PUT_PER_PROCESS": (
        "The value passed to device_put is not the same on each process"),
    "HINT_TRACED_VALUE": (
        "Abstract tracer value encountered where concrete value is expected: traced array "
        "with shape int32[]"),
    "HINT_PROCESSES_DIVERGED": msg.MSG_CLUSTER_TIMEOUT.format(
        which="process 1", count=2, seconds=60),
    "HINT_CARRY_VARYING": (
        "scan body function carry input and carry output must have equal types, but they "
        "differ:\n\nThe input carry component loop_carry[1] has type float32[2,4] but the "
        "corresponding output carry component has type float32[2,4]{V:stage}, so the manual "
        "axis types do not match."),
    "HINT_MQA_KV_INDIVISIBLE": capstone.MSG_MQA_BAD_SPEC.format(
        spec="P(None, None, 'model', None)", name="wkv", shape=(2, 16, 1, 16),
        why=capstone.MSG_MQA_INDIVISIBLE.format(dim=2, size=1, axes=("model",), parts=2)),
}


@cache
def lesson_hints() -> dict[str, str]:
    """Every HINT_ text of the grader.hints modules, by `module.NAME`."""
    named = {}
    for info in pkgutil.iter_modules(hints.__path__):
        module = importlib.import_module(f"grader.hints.{info.name}")
        for name, value in vars(module).items():
            if name.startswith("HINT_") and isinstance(value, str):
                named[f"{info.name}.{name}"] = value
    return named


def name_of(hint: str) -> str:
    """The name of a hint text in the hints modules."""
    return next(full.split(".", 1)[1] for full, value in lesson_hints().items() if value == hint)


@pytest.mark.parametrize("index", range(len(hints.ERROR_HINTS)),
                         ids=[name_of(hint) for _, hint in hints.ERROR_HINTS])
def test_every_error_hint_is_reached_by_a_message_of_its_own(index):
    """Does each entry's sample match its pattern, and give its hint (no entry before it
    matches the sample first)?"""
    pattern, hint = hints.ERROR_HINTS[index]
    sample = SAMPLES[name_of(hint)]
    assert pattern.search(sample)
    assert hints.error_hint(sample) == hint


def test_every_sample_belongs_to_an_entry():
    assert sorted(SAMPLES) == sorted(name_of(hint) for _, hint in hints.ERROR_HINTS)


def test_row_sums_replication_comes_before_the_general_one():
    """The error of row_sums matches the general 'out_specs.*replicat' pattern as well: the
    entry that names axis 'y' must be the one that answers."""
    sample = SAMPLES["HINT_ROW_SUMS_REPLICATE_Y"]
    assert any(pattern.search(sample) for pattern, hint in common.ERRORS
               if hint == common.HINT_NOT_REPLICATED)
    assert hints.error_hint(sample) == collectives.HINT_ROW_SUMS_REPLICATE_Y


def test_an_unknown_error_has_no_hint():
    assert hints.error_hint("ZeroDivisionError: division by zero") is None


def test_a_pmap_input_error_is_told_apart_from_jit_by_where_it_was_raised():
    """Since JAX 0.8 pmap fails on a committed input with jit's own error: is it answered
    with the pmap hint when the innermost frame is JAX's pmap, and with jit's otherwise?"""
    message = SAMPLES["HINT_COMMITTED_MISMATCH"] + ". Got jit sharding: NamedSharding(...)"
    assert hints.error_hint(message) == jit_sharding.HINT_COMMITTED_MISMATCH
    assert hints.error_hint(message, "/venv/site-packages/jax/_src/pjit.py, line 9") == (
        jit_sharding.HINT_COMMITTED_MISMATCH)
    assert hints.error_hint(message, "/venv/site-packages/jax/_src/pmap.py, line 9") == (
        common.HINT_PMAP_INPUT)
    assert hints.error_hint(SAMPLES["HINT_COMMITTED_DEVICES"], r"C:\jax\_src\pmap.py, line 9") == (
        common.HINT_PMAP_INPUT)


def test_constraining_on_an_explicit_mesh_is_answered_as_jax_0_10_says_it():
    """JAX 0.10 checks with_sharding_constraint on a mesh of Explicit axes as an assertion:
    is that message answered with the hint to reshard?"""
    said = ("`with_sharding_constraint` acts as an assert when all axes of mesh are of type "
            "`Explicit`. The array sharding: P('data', 'model') did not match the sharding "
            "provided: P('data', None). Please use `jax.sharding.reshard` to shard your input "
            "to the sharding you want.")
    assert hints.error_hint(said) == jit_sharding.HINT_CONSTRAINT_ON_EXPLICIT


# --- every hint is tested on a real mistake ---------------------------------------------------
#: Hints no tests/test_mistakes_*.py module runs on a real mistake, each with the reason it
#: cannot be produced there. Empty: every hint of every lesson is given to a real mistake,
#: through check(), a hidden case's own probe and judge (mistakes.hidden_result), or lesson 6's
#: cells replayed in two processes (mistakes.replayed_result). A hint added here needs a reason
#: that no such test can produce its mistake, not merely that none was written.
UNTESTED_HINTS: dict[str, str] = {}


def hints_referenced_by_mistakes() -> set[str]:
    """The texts of the hints that the test_mistakes modules name (as `module.HINT_...` of a
    grader.hints module they import)."""
    import ast
    import importlib
    from pathlib import Path

    found = set()
    for path in sorted(Path(__file__).parent.glob("test_mistakes_*.py")):
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "grader.hints":
                for name in node.names:
                    aliases[name.asname or name.name] = f"grader.hints.{name.name}"
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("HINT_")
                    and isinstance(node.value, ast.Name) and node.value.id in aliases):
                found.add(getattr(importlib.import_module(aliases[node.value.id]), node.attr))
    return found


def test_every_hint_is_given_to_a_real_mistake_in_a_test():
    """Is each hint of each lesson module named by a test_mistakes module, where a real
    mistake must receive it (or allow-listed, with a reason)?"""
    referenced = hints_referenced_by_mistakes()
    untested = sorted(name for name, text in lesson_hints().items()
                      if text not in referenced and name not in UNTESTED_HINTS)
    assert untested == [], "hints no real mistake is tested on: " + ", ".join(untested)
    assert set(UNTESTED_HINTS) <= set(lesson_hints())  # no stale entry
