"""Plain data crossing from a worker to the grader, and the judges that compare it."""

from __future__ import annotations

import json
import math

import jax.numpy as jnp
import numpy as np
import pytest

from grader import messages as msg
from grader.framework import cases, judge, plain
from grader.framework.judge import Hint
from grader.framework.plain import NotPlain


def round_trip(value):
    """What the trusted side reads back, through JSON as a worker's reply travels."""
    return plain.from_plain(json.loads(json.dumps(plain.to_plain(value))))


# --- to_plain / from_plain: round trips -----------------------------------------------------
@pytest.mark.parametrize(
    ("value", "kind"),
    [
        (np.array([1.5, -2.25, 1e30], dtype=np.float32), "f"),
        (np.arange(6, dtype=np.int32).reshape(2, 3), "i"),
        (np.array([[True, False], [False, True]]), "b"),
        (np.zeros(0), "f"),
        (np.zeros((2, 0), dtype=np.int64), "i"),
    ],
)
def test_arrays_come_back_with_their_values_shape_and_kind(value, kind):
    """Does an array come back as a numpy array of the same shape, values and kind?"""
    back = round_trip(value)
    assert isinstance(back, np.ndarray)
    assert back.shape == value.shape
    assert back.dtype.kind == kind
    np.testing.assert_array_equal(back, value)


def test_an_empty_array_with_rows_of_three_comes_back():
    """Does a (0, 3) array (no rows) come back with its shape?"""
    assert round_trip(np.zeros((0, 3))).shape == (0, 3)


def test_python_and_numpy_scalars_become_zero_dimensional_arrays():
    """Do a float, an int, a bool and a numpy scalar each come back as a 0-d array?"""
    for value, kind in [(2.5, "f"), (7, "i"), (True, "b"), (np.float32(0.5), "f")]:
        back = round_trip(value)
        assert isinstance(back, np.ndarray) and back.shape == (), value
        assert back.dtype.kind == kind and back.item() == value


def test_a_jax_array_is_plain_data():
    """Is a jax.Array read as the numbers it holds?"""
    back = round_trip(jnp.arange(4.0) * 2)
    np.testing.assert_array_equal(back, [0.0, 2.0, 4.0, 6.0])


def test_nested_dicts_lists_strings_and_none_keep_their_structure():
    """Do dicts, lists, tuples, strings and None nest and come back as they were?"""
    value = {
        "name": "ring",
        "nothing": None,
        "items": [np.arange(3), ("a", None), {"deep": [1.5]}],
        3: "int keys become strings",
    }
    back = round_trip(value)
    assert sorted(back) == ["3", "items", "name", "nothing"]
    assert back["name"] == "ring" and back["nothing"] is None
    assert back["3"] == "int keys become strings"
    first, pair, deep = back["items"]
    np.testing.assert_array_equal(first, [0, 1, 2])
    assert pair == ["a", None]  # a tuple comes back as a list
    np.testing.assert_array_equal(deep["deep"][0], 1.5)


def test_a_hints_material_is_made_only_where_hints_read_it():
    """A hint's material (plain.Material) is read from the reference's outcome: is it made
    there, and left out, never made, in every other run (a student's, check()'s)?"""
    made = []

    def material():
        made.append(1)
        return np.arange(3)

    value = {"result": np.ones(2), "_mistake": plain.Material(material)}
    reference = plain.from_plain(plain.to_plain(value))
    np.testing.assert_array_equal(reference["_mistake"], [0, 1, 2])
    assert made == [1]
    student = plain.from_plain(plain.to_plain(value, material=False))
    assert sorted(student) == ["result"] and made == [1]


def test_check_and_a_students_run_leave_the_hints_material_to_the_reference():
    """Every probe's material is left out where a student's function is measured: is each
    hint that compares with material still given, from the reference's (check() reads the
    stored one), when the student's run made none? (The mistakes of tests/hints prove each
    such hint on a student's run; here, that the runs really leave it out.)"""
    found = next(c for c in cases.for_exercise("fixed_noisy_step") if not c.hidden)
    as_given = "_as_given"
    reference = cases.measure(found, lambda params, batch, key: params)
    student = cases.measure(found, lambda params, batch, key: params, material=False)
    assert as_given in reference["data"]["dict"] and as_given not in student["data"]["dict"]


def test_nan_and_infinities_survive():
    """Do NaN and the infinities come back where they were, through JSON?"""
    back = round_trip(np.array([np.nan, np.inf, -np.inf, 1.0]))
    assert math.isnan(back[0])
    assert back[1] == np.inf and back[2] == -np.inf and back[3] == 1.0


def test_tagged_data_is_only_dicts_lists_strings_and_numbers():
    """Is what a worker sends made only of JSON types (nothing to unpickle or call)?"""

    def only_json(data):
        if isinstance(data, dict):
            return all(isinstance(k, str) and only_json(v) for k, v in data.items())
        if isinstance(data, list):
            return all(only_json(v) for v in data)
        return data is None or type(data) in (str, int, float, bool)

    data = plain.to_plain({"a": [np.ones((2, 2), np.float32), "x", None], "b": np.int8(3)})
    assert only_json(data)


# --- to_plain: rejections ---------------------------------------------------------------
class RefusesToBeAnArray:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("no numbers here")


class EqualToEverything:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __array__(self, *args, **kwargs):
        raise TypeError("not an array")


@pytest.mark.parametrize(
    "value",
    [
        np.array([1, "a", None], dtype=object),
        np.array([1 + 2j]),
        np.array(["text", "array"]),
        object(),
        {1, 2, 3},
        len,
        2**80,
        RefusesToBeAnArray(),
        EqualToEverything(),
    ],
    ids=[
        "object-array",
        "complex",
        "string-array",
        "object",
        "set",
        "function",
        "huge-int",
        "hostile-__array__",
        "equal-to-everything",
    ],
)
def test_values_that_are_not_numbers_are_refused(value):
    """Is a value that is not numbers refused with NotPlain, not passed on or crashed on?"""
    with pytest.raises(NotPlain):
        plain.to_plain(value)


def test_a_non_number_deep_inside_a_structure_is_refused():
    """Is a hostile object refused even when nested in a dict inside a list?"""
    with pytest.raises(NotPlain):
        plain.to_plain({"result": [1.0, {"x": RefusesToBeAnArray()}]})


def test_arrays_larger_than_any_test_needs_are_refused(monkeypatch):
    """Is an array one element over the limit refused, and one at the limit accepted?"""
    monkeypatch.setattr(plain, "MAX_ELEMENTS", 12)
    assert plain.from_plain(plain.to_plain(np.ones((3, 4)))).shape == (3, 4)
    with pytest.raises(NotPlain, match="larger"):
        plain.to_plain(np.ones(13))


def test_a_huge_array_is_refused_at_the_real_limit():
    """Is an array just over the real limit refused (no multi-megabyte reply)?"""
    with pytest.raises(NotPlain):
        plain.to_plain(np.zeros(plain.MAX_ELEMENTS + 1, dtype=bool))


# --- from_plain: malformed data ---------------------------------------------------------
@pytest.mark.parametrize(
    "data",
    [
        [],
        "text",
        None,
        1.0,
        {},
        {"str": 5},
        {"dict": []},
        {"list": {}},
        {"bogus": 1},
        {"str": "a", "none": None},
        {"dict": {"a": 5}},
        {"list": [1]},
        {"array": [1.0, 2.0], "kind": "float", "shape": [3]},
    ],
)
def test_malformed_tagged_data_is_refused(data):
    """Is data that to_plain could not have produced refused with NotPlain?"""
    with pytest.raises(NotPlain):
        plain.from_plain(data)


@pytest.mark.parametrize(
    "data",
    [
        {"array": [1.0], "kind": "float"},
        {"array": [1.0], "kind": "complex", "shape": [1]},
        {"array": [[1.0], [1.0, 2.0]], "kind": "float", "shape": [2]},
        {"array": "abc", "kind": "float", "shape": []},
    ],
    ids=["no-shape", "unknown-kind", "ragged", "text-as-numbers"],
)
def test_malformed_array_data_is_refused(data):
    """Is a malformed tagged array refused with NotPlain rather than another exception?"""
    with pytest.raises(NotPlain):
        plain.from_plain(data)


# --- difference ---------------------------------------------------------------------------
def test_a_scalar_differs_from_one_value_per_device():
    """Does a scalar fail where one row per device is expected (no broadcasting)?"""
    problem = judge.difference(np.array(3.0), np.full(8, 3.0))
    assert problem is not None
    assert "()" in problem and "(8,)" in problem


def test_shapes_must_match_exactly_even_with_the_same_values():
    """Does an (8,) array differ from an (1, 8) array holding the same numbers?"""
    assert judge.difference(np.ones((1, 8)), np.ones(8)) is not None
    assert judge.difference(np.ones(8), np.ones((8, 1))) is not None


def test_integers_differ_from_floats_of_the_same_value():
    """Do integer values fail where floating-point ones are expected, and vice versa?"""
    ints, floats = np.array([1, 2, 3]), np.array([1.0, 2.0, 3.0])
    assert "floating-point" in judge.difference(ints, floats)
    assert "integer" in judge.difference(floats, ints)


def test_float_rounding_passes_but_a_real_error_does_not():
    """Is float32 rounding accepted while an error in the third digit is not?"""
    want = np.array([0.1, 1000.0 / 3, -7.0])
    assert judge.difference(want.astype(np.float32).astype(np.float64), want) is None
    assert judge.difference(want * (1 + 1e-7), want) is None
    assert judge.difference(want * 1.001, want) == "the result has the wrong values"


def test_nan_matches_nan_only():
    """Does NaN match an expected NaN but not an expected number?"""
    want = np.array([np.nan, 1.0])
    assert judge.difference(np.array([np.nan, 1.0]), want) is None
    assert judge.difference(np.array([np.nan, np.nan]), want) is not None
    assert judge.difference(np.array([0.0, 1.0]), want) is not None


def test_integers_must_be_exact():
    """Does an integer result one off fail?"""
    assert judge.difference(np.array([1, 2, 4]), np.array([1, 2, 3])) is not None
    assert judge.difference(np.array([1, 2, 3]), np.array([1, 2, 3])) is None


def test_a_dict_with_other_keys_differs():
    """Does a dict missing a key, or with an extra one, differ and say which keys?"""
    want = {"w": np.array(1.0), "b": np.array(2.0)}
    missing = judge.difference({"w": np.array(1.0)}, want)
    assert missing is not None and "'b'" in missing
    extra = judge.difference({**want, "c": np.array(0.0)}, want)
    assert extra is not None and "'c'" in extra


def test_a_wrong_value_inside_a_dict_names_where_it_is():
    """Does the message point at the entry of the dict that is wrong?"""
    want = {"w": np.array(1.0), "b": np.array(2.0)}
    problem = judge.difference({"w": np.array(1.0), "b": np.array(2.5)}, want)
    assert problem is not None and "['b']" in problem
    assert judge.difference({"b": np.array(2.0), "w": np.array(1.0)}, want) is None


def test_lists_must_have_the_same_length_and_entries():
    """Does a list of the wrong length, or with a wrong entry, differ?"""
    want = [np.array(1.0), np.array(2.0)]
    assert judge.difference([np.array(1.0)], want) is not None
    assert judge.difference([np.array(1.0), np.array(2.0), np.array(3.0)], want) is not None
    assert "[1]" in judge.difference([np.array(1.0), np.array(9.0)], want)
    assert judge.difference([np.array(1.0), np.array(2.0)], want) is None


@pytest.mark.parametrize(
    ("got", "want"),
    [
        ([1.0, 2.0], np.array([1.0, 2.0])),
        ({"result": 1}, np.array(1.0)),
        (None, np.array(1.0)),
        ("6.0", np.array(6.0)),
        (np.array([1.0]), [np.array(1.0)]),
        (np.array(1.0), {"w": np.array(1.0)}),
    ],
    ids=["list-for-array", "dict-for-array", "none", "string", "array-for-list", "array-for-dict"],
)
def test_the_wrong_type_of_container_differs(got, want):
    """Does a value of another type fail, whatever numbers it holds?"""
    assert judge.difference(got, want) is not None


def test_strings_and_none_compare_by_value():
    """Do equal strings (and None) agree, and different strings differ?"""
    assert judge.difference("data", "data") is None
    assert judge.difference(None, None) is None
    assert judge.difference("devices", "data") is not None


# --- same, with hints ---------------------------------------------------------------------
def test_same_ignores_context_measurements():
    """Are measurements starting with _ (hint material) left out of the comparison?"""
    check = judge.same()
    got = {"result": np.array(6.0), "_first_shard": np.array(-1.0)}
    want = {"result": np.array(6.0), "_first_shard": np.array(1.0)}
    assert check(got, want).passed


def test_same_fails_on_a_missing_measurement():
    """Does a measurement the reference has but the student's run lacks fail, by name?"""
    verdict = judge.same()({"other": np.array(1.0)}, {"result": np.array(1.0)})
    assert not verdict.passed and "'result'" in verdict.message


def test_same_compares_only_the_named_measurements():
    """With keys given, are the other measurements ignored?"""
    got = {"layout": np.array([1, 1]), "result": np.array(0.0)}
    want = {"layout": np.array([1, 1]), "result": np.array(5.0)}
    assert judge.same("layout")(got, want).passed
    assert not judge.same("result")(got, want).passed


FIRST_SHARD = Hint(lambda got, want: judge.close(got["result"], want["_first_shard"]), "psum?")
NEGATED = Hint(lambda got, want: judge.close(-got["result"], want["result"]), "sign?")


def test_a_hint_shows_only_when_its_mistake_is_made():
    """Is a hint given when its predicate holds, and not when it does not?"""
    check = judge.same(hints=[FIRST_SHARD])
    want = {"result": np.array([10.0]), "_first_shard": np.array([3.0])}
    assert check({"result": np.array([3.0])}, want).hint == "psum?"
    other_mistake = check({"result": np.array([4.0])}, want)
    assert not other_mistake.passed and other_mistake.hint is None


def test_the_first_hint_that_applies_wins():
    """With several hints, is the one whose predicate holds chosen, in order?"""
    check = judge.same(hints=[FIRST_SHARD, NEGATED])
    want = {"result": np.array([10.0]), "_first_shard": np.array([3.0])}
    assert check({"result": np.array([-10.0])}, want).hint == "sign?"
    assert check({"result": np.array([3.0])}, want).hint == "psum?"
    both = {"result": np.array([10.0]), "_first_shard": np.array([-10.0])}
    assert check({"result": np.array([-10.0])}, both).hint == "psum?"
    assert (
        judge.same(hints=[NEGATED, FIRST_SHARD])({"result": np.array([-10.0])}, both).hint
        == "sign?"
    )


def test_a_hint_whose_predicate_raises_is_skipped():
    """Is a hint whose predicate raises KeyError ignored, the next one still tried?"""
    needs_missing_key = Hint(lambda got, want: got["nope"] > 0, "never")
    check = judge.same(hints=[needs_missing_key, NEGATED])
    verdict = check({"result": np.array([-2.0])}, {"result": np.array([2.0])})
    assert not verdict.passed and verdict.hint == "sign?"


def test_a_hint_that_does_not_fit_the_wrong_answer_is_skipped():
    """Does a hint reading .ndim skip an answer that is None or a list, not crash?"""
    not_per_device = Hint(lambda got, want: got["result"].ndim < want["result"].ndim,
                          "return one row per device")
    check = judge.same(hints=[not_per_device])
    want = {"result": np.ones((8, 3))}
    for wrong in (None, [1.0, 2.0], "text"):
        verdict = check({"result": wrong}, want)
        assert not verdict.passed and verdict.hint is None, wrong


def test_hints_are_not_consulted_when_the_test_passes():
    """Is a passing result judged without running any hint predicate?"""

    def explode(got, want):
        raise RuntimeError("a hint ran on a passing result")

    check = judge.same(hints=[Hint(explode, "boom")])
    assert check({"result": np.array(1.0)}, {"result": np.array(1.0)}).passed


# --- traces / compiles_to / runs_on_mesh ----------------------------------------------------
def summary(*collectives, meshes=()):
    return {
        "primitives": [],
        "collectives": [{"primitive": p, "axes": list(a)} for p, a in collectives],
        "shard_maps": [{"mesh": m, "in_specs": [], "out_specs": []} for m in meshes],
    }


def test_traces_accepts_psum_and_psum_invariant_over_the_axis():
    """Does a psum (or psum_invariant) over the named axis pass, among other axes?"""
    check = judge.traces("psum", "data")
    assert check(summary(("psum", ["data"])), {}).passed
    assert check(summary(("psum_invariant", ["data"])), {}).passed
    assert check(summary(("ppermute", ["x"]), ("psum", ["x", "data"])), {}).passed


def test_traces_fails_on_another_axis_or_another_collective():
    """Does a psum over the wrong axis, or only a ppermute, fail and say what was seen?"""
    check = judge.traces("psum", "data", hint="add a psum")
    reference = summary(("psum", ["data"]))
    wrong_axis = check(summary(("psum", ["devices"])), reference)
    assert not wrong_axis.passed and "devices" in wrong_axis.message
    assert wrong_axis.hint == "add a psum"
    other = check(summary(("ppermute", ["data"])), reference)
    assert not other.passed and "ppermute" in other.message


def test_traces_asks_only_for_the_collective_where_the_reference_names_no_axis():
    """On one device a program keeps no mesh, so the reference's psum is over no named axis:
    does any psum pass there, and anything else still fail?"""
    check = judge.traces("psum", "data")
    one_device = summary(("psum", []))
    assert check(summary(("psum", [])), one_device).passed
    assert not check(summary(("ppermute", [])), one_device).passed
    assert not check(summary(), one_device).passed


def test_traces_fails_when_nothing_is_traced():
    """Does a summary without collectives fail with 'no collective'?"""
    verdict = judge.traces("psum", "data")(summary(), {})
    assert not verdict.passed and "no collective" in verdict.message


def counts(**ops):
    """Collective counts as they come back from a worker (0-d arrays)."""
    full = {"all-reduce": 0, "collective-permute": 0}
    full.update({k.replace("_", "-"): v for k, v in ops.items()})
    return round_trip(full)


def test_compiles_to_needs_the_op_only_where_the_reference_has_it():
    """Does a missing all-reduce fail when the reference compiles one, and only then?"""
    check = judge.compiles_to("all-reduce", hint="forgot psum?")
    missing = check(counts(all_reduce=0), counts(all_reduce=1))
    assert not missing.passed and missing.hint == "forgot psum?"
    assert "all-reduce" in missing.message
    assert check(counts(all_reduce=2), counts(all_reduce=1)).passed
    assert check(counts(all_reduce=0), counts(all_reduce=0)).passed


def test_compiles_to_fails_when_the_op_is_not_even_counted():
    """Does a measurement without the op's key count as none of it?"""
    check = judge.compiles_to("collective-permute")
    assert not check({}, counts(collective_permute=1)).passed


def test_runs_on_mesh_needs_the_same_axis_names_and_sizes():
    """Does a shard_map over another mesh, or none at all, fail; the same mesh pass?"""
    want = round_trip(summary(meshes=[{"data": 8}]))
    assert judge.runs_on_mesh(round_trip(summary(meshes=[{"data": 8}])), want).passed
    assert judge.runs_on_mesh(round_trip(summary(meshes=[{"x": 1}, {"data": 8}])), want).passed
    for meshes in ([{"data": 2}], [{"devices": 8}], [{"data": 8, "model": 1}]):
        verdict = judge.runs_on_mesh(round_trip(summary(meshes=meshes)), want)
        assert not verdict.passed, meshes
    nothing = judge.runs_on_mesh(round_trip(summary()), want)
    assert not nothing.passed and "no shard_map" in nothing.message


def test_runs_on_mesh_passes_when_the_reference_has_no_shard_map():
    """Is nothing required when the reference traced no shard_map?"""
    assert judge.runs_on_mesh(summary(), summary()).passed


def test_how_a_function_computes_counts_only_where_its_values_are_right():
    """With the right all-reduce on 8 and on 2 devices but wrong values on 2 only, does the
    test of how it computes pass on 8 and fail on 2, with the reason?"""
    by_name = {c.name: c for c in cases.for_exercise("distributed_dot")}
    values, how = by_name["random_arrays"], by_name["all_reduces_on_every_device_count"]
    reduce = {"ok": True, "data": {"verified": plain.to_plain({"all-reduce": 1})}}
    right = {"ok": True, "data": plain.to_plain({"result": np.float32(3.0)})}
    wrong = {"ok": True, "data": plain.to_plain({"result": np.float32(5.0)})}
    wants = {values.id: {8: right, 2: right}, how.id: {8: reduce, 2: reduce}}
    decided = cases.decide_all([values, how], {values.id: {8: right, 2: wrong},
                                               how.id: {8: reduce, 2: reduce}}, wants)
    assert [d.status for d in decided] == [msg.FAILED, msg.FAILED]
    assert decided[1].message == msg.MSG_HOW_NEEDS_VALUES.format(name="distributed_dot")
    assert decided[1].devices == [2]
    decided = cases.decide_all([values, how], {values.id: {8: right, 2: right},
                                               how.id: {8: reduce, 2: reduce}}, wants)
    assert [d.status for d in decided] == [msg.PASSED, msg.PASSED]


def test_a_message_that_names_what_was_found_shows_no_raw_measurements_under_it():
    """A program without the psum: does its feedback say which collectives it found, without
    the summaries themselves as "yours" and "expected" (dicts of axes and shard_maps that a
    student cannot read), while a wrong value still shows both?"""
    traced = cases.Case("distributed_dot", "psum_traced", probe=lambda: None,
                        judge=judge.traces("psum", "data"), points=1, hidden=False)
    outcome = {"ok": True, "data": plain.to_plain(summary(("ppermute", ["data"])))}
    want = {"ok": True, "data": plain.to_plain(summary(("psum", ["data"])))}
    decided = cases.decide(traced, {8: outcome}, {8: want})
    assert decided.status == msg.FAILED and "found: ppermute over ['data']" in decided.message
    assert decided.got is None and decided.want is None
    valued = cases.Case("distributed_dot", "value", probe=lambda: None, judge=judge.same(),
                        points=1, hidden=False)
    decided = cases.decide(valued, {8: {"ok": True, "data": plain.to_plain({"result": 5.0})}},
                           {8: {"ok": True, "data": plain.to_plain({"result": 3.0})}})
    assert decided.status == msg.FAILED and (decided.got, decided.want) == ("5.", "3.")


def test_a_syntax_errors_line_survives_a_long_file_name():
    """A cell that does not compile is named apart (its file and cell): is the line number
    said without the file's name, so that a shortened message still holds it however long
    the student's file name is?"""
    label = "a-student-with-a-very-long-name-indeed/" * 4 + "03_collectives.ipynb, cell 14"
    try:
        compile("x = 1\ny = (\n", label, "exec")
    except SyntaxError as exc:
        error = cases.describe_error(exc)
    assert error["type"] == "SyntaxError" and label not in error["message"]
    assert error["message"].endswith("(line 2)")
    assert len(error["message"]) < cases.EXCERPT
