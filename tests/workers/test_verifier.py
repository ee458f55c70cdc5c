"""The verifier: measures of how a function computes, taken from the program a worker sent,
in a process where none of the submission's code runs (grader/workers/verifier.py), and how
the grader asks verifiers for them (grader/workers/verification.py).

conftest.py gives this process 8 CPU devices; the verifiers started here have 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import alternatives
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import whole_on_every_device
from jax.sharding import PartitionSpec as P

from grader import messages as msg
from grader.framework import cases, compare, footprint, plain, probes
from grader.grading import grade, submission
from grader.hints import collectives
from grader.workers import runner, verification, verifier
from grader.workers.run import Run, Source
from grader.workers.sandbox import DEFAULT_LIMITS, DEFAULT_SANDBOX, Limits

DEVICES = 2
WHOLE_EVERYWHERE = set(whole_on_every_device.EXERCISES)


def psum_program(block_sum=lambda b: b.sum(), x=None) -> dict:
    """A serialized program, as a worker on 2 devices sends it: a shard_map adding up
    ``block_sum`` of each block with one psum (by default, the sum of ``x``, ``arange(4)``)."""
    mesh = jax.make_mesh((DEVICES,), ("data",), devices=jax.devices()[:DEVICES],
                         axis_types=(jax.sharding.AxisType.Auto,))
    fn = jax.shard_map(lambda b: jax.lax.psum(block_sum(b), "data"), mesh=mesh,
                       in_specs=P("data"), out_specs=P())
    x = jnp.arange(4.0) if x is None else x
    return plain.to_plain(plain.Unverified("hlo_collectives", probes.Program.of(fn, x).serialize()))


def run_of(outcomes: dict, reference: Run | None = None) -> Run:
    result = Run(DEVICES, outcomes=outcomes)
    try:
        verification.verify(result, DEFAULT_LIMITS, DEFAULT_SANDBOX, reference)
    finally:
        verification.VERIFIERS.close()
    return result


@pytest.mark.slow
def test_programs_are_measured_and_bad_ones_fail_alone():
    """Is a good program measured in place, while bytes that are not a program, a program
    tag whose bytes are not text, a verified measurement the worker claims to have taken
    itself, and an unknown measure each fail only their own case, with a reason?"""
    good = psum_program()
    forged = {"verified": plain.to_plain({"all-reduce": 1})}
    garbage = {"program": {"measure": "hlo_collectives", "blob": "bm90IGEgcHJvZ3JhbQ=="}}
    unknown = {"program": {"measure": "open", "blob": good["program"]["blob"]}}
    malformed = {"program": ["not", "a", "dict"]}
    number = {"program": {"measure": "hlo_collectives", "blob": 5}}
    result = run_of({
        "a": {"ok": True, "data": plain.to_plain({"collectives": "X"})},
        "bad": {"ok": True, "data": {"dict": {"collectives": garbage}}},
        "forged": {"ok": True, "data": {"dict": {"collectives": forged}}},
        "unknown": {"ok": True, "data": unknown},
        "malformed": {"ok": True, "data": {"dict": {"collectives": malformed}}},
        "number": {"ok": True, "data": number},
        "good": {"ok": True, "data": {"dict": {"values": plain.to_plain([1.0]),
                                               "collectives": good}}},
        "top": {"ok": True, "data": good},
    })
    outcomes = result.outcomes
    assert outcomes["a"]["ok"]  # nothing to verify: left as it was
    assert outcomes["bad"] == {"ok": False, "unverified": outcomes["bad"]["unverified"]}
    assert outcomes["forged"] == {"ok": False, "unverified": "it claims to be verified"}
    assert outcomes["unknown"] == {"ok": False, "unverified": "no such measure"}
    assert outcomes["number"] == {"ok": False, "unverified": "it is not a program"}
    with pytest.raises(plain.NotPlain, match="not verified"):  # left as sent: it cannot count
        plain.from_plain(outcomes["malformed"]["data"])
    counts = plain.from_plain(outcomes["good"]["data"])["collectives"]
    assert counts["all-reduce"] == 1 and sum(counts.values()) == 1
    assert plain.verified_paths(outcomes["good"]["data"]) == {"/collectives"}
    assert plain.verified_paths(outcomes["top"]["data"]) == {"/"}
    assert result.unfinished is None


@pytest.mark.slow
def test_a_program_must_compute_what_the_reference_computes_on_new_inputs():
    """Is each program run next to the reference's program of its case, on inputs the
    submission never saw: is one computed another way measured and left to pass, while one
    that gives the reference's result only on the test's own input (its psum decorative), one
    whose psum adds the wrong values, and one made for other arguments are measured but marked
    with the reason they cannot pass? And does one the reference took no such measure of (at
    that place, or by that measure) fail unmeasured?"""
    want = psum_program()
    compared = ("other_way", "decoy", "args", "wrong", "other_measure")
    reference = Run(DEVICES, programs={
        (case, (), "hlo_collectives"): want["program"]["blob"] for case in compared})
    summarised = {"program": {**want["program"], "measure": "summarise"}}
    result = run_of({
        "other_way": {"ok": True, "data": psum_program(lambda b: b[::-1].sum())},
        "decoy": {"ok": True, "data": psum_program(lambda b: b[0] * 0 + 6.0 / DEVICES)},
        "args": {"ok": True, "data": psum_program(x=jnp.arange(6.0))},
        "wrong": {"ok": True, "data": psum_program(lambda b: b[0])},
        "other_measure": {"ok": True, "data": summarised},
        "other_place": {"ok": True, "data": {"dict": {"extra": want}}},
        "unchecked": {"ok": True, "data": want},  # a case the reference measured nothing of
    }, reference)
    outcomes = result.outcomes
    for case, why in [("other_measure", "the test takes no measure 'summarise' there"),
                      ("other_place", "the test takes no measure 'hlo_collectives' there"),
                      ("unchecked", "the test takes no measure 'hlo_collectives' there")]:
        assert outcomes.pop(case) == {"ok": False, "unverified": why}
    for case in outcomes:
        assert outcomes[case]["ok"]
        assert plain.from_plain(outcomes[case]["data"])["all-reduce"] == 1
    assert "differs" not in outcomes["other_way"]
    assert outcomes["decoy"]["differs"] == "its result differs from the reference's"
    assert outcomes["wrong"]["differs"] == outcomes["decoy"]["differs"]
    assert outcomes["args"]["differs"] == (
        "it takes other arguments than the reference solution's program")


def test_a_collective_that_carries_nothing_does_not_count():
    """A dot computed whole on every device with a psum added as 0 * psum, or a psum of zeros
    added: the result is right on any input, but does it stay the same when the all-reduce
    moves nothing, and is that the reason given, while an honest psum (of one value, or of
    two at once), an all-gather (of a value per device) the reference has no kind of, and a
    psum on one device (which moves nothing by its nature) are left alone?"""
    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    split, whole = (P("data"), P("data")), P()

    def over_mesh(body, out_specs=whole):
        return jax.shard_map(body, mesh=mesh, in_specs=split, out_specs=out_specs)

    honest = over_mesh(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"))
    programs = {
        "times_zero": lambda v1, v2: jnp.vdot(v1, v2) + 0 * honest(v1, v2),
        "plus_zeros": lambda v1, v2: jnp.vdot(v1, v2) + over_mesh(
            lambda a, b: jax.lax.psum(jnp.vdot(a, b) * 0, "data"))(v1, v2),
        "two_at_once": lambda v1, v2: sum(over_mesh(lambda a, b: jax.lax.psum(
            (jnp.vdot(a, b) / 2, jnp.vdot(a, b) / 2), "data"), (P(), P()))(v1, v2)),
        "decorative_two": lambda v1, v2: jnp.vdot(v1, v2) + 0 * sum(over_mesh(
            lambda a, b: jax.lax.psum((jnp.vdot(a, b), a.sum()), "data"), (P(), P()))(v1, v2)),
        "gathers_too": over_mesh(lambda a, b: jax.lax.psum(jnp.vdot(a, b) + jax.lax.all_gather(
            a.sum(), "data").sum() * 0, "data")),
    }
    x = jnp.arange(16.0)
    reference = probes.Program.of(honest, x, x)
    why = {name: compare.differs(probes.Program.of(fn, x, x), reference, seed=3)
           for name, fn in programs.items()}
    nothing = "its result stays the same when its all-reduce moves nothing, so that " \
              "all-reduce carries nothing"
    assert why == {"times_zero": nothing, "plus_zeros": nothing, "two_at_once": None,
                   "decorative_two": nothing, "gathers_too": None}
    one = jax.make_mesh((1,), ("data",), devices=jax.devices()[:1],
                        axis_types=(jax.sharding.AxisType.Auto,))
    alone, reversed_alone = (
        probes.Program.of(jax.shard_map(lambda b, f=f: jax.lax.psum(f(b).sum(), "data"),
                                        mesh=one, in_specs=P("data"), out_specs=P()), x)
        for f in (lambda b: b, lambda b: b[::-1]))
    assert alone.identity != reversed_alone.identity  # compared, not taken as one program
    assert compare.differs(alone, reversed_alone, seed=3) is None  # nothing can move


def test_a_copy_of_the_reference_program_is_taken_as_it_and_measured_once(monkeypatch):
    """A copy of the reference's code, from other lines of another file, is the reference's
    program: is it found to compute the same without being run, and is each measure of the
    programs of one identity taken once per verifier, while another program is run and
    measured?"""
    mesh = jax.make_mesh((8,), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    code = ("import jax\nfrom jax.sharding import PartitionSpec as P\n"
            "def total(x, mesh):\n    return jax.shard_map(lambda b: jax.lax.psum(b.sum(), "
            "'data'), mesh=mesh, in_specs=P('data'), out_specs=P())(x)\n")
    x = jnp.arange(16.0)
    copies = []
    for file, blank in [("/reference/a.py", 0), ("/student/b.py", 7)]:
        found: dict = {}
        exec(compile("\n" * blank + code, file, "exec"), found)  # noqa: S102 - our own code
        blob = probes.Program.of(lambda x, f=found["total"]: f(x, mesh), x).serialize()
        copies.append(probes.Program.load(blob))
    other = probes.Program.of(jax.shard_map(lambda b: jax.lax.psum(b[::-1].sum(), "data"),
                                            mesh=mesh, in_specs=P("data"), out_specs=P()), x)
    taken = []
    monkeypatch.setitem(probes.MEASURES, "counted",
                        lambda program: taken.append(program) or len(program.module))
    ran = []
    monkeypatch.setattr(probes.Program, "run", lambda self, inputs: ran.append(self) or [])
    mine, theirs = copies
    assert compare.differs(mine, theirs, seed=1) is None and ran == []
    compare.differs(other, theirs, seed=1)
    assert ran == [theirs, other]  # run side by side (the reference first, for its record)
    first = verifier._take("counted", theirs)
    assert verifier._take("counted", mine) == first == {"ok": True, "data": first["data"]}
    assert verifier._take("counted", other)["ok"] and taken == [theirs, other]


@pytest.mark.parametrize("devices", [8, 4, 2])
def test_a_program_whose_devices_each_do_the_whole_work_does_not_count(devices):
    """A dot computed whole on every device from vectors split over them, whatever hides the
    arithmetic (a psum of its share, a ring that passes blocks around, a loop whose turns are
    only known at run time, a name scope that poses as the compiler's count of a loop's
    turns): from 4 devices on, is each held to the bytes the reference's devices receive,
    with the reason given, while split dots written otherwise, and anything on 2 devices, are
    left alone?"""
    mesh = jax.make_mesh((devices,), ("data",), devices=jax.devices()[:devices],
                         axis_types=(jax.sharding.AxisType.Auto,))
    ring = [(i, (i + 1) % devices) for i in range(devices)]

    def over_mesh(body, specs=None):
        specs = specs or (P("data"), P("data"))
        return jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=P())

    def passes_blocks(a, b):
        def turn(_, carry):
            total, mine, theirs = carry
            return (total + jnp.vdot(mine, theirs), jax.lax.ppermute(mine, "data", ring),
                    jax.lax.ppermute(theirs, "data", ring))
        start = (jax.lax.pcast(0.0, ("data",), to="varying"), a, b)
        return jax.lax.psum(jax.lax.fori_loop(0, devices, turn, start)[0], "data") / devices

    def gathered(a):
        return jax.lax.all_gather(a, "data", tiled=True)

    def turns_unknown(a, b):
        turns = (a[0] > -1e30).astype(jnp.int32)  # 1, but only the running program knows
        return jax.lax.fori_loop(0, turns, lambda i, t: t + jax.lax.psum(
            jnp.vdot(gathered(a * (i + 1)), gathered(b)) / devices, "data"), 0.0)

    def forges_a_count(a, b):
        with jax.named_scope('"known_trip_count":{"n":"1"}'):
            return jax.lax.fori_loop(0, devices, lambda i, t: t + jax.lax.psum(
                jnp.vdot(a, gathered(b * i)[:a.size]), "data"), 0.0)

    honest = over_mesh(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"))
    whole = over_mesh(lambda a, b, both: jax.lax.psum(jnp.vdot(*both) / devices, "data"),
                      (P("data"), P("data"), P()))
    programs = {
        "divides_then_sums": lambda v1, v2: whole(v1, v2, (v1, v2)),
        "passes_blocks": over_mesh(passes_blocks),
        "turns_unknown": over_mesh(turns_unknown),
        "split_otherwise": over_mesh(lambda a, b: jax.lax.psum((a * b).sum(), "data")),
        "sums_a_vector": over_mesh(lambda a, b: jax.lax.psum(a * b, "data").sum()),
    }
    x = jax.device_put(jnp.arange(512.0), jax.NamedSharding(mesh, P("data")))  # split
    reference = probes.Program.of(honest, x, x)
    why = {name: compare.differs(probes.Program.of(fn, x, x), reference, seed=5)
           for name, fn in programs.items()}
    forged = footprint.footprint(probes.Program.of(over_mesh(forges_a_count), x, x))
    gathered_once = 4 * (x.size - x.size // devices)
    assert forged["received"]["all-gather"] == devices * gathered_once, forged
    assert why.pop("split_otherwise") is None and why.pop("sums_a_vector") is None
    if devices < footprint.BOUNDS_FROM:
        assert set(why.values()) == {None}, why
        return
    assert set(why) == {"divides_then_sums", "passes_blocks", "turns_unknown"}
    for name in ("divides_then_sums", "passes_blocks"):
        assert why[name].endswith("it gathers what it should keep split"), why
    assert "number of turns the compiler cannot tell" in why["turns_unknown"], why


def test_a_program_that_differs_fails_with_the_judges_hint_or_with_the_reason():
    """Does a case whose program computes something else fail with the judge's own message and
    hint when the judge fails (the all-reduce is missing), and otherwise with the reason its
    program does not count?"""
    found = next(c for c in cases.for_exercise("distributed_dot")
                 if c.name == "compiles_to_an_all_reduce")
    want = {"ok": True, "data": {"verified": plain.to_plain({"all-reduce": 1})}}
    why = "its result differs from the reference's"
    decoy = {"ok": True, "data": want["data"], "differs": why}
    decided = cases.decide(found, {8: decoy}, {8: want})
    assert decided.status == msg.FAILED
    assert decided.message == msg.MSG_DIFFERS.format(name="distributed_dot", why=why)
    forgot = {**decoy, "data": {"verified": plain.to_plain({"all-reduce": 0})}}
    decided = cases.decide(found, {8: forgot}, {8: want})
    assert decided.status == msg.FAILED and decided.hint == collectives.HINT_FORGOT_PSUM
    assert cases.decide(found, {8: want}, {8: want}).status == msg.PASSED


@pytest.mark.slow
def test_correct_functions_written_apart_agree_with_the_reference_on_new_inputs():
    """Handed in as a submission, do correct functions written independently of the
    solutions (alternatives.py) pass every test of lesson 3 on 8 devices: are their
    programs, run next to the reference solutions' on new inputs, found to agree?"""
    chosen = [c for c in cases.load() if c.exercise in alternatives.CORRECT
              and 8 in c.device_counts]
    try:
        reference = runner.run(submission.load(grade.SOLUTIONS).sources, chosen, 8,
                               DEFAULT_LIMITS)
        source = Path(alternatives.__file__).read_text()
        theirs = runner.run([Source("alternatives.py", "alternatives.py", source)],
                            chosen, 8, DEFAULT_LIMITS, reference=reference)
    finally:
        verification.VERIFIERS.close()
    checked = {case for case, *_ in reference.programs}
    assert checked and checked == {case for case, *_ in theirs.programs}
    for c in chosen:
        decided = cases.decide(c, {8: theirs.outcomes[c.id]}, {8: reference.outcomes[c.id]})
        assert decided.status == msg.PASSED, (c.id, decided.message)


@pytest.mark.slow
def test_results_computed_whole_on_every_device_earn_no_marks_for_how_they_compute():
    """Handed in as a submission, functions of lessons 3, 5 and 7 that compute the whole
    answer on every device and dress it with a collective that carries something
    (whole_on_every_device.py): do they keep exactly the points of the tests of what they
    compute, and lose every test of how, each with the bound it goes past?"""
    chosen = [c for c in cases.load() if c.exercise in WHOLE_EVERYWHERE and 8 in c.device_counts]
    try:
        reference = runner.run(submission.load(grade.SOLUTIONS).sources, chosen, 8,
                               DEFAULT_LIMITS)
        source = Path(whole_on_every_device.__file__).read_text()
        theirs = runner.run([Source("whole.py", "whole.py", source)], chosen, 8,
                            DEFAULT_LIMITS, reference=reference)
    finally:
        verification.VERIFIERS.close()
    how = {case for case, *_ in reference.programs}
    assert {c.exercise for c in chosen if c.id in how} == WHOLE_EVERYWHERE
    points = dict.fromkeys(WHOLE_EVERYWHERE, 0)
    for c in chosen:
        decided = cases.decide(c, {8: theirs.outcomes[c.id]}, {8: reference.outcomes[c.id]})
        points[c.exercise] += decided.points
        if c.id in how:  # failed, with its judge's message or with the bound
            why = theirs.outcomes[c.id].get("differs", "")
            assert decided.status == msg.FAILED, (c.id, decided.message)
            assert re.search(r"each device (holds|receives) [\d,]+ bytes", why), (c.id, why)
        else:
            assert decided.status == msg.PASSED, (c.id, decided.message)
    assert points == {name: sum(c.points for c in chosen if c.exercise == name
                                and c.id not in how) for name in WHOLE_EVERYWHERE}


def test_a_program_on_explicitly_placed_inputs_takes_what_one_on_auto_inputs_takes():
    """On an Explicit mesh the sharding is part of an input's type (float32[16@data]): is a
    program whose inputs the student placed there compared with, and found to agree with, a
    reference on Auto-placed inputs, while one taking another shape still does not?"""
    explicit = jax.make_mesh((DEVICES,), ("data",), devices=jax.devices()[:DEVICES])
    auto = jax.sharding.Mesh(jax.devices()[:DEVICES], ("data",))

    def dot_on(mesh, x):
        placed = jax.device_put(x, jax.NamedSharding(mesh, P("data")))
        return probes.Program.of(jax.shard_map(
            lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"), mesh=mesh,
            in_specs=(P("data"), P("data")), out_specs=P()), placed, placed)

    x = jnp.arange(16.0)
    theirs, mine = dot_on(auto, x), dot_on(explicit, x)
    assert str(mine.exported.in_avals[0]) != str(theirs.exported.in_avals[0])  # the types differ
    assert compare.differs(mine, theirs, seed=2) is None
    assert compare.differs(dot_on(explicit, jnp.arange(8.0)), theirs, seed=2) == (
        "it takes other arguments than the reference solution's program")


def test_fresh_inputs_differ_by_seed_and_cover_every_kind_of_input():
    """Are the verifier's inputs random (another seed, other values), of the exact shapes and
    types asked, keys included?"""
    avals = [jax.core.ShapedArray((3, 2), jnp.float32), jax.core.ShapedArray((4,), jnp.uint32),
             jax.core.ShapedArray((5,), jnp.int32), jax.core.ShapedArray((2,), jnp.bool_),
             jax.typeof(jax.random.split(jax.random.key(0), 3))]
    first, again, other = (compare.fresh_inputs(avals, seed) for seed in (1, 1, 2))
    for aval, x, y, z in zip(avals, first, again, other, strict=True):
        assert (x.shape, x.dtype) == (aval.shape, aval.dtype)
        data = [jax.random.key_data(v) if aval.dtype == avals[-1].dtype else v for v in (x, y, z)]
        assert np.array_equal(data[0], data[1])
    assert not np.array_equal(first[0], other[0])
    assert first[2].min() >= -100 and first[2].max() <= 100


def test_only_sharding_annotations_and_lapack_calls_are_run():
    """Does the verifier refuse to run a program with a custom call other than sharding
    annotations and LAPACK (a call back into Python, say), including one printed in another
    form or whose location names a safe target?"""
    module = (' %0 = stablehlo.custom_call @Sharding(%arg0) : tensor<4xf32>\n'
              ' %1:2 = stablehlo.custom_call @lapack_sgetrf_ffi(%0) loc("custom_call @x")\n')
    assert compare._unsafe_calls(module) == set()
    callback = module + ' %2 = stablehlo.custom_call @xla_ffi_python_cpu_callback(%1)\n'
    assert compare._unsafe_calls(callback) == {"xla_ffi_python_cpu_callback"}
    posing = module + ' %2 = stablehlo.custom_call @"evil"(%1) loc("custom_call @Sharding(")\n'
    generic = module + ' %2 = "stablehlo.custom_call"(%1) {call_target_name = "Sharding"}\n'
    for hidden in (posing, generic):
        assert compare._unsafe_calls(hidden) == {"a custom call in an unusual form"}


def test_a_function_that_calls_back_into_python_is_told_why_it_cannot_be_measured():
    """Does a function with jax.debug.print get a clear reason instead of jax.export's
    NotImplementedError (which would read as "not attempted")?"""
    def noisy(x):
        jax.debug.print("x = {}", x)
        return x * 2

    with pytest.raises(ValueError, match="jax.debug.print"):
        probes.Program.of(noisy, jnp.arange(4.0))


def forever(block):
    """A block sum that loops without end."""
    def body(state):
        return state[0] + 1, jnp.sin(state[1])
    return jax.lax.while_loop(lambda state: state[0] >= 0, body, (0, block.sum()))[1]


@pytest.mark.slow
def test_a_program_that_never_ends_costs_its_own_cases_and_leaves_nothing_running():
    """A program whose run never ends, in a run with 3 s per exercise: does it cost its own
    case only, with the reason, while another exercise's program is still measured (by a
    fresh verifier), and is every process of the verifier it held killed, however long the
    program would run?"""
    import threading

    from test_sandbox import processes_with_home

    good, endless = psum_program(), psum_program(forever)
    limits = Limits(exercise=3)
    ids = {"endless": "halo_difference:endless", "good": "distributed_dot:good"}
    reference = Run(DEVICES, programs={(i, (), "hlo_collectives"): good["program"]["blob"]
                                              for i in ids.values()})
    result = Run(DEVICES, outcomes={ids["endless"]: {"ok": True, "data": endless},
                                           ids["good"]: {"ok": True, "data": good}})
    started = []
    real_start = verification.VERIFIERS.start

    def recording(*args):
        started.append(real_start(*args))
        return started[-1]

    verification.VERIFIERS.start = recording
    try:
        verifying = threading.Thread(target=verification.verify,
                                     args=(result, limits, DEFAULT_SANDBOX, reference))
        verifying.start()
        verifying.join(timeout=120)
        assert not verifying.is_alive(), "the grader waited on the program"
    finally:
        verification.VERIFIERS.start = real_start
        verification.VERIFIERS.close()
    assert result.outcomes[ids["endless"]] == {
        "ok": False, "unverified": msg.MSG_VERIFIER_TIME_UP.format(seconds=3)}
    assert result.outcomes[ids["good"]]["ok"] and "differs" not in result.outcomes[ids["good"]]
    assert len(started) == 2 and started[0].process.poll() is not None
    assert processes_with_home([started[0].home.name]) == []


@pytest.mark.slow
def test_a_verifier_serves_one_run_after_another_until_it_fails():
    """Is the verifier of one run reused by the next, and one that failed not reused?"""
    kind = (DEVICES, DEFAULT_LIMITS, DEFAULT_SANDBOX)
    try:
        first = Run(DEVICES, outcomes={"a": {"ok": True, "data": psum_program()}})
        verification.verify(first, *kind[1:])
        [serving] = verification.VERIFIERS.idle[kind]
        second = Run(DEVICES, outcomes={"b": {"ok": True, "data": psum_program()}})
        verification.verify(second, *kind[1:])
        assert verification.VERIFIERS.idle[kind] == [serving] and second.outcomes["b"]["ok"]
        serving.kill()  # a verifier that died meanwhile is replaced
        third = Run(DEVICES, outcomes={"c": {"ok": True, "data": psum_program()}})
        verification.verify(third, *kind[1:])
        assert third.outcomes["c"]["ok"] and verification.VERIFIERS.idle[kind] != [serving]
    finally:
        verification.VERIFIERS.close()
    assert verification.VERIFIERS.idle == {} and serving.process.poll() is not None


@pytest.mark.slow
def test_a_verifier_outlives_the_thread_that_started_it():
    """Does a verifier started by one grading thread still serve a run in another thread
    once the first has ended (a sandbox dying with its parent thread would be killed)?"""
    import threading

    kind = (DEVICES, DEFAULT_LIMITS, DEFAULT_SANDBOX)
    try:
        first = Run(DEVICES, outcomes={"a": {"ok": True, "data": psum_program()}})
        starter = threading.Thread(target=verification.verify, args=(first, *kind[1:]))
        starter.start()
        starter.join()
        [serving] = verification.VERIFIERS.idle[kind]
        second = Run(DEVICES, outcomes={"b": {"ok": True, "data": psum_program()}})
        verification.verify(second, *kind[1:])
        assert first.outcomes["a"]["ok"] and second.outcomes["b"]["ok"], second.outcomes
        assert verification.VERIFIERS.idle[kind] == [serving]
    finally:
        verification.VERIFIERS.close()


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


def test_a_hints_material_left_out_of_a_students_run_need_not_be_verified():
    """A hint's material (plain.Material) is made for the reference alone, verified there: is
    a student's run that left it out judged on its own measures, while one that has the key,
    unverified, still fails, as does any other measure left out?"""
    found = next(c for c in cases.for_exercise("remat_mlp_grads")
                 if c.name == "keeps_about_half_the_temporaries")
    memory = {"argument": 8, "output": 8, "temp": 100}
    want = {"ok": True, "data": plain.to_plain(
        {"memory": plain.Verified(memory), "_plain": plain.Verified({**memory, "temp": 200})})}
    own = {"memory": plain.Verified(memory)}
    assert cases.decide(found, {8: {"ok": True, "data": plain.to_plain(own)}},
                        {8: want}).status == msg.PASSED
    unverified = {**own, "_plain": {**memory, "temp": 200}}
    assert cases.decide(found, {8: {"ok": True, "data": plain.to_plain(unverified)}},
                        {8: want}).message == msg.MSG_NOT_VERIFIED.format(name="remat_mlp_grads")
    bare = {"memory": memory}
    assert cases.decide(found, {8: {"ok": True, "data": plain.to_plain(bare)}},
                        {8: want}).status == msg.FAILED


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
