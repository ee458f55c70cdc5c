"""The verifier: measures of how a function computes, taken from the program a worker sent,
in a process where none of the submission's code runs (grader/verifier.py, runner._verify).

conftest.py gives this process 8 CPU devices; the verifiers started here have 2.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import PartitionSpec as P

from grader import cases, plain, probes, runner
from grader import messages as msg

DEVICES = 2


def psum_program() -> str:
    """A serialized program, as a worker on 2 devices sends it: a shard_map with one psum."""
    mesh = jax.make_mesh((DEVICES,), ("data",), devices=jax.devices()[:DEVICES],
                         axis_types=(jax.sharding.AxisType.Auto,))
    fn = jax.shard_map(lambda b: jax.lax.psum(b.sum(), "data"), mesh=mesh, in_specs=P("data"),
                       out_specs=P())
    return plain.to_plain(plain.Unverified(
        "hlo_collectives", probes.Program.of(fn, jnp.arange(4.0)).serialize()))


def run_of(outcomes: dict) -> runner.Run:
    result = runner.Run(DEVICES, outcomes=outcomes)
    try:
        runner._verify(result, runner.DEFAULT_LIMITS, runner.DEFAULT_SANDBOX)
    finally:
        runner.close_verifiers()
    return result


@pytest.mark.slow
def test_programs_are_measured_and_bad_ones_fail_alone():
    """Is a good program measured in place, while bytes that are not a program, a verified
    measurement the worker claims to have taken itself, and an unknown measure each fail only
    their own case, with a reason?"""
    good = psum_program()
    forged = {"verified": plain.to_plain({"all-reduce": 1})}
    garbage = {"program": {"measure": "hlo_collectives", "blob": "bm90IGEgcHJvZ3JhbQ=="}}
    unknown = {"program": {"measure": "open", "blob": good["program"]["blob"]}}
    malformed = {"program": ["not", "a", "dict"]}
    result = run_of({
        "a": {"ok": True, "data": plain.to_plain({"collectives": "X"})},
        "bad": {"ok": True, "data": {"dict": {"collectives": garbage}}},
        "forged": {"ok": True, "data": {"dict": {"collectives": forged}}},
        "unknown": {"ok": True, "data": unknown},
        "malformed": {"ok": True, "data": {"dict": {"collectives": malformed}}},
        "good": {"ok": True, "data": {"dict": {"values": plain.to_plain([1.0]),
                                               "collectives": good}}},
        "top": {"ok": True, "data": good},
    })
    outcomes = result.outcomes
    assert outcomes["a"]["ok"]  # nothing to verify: left as it was
    assert outcomes["bad"] == {"ok": False, "unverified": outcomes["bad"]["unverified"]}
    assert outcomes["forged"] == {"ok": False, "unverified": "it claims to be verified"}
    assert outcomes["unknown"] == {"ok": False, "unverified": "no such measure"}
    with pytest.raises(plain.NotPlain, match="not verified"):  # left as sent: it cannot count
        plain.from_plain(outcomes["malformed"]["data"])
    counts = plain.from_plain(outcomes["good"]["data"])["collectives"]
    assert counts["all-reduce"] == 1 and sum(counts.values()) == 1
    assert plain.verified_paths(outcomes["good"]["data"]) == {"/collectives"}
    assert plain.verified_paths(outcomes["top"]["data"]) == {"/"}
    assert result.unfinished is None


@pytest.mark.slow
def test_a_verifier_serves_one_run_after_another_until_it_fails():
    """Is the verifier of one run reused by the next, and one that failed not reused?"""
    kind = (DEVICES, runner.DEFAULT_LIMITS, runner.DEFAULT_SANDBOX)
    try:
        first = runner.Run(DEVICES, outcomes={"a": {"ok": True, "data": psum_program()}})
        runner._verify(first, *kind[1:])
        [serving] = runner._idle_verifiers[kind]
        second = runner.Run(DEVICES, outcomes={"b": {"ok": True, "data": psum_program()}})
        runner._verify(second, *kind[1:])
        assert runner._idle_verifiers[kind] == [serving] and second.outcomes["b"]["ok"]
        serving.kill()  # a verifier that died meanwhile is replaced
        third = runner.Run(DEVICES, outcomes={"c": {"ok": True, "data": psum_program()}})
        runner._verify(third, *kind[1:])
        assert third.outcomes["c"]["ok"] and runner._idle_verifiers[kind] != [serving]
    finally:
        runner.close_verifiers()
    assert runner._idle_verifiers == {} and serving.process.poll() is not None


@pytest.mark.slow
def test_a_verifier_outlives_the_thread_that_started_it():
    """Does a verifier started by one grading thread still serve a run in another thread
    once the first has ended (a sandbox dying with its parent thread would be killed)?"""
    import threading

    kind = (DEVICES, runner.DEFAULT_LIMITS, runner.DEFAULT_SANDBOX)
    try:
        first = runner.Run(DEVICES, outcomes={"a": {"ok": True, "data": psum_program()}})
        starter = threading.Thread(target=runner._verify, args=(first, *kind[1:]))
        starter.start()
        starter.join()
        [serving] = runner._idle_verifiers[kind]
        second = runner.Run(DEVICES, outcomes={"b": {"ok": True, "data": psum_program()}})
        runner._verify(second, *kind[1:])
        assert first.outcomes["a"]["ok"] and second.outcomes["b"]["ok"], second.outcomes
        assert runner._idle_verifiers[kind] == [serving]
    finally:
        runner.close_verifiers()


def test_a_measurement_the_reference_had_verified_must_be_verified():
    """Does a case fail when the reference's measurement was verified and the student's is
    plain data, even if the numbers agree?"""
    found = next(c for c in cases.for_exercise("distributed_dot")
                 if c.name == "compiles_to_an_all_reduce")
    counts = plain.to_plain({"all-reduce": 1})
    want = {"ok": True, "data": {"verified": counts}}
    result = cases.decide(found, {8: {"ok": True, "data": counts}}, {8: want})
    assert result.status == msg.FAILED
    assert result.message == msg.MSG_NOT_VERIFIED.format(name="distributed_dot")
    assert cases.decide(found, {8: want}, {8: want}).status == msg.PASSED


def test_an_unverifiable_program_is_an_error_with_its_reason():
    """Is an outcome the verifier could not measure an error naming the reason?"""
    found = cases.for_exercise("distributed_dot")[0]
    outcome = {"ok": False, "unverified": "it is not a program"}
    result = cases.decide(found, {8: outcome}, {8: {"ok": True, "data": {}}})
    assert result.status == msg.ERROR and "it is not a program" in result.message


def test_a_deeply_nested_reply_is_walked_without_recursion():
    """Does data nested far deeper than Python's recursion limit still get searched for
    programs and verified measures, without a RecursionError in the grader?"""
    deep = {"verified": {"none": None}}
    for _ in range(20_000):
        deep = {"list": [deep]}
    assert plain.verified_paths(deep) == {"/" + "/".join(["0"] * 20_000)}
    assert plain.programs(deep) == []
