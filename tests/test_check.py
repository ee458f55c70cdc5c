"""check(fn) in the student's own kernel: the public tests of one exercise, in-process.

conftest.py gives this process 8 CPU devices, for which expected values are stored. The
correct functions (alternatives.py) are written for these tests, independently of solutions/.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import whole_on_every_device
from alternatives import CORRECT, nan_mean_var
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from grader import messages as msg
from grader.check import check
from grader.course import BY_NAME, EXERCISES
from grader.devices import WORKER_ENV
from grader.framework import cases, expected
from grader.hints import collectives, common, error_hint
from grader.public.collectives import dot_inputs


@pytest.fixture(scope="module")
def correct_results():
    return {name: check(fn) for name, fn in CORRECT.items()}


def named(name: str, fn):
    fn.__name__ = fn.__qualname__ = name
    return fn


# --- correct, stubbed and wrong functions ---------------------------------------------------
def test_every_lesson_3_exercise_has_a_correct_function_here():
    """Do the functions of this file cover every exercise of lesson 3?"""
    assert sorted(CORRECT) == sorted(e.name for e in EXERCISES if e.lesson == "03_collectives")


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_correct_function_passes_every_public_test(correct_results, name):
    """Does a correct implementation pass all public tests of its exercise, full marks?"""
    result = correct_results[name]
    public = cases.for_exercise(name, hidden=False)
    assert result.name == name
    assert [t.test for t in result.tests] == [c.name for c in public]
    assert result.status == msg.PASSED, str(result)
    assert result.points == result.max_points == sum(c.points for c in public) > 0
    graded = sorted(BY_NAME[name].device_counts, reverse=True)  # the others in a process
    assert all(t.devices == graded for t in result.tests)


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_stub_is_not_attempted_and_scores_zero(name):
    """Does a function that still raises NotImplementedError count as not attempted?"""

    def stub(*args, **kwargs):
        raise NotImplementedError

    result = check(named(name, stub))
    assert result.status == msg.NOT_ATTEMPTED
    assert result.points == 0 and result.max_points > 0
    assert all(t.status == msg.NOT_ATTEMPTED for t in result.tests)


def test_a_dot_without_psum_gets_the_forgot_psum_hint():
    """Is a distributed_dot that never adds up the devices' results told it forgot the psum,
    with its value shown next to the expected one?"""

    def distributed_dot(v1, v2):
        mesh = Mesh(np.array(jax.devices()), ("data",))
        return jax.shard_map(
            jnp.vdot, mesh=mesh, in_specs=(P("data"), P("data")), out_specs=P(), check_vma=False
        )(v1, v2)

    result = check(distributed_dot)
    assert result.status == msg.FAILED and result.points == 0
    assert result.hint == collectives.HINT_FORGOT_PSUM
    first = result.first_failure
    v1, v2, first_block = dot_inputs(2)
    assert float(first.got) == pytest.approx(first_block)
    assert float(first.want) == pytest.approx(float(np.vdot(np.asarray(v1), np.asarray(v2))))


def test_a_halo_exchange_the_wrong_way_gets_the_direction_hint_and_no_credit_for_how():
    """Are halos sent the wrong way round the ring (last elements to device i - 1, first
    ones to i + 1) told so, and their collective-permutes, as small as the reference's, not
    reported as passed (the grader would fail them: a program that computes the wrong values
    earns nothing for how it computes)?"""

    def halo_difference(x):
        n = jax.device_count()
        mesh = Mesh(np.array(jax.devices()), ("data",))
        forwards = [(i, (i + 1) % n) for i in range(n)]
        backwards = [(i, (i - 1) % n) for i in range(n)]

        def difference(block):
            before = jax.lax.ppermute(block[-1:], "data", backwards)
            after = jax.lax.ppermute(block[:1], "data", forwards)
            padded = jnp.concatenate([before, block, after])
            return (padded[2:] - padded[:-2]) / 2

        return jax.shard_map(difference, mesh=mesh, in_specs=P("data"),
                             out_specs=P("data"))(x)

    result = check(halo_difference)
    assert result.status == msg.FAILED and result.points == 0
    assert result.hint == collectives.HINT_WRONG_DIRECTION
    how = [t for t in result.tests if t.test == "sends_one_element_each_way"]
    assert [t.message for t in how] == [msg.MSG_HOW_NEEDS_VALUES.format(name="halo_difference")]


def test_check_never_passes_a_test_of_how_for_a_decoy():
    """A dot computed on the host that hands jax.jit a decoy psum (the grader fails its tests
    of how it computes, having run the decoy): does check() fail them too, where the values
    are wrong, and pass them where a right function has the same collectives?"""

    def distributed_dot(v1, v2):
        mesh = Mesh(np.array(jax.devices()), ("data",))
        return jax.shard_map(lambda a, b: jax.lax.psum(jnp.vdot(a, a), "data"), mesh=mesh,
                             in_specs=(P("data"), P("data")), out_specs=P())(v1, v2)

    result = check(distributed_dot)
    how = [t for t in result.tests if t.test == "compiles_to_an_all_reduce"]
    assert [t.status for t in how] == [msg.FAILED] and result.points == 0
    right = check(CORRECT["distributed_dot"])
    assert right.points == right.max_points


@pytest.mark.parametrize("name", sorted(whole_on_every_device.EXERCISES))
def test_check_compares_programs_with_the_reference_as_the_grader_does(name):
    """An answer computed whole on every device, dressed with a collective masked to one
    device (the grader fails its tests of how it computes, by the bounds on what each device
    holds and receives): does check() fail them too, from the reference's stored record,
    with the same reason, and keep the points of its right values?"""
    fn = getattr(whole_on_every_device, name)
    result = check(fn)
    how = {c.name for c in cases.for_exercise(name, hidden=False)
           if expected.load()[c.id][str(jax.device_count())].get("programs")}
    assert how, name
    for test in result.tests:
        if test.test in how:
            assert test.status == msg.FAILED, test
        else:
            assert test.status == msg.PASSED, test
    assert any("it keeps whole what should be split" in t.message for t in result.tests)


def test_check_fails_a_collective_that_carries_nothing_as_the_grader_does():
    """A dot computed whole on every device plus 0 * psum: the values are right and the
    all-reduce is there. Does check() run the grader's perturbation (the all-reduce moving
    nothing) and fail the test of how it computes with its reason, where it once passed?"""

    def distributed_dot(v1, v2):
        mesh = Mesh(np.array(jax.devices()), ("data",))
        psum = jax.shard_map(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "data"), mesh=mesh,
                             in_specs=(P("data"), P("data")), out_specs=P())
        return jnp.vdot(v1, v2) + 0 * psum(v1, v2)

    result = check(distributed_dot)
    how = [t for t in result.tests if t.test == "compiles_to_an_all_reduce"]
    assert [t.status for t in how] == [msg.FAILED], result
    assert "carries nothing" in how[0].message
    assert result.points == result.max_points - how[0].max_points


def test_forgetting_to_return_fails_instead_of_crashing_check():
    """Does a fixed_pmap_port that returns None fail its tests rather than make check raise?"""

    def fixed_pmap_port(x, w):
        x @ w - (x @ w).mean(axis=0)

    result = check(fixed_pmap_port)
    assert result.status == msg.FAILED and result.points == 0
    assert "None" in result.first_failure.got


def test_an_error_is_reported_with_its_type_and_message():
    """Does an exception in the student's function become an error naming it, not a raise?"""

    def nan_mean_var(x):
        raise ZeroDivisionError("the block was empty")

    result = check(nan_mean_var)
    assert result.points == 0
    assert all(t.status == msg.ERROR for t in result.tests)
    assert "ZeroDivisionError" in result.message and "the block was empty" in result.message


def test_a_shard_map_without_its_psum_is_told_jaxs_whole_reason():
    """Leaving the psum out of nan_mean_var makes JAX refuse out_specs=P(): does check show
    the whole of JAX's message (the explanation comes after its first colon) without the
    names of JAX's own functions, and the hint to all-reduce first?"""

    def nan_mean_var(x):
        mesh = Mesh(jax.devices(), ("data",))
        return jax.shard_map(lambda b: (jnp.nanmean(b), jnp.nanvar(b)), mesh=mesh,
                             in_specs=P("data"), out_specs=(P(), P()))(x)

    result = check(nan_mean_var)
    assert result.points == 0 and result.first_failure.status == msg.ERROR
    said = result.message
    assert f"given the mesh: The mesh given has shape ({jax.device_count()},)" in said
    assert "could not infer replication" in said and "check_vma=False" in said
    assert "_rem_singleton" not in said and "\n" not in said
    assert result.hint == common.HINT_NOT_REPLICATED


@pytest.mark.parametrize("text, shown", [
    ("boom\n--------------------\nFor simplicity, JAX has removed its internal frames", "boom"),
    ("applied to the function '_inner' was bad:\n\nbecause", "was bad: because"),
    ("first part\n\nsecond part", "first part. second part"),
])
def test_an_error_message_is_one_readable_line(shown, text):
    """Does a message lose JAX's footer and internal names, and keep every paragraph?"""
    def nan_mean_var(x):
        raise ValueError(text)

    assert check(nan_mean_var).message == f"`nan_mean_var` raised ValueError: {shown}"


def test_a_long_error_message_is_cut_after_a_whole_sentence():
    """Is a message longer than a screenful cut at a sentence's end, and said to be cut?"""
    sentence = "This sentence explains one more thing about the error. "

    def nan_mean_var(x):
        raise ValueError(sentence * 40)

    said = check(nan_mean_var).message
    assert 300 < len(said) < 800 and said.endswith("error. ...")


def test_a_kernel_with_other_devices_than_the_grader_is_told_so(tmp_path):
    """On a kernel whose set-up cell did not give it 8 devices, does check run the public
    tests on the kernel's device and on the grader's counts, or, where it stops at a failure
    on the kernel's, say on how many devices the grader runs that exercise?"""
    # lesson 1's is_congruent, graded on 8 devices only, from a file (check sends its source)
    (tmp_path / "lesson_1.py").write_text(
        "def is_congruent(x_shape, sharding_shape):\n"
        "    return len(x_shape) == len(sharding_shape) and all(\n"
        "        size % blocks == 0 for size, blocks in zip(x_shape, sharding_shape))\n")
    code = ("import jax\njax.config.update('jax_num_cpu_devices', 1)\n"
            f"import sys\nsys.path.insert(0, {str(tmp_path)!r})\n"
            "from lesson_1 import is_congruent\n"
            "from alternatives import CORRECT\nfrom grader.check import check\n"
            "for fn in (is_congruent, CORRECT['halo_difference']):\n"
            "    print(check(fn))\n    print(check(fn)._repr_html_())\n"
            "def halo_difference(x):\n    raise ValueError('not on one device')\n"
            "print(check(halo_difference))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True, cwd=Path(__file__).parent)
    said = done.stdout
    assert "is_congruent: passed" in said and "halo_difference: passed" in said
    assert said.count("[8, 1 devices]: passed") == 1  # is_congruent's test: graded on 8 only
    assert said.count("[8, 2, 1 devices]: passed") == 2  # halo_difference: all counts
    assert said.count("checked on this kernel's 1 device(s)") == 1  # the failure here
    assert "the grader runs this exercise on 8 and 2 devices" in said
    assert said.count("<b>Note:</b>") == 0


def test_a_kernel_with_the_graders_devices_gets_no_note(correct_results):
    """On the 8 devices the grader uses, does check add no note?"""
    assert all(r.note is None for r in correct_results.values())
    assert "note:" not in str(correct_results["halo_difference"])


def test_missing_expected_values_are_explained(monkeypatch):
    """Without stored expected values for this device count, is each test an error that
    says so, instead of a crash?"""
    stored = expected.load()
    monkeypatch.setattr(expected, "DEVICE_COUNTS", (1, 2, 4))
    monkeypatch.setattr(expected, "load", lambda: {
        case: {n: want for n, want in by_count.items() if n != "8"}
        for case, by_count in stored.items()})
    result = check(nan_mean_var)
    assert result.points == 0 and result.tests
    assert all(t.status == msg.ERROR and "no expected values are stored for 8" in t.message
               for t in result.tests)


def test_a_value_the_course_forgot_to_store_is_named_with_the_command_that_stores_it(
        monkeypatch):
    """A test whose expected value the maintainers did not store (a new test, no `make
    expected`): does check name that test and the command, and say it is not the student's
    mistake, rather than ask for another device count the kernel already has?"""
    stored = expected.load()
    forgotten = next(c for c in cases.for_exercise("nan_mean_var", hidden=False))
    monkeypatch.setattr(expected, "load", lambda: {
        case: by_count for case, by_count in stored.items() if case != forgotten.id})
    result = check(nan_mean_var)
    test = next(t for t in result.tests if t.test == forgotten.name)
    assert test.status == msg.ERROR and test.message == msg.MSG_NOT_STORED.format(
        test=forgotten.name, devices=8, lesson="03_collectives")
    assert "make expected" in test.message and "not your mistake" in test.message


# --- misuse ---------------------------------------------------------------------------------
def test_passing_the_name_as_a_string_is_a_type_error():
    """Does check('nan_mean_var') ask for the function itself?"""
    with pytest.raises(TypeError, match=r"check\(nan_mean_var\)"):
        check("nan_mean_var")


@pytest.mark.parametrize("what", ["not_an_exercise", "Shard_Map_Psum", ""])
def test_an_unknown_exercise_name_is_a_value_error(what):
    """Does an unknown exercise name, as a string, fail with the list of exercises?"""
    with pytest.raises(ValueError, match="halo_difference"):
        check(what)


def test_a_function_with_an_unknown_name_is_a_value_error():
    """Does a function (or lambda) whose name is no exercise fail with ValueError?"""

    def my_dot(v1, v2):
        return jnp.vdot(v1, v2)

    with pytest.raises(ValueError, match="my_dot"):
        check(my_dot)
    with pytest.raises(ValueError):
        check(lambda x: x)


def test_check_does_nothing_inside_a_grader_worker(monkeypatch):
    """Inside a grader worker, does check return None without running or raising?"""
    monkeypatch.setenv(WORKER_ENV, "1")
    calls = []

    def halo_difference(x):
        calls.append(x)
        return x

    assert check(halo_difference) is None
    assert check("not even an exercise") is None
    assert calls == []


# --- another JAX: the course's own code is never the student's mistake ----------------------
def jax_printer_moved(*args, **kwargs):
    raise AttributeError("'str' object has no attribute 'operation'")  # as on JAX 0.9.2


def test_a_program_is_read_the_public_way_where_jaxs_private_printer_moved(monkeypatch):
    """Where JAX's private printer of a program's text fails (a release that moved it), does
    the public printer give the same text, locations taken out, so that a correct function
    still passes every public test, tests of how it computes included?"""
    from jax._src.interpreters import mlir

    from grader.framework import hlo, probes

    v1, v2, _ = dot_inputs(2)
    program = probes.Program.of(CORRECT["distributed_dot"], v1, v2)
    text = program.module
    assert "loc(" in program.exported.mlir_module() and "loc(" not in text
    printer = mlir.module_to_string

    def moved(module, **options):  # the private form fails; what jax.export calls works
        return jax_printer_moved() if options else printer(module)

    monkeypatch.setattr(mlir, "module_to_string", moved)
    again = probes.Program.of(CORRECT["distributed_dot"], v1, v2)
    assert again.module == text
    assert hlo.without_locations('%0 = "a"() : () -> () loc("f(x)"(#loc1))\n'
                                 '#loc1 = loc("cell 3":4:5)\n') == '%0 = "a"() : () -> ()\n'
    result = check(CORRECT["distributed_dot"])
    assert result.status == msg.PASSED, str(result)


def test_a_failure_of_the_courses_own_code_is_not_the_students_mistake(monkeypatch):
    """Where the course's own use of JAX fails on this JAX, does check say so, naming JAX's
    version and the versions the course holds on, instead of failing the student's function
    or hinting at a mistake?"""
    from jax._src.interpreters import mlir

    from grader.devices import jax_range
    from grader.framework import hlo

    monkeypatch.setattr(mlir, "module_to_string", jax_printer_moved)
    monkeypatch.setattr(hlo, "without_locations", jax_printer_moved)
    result = check(CORRECT["distributed_dot"])
    assert result.status != msg.PASSED
    (broken,) = [t for t in result.tests if t.status != msg.PASSED]
    assert broken.status == msg.ERROR and broken.hint is None
    assert broken.message == msg.MSG_NOT_RUN.format(reason=msg.COURSE_FAILED.format(
        what="reading a program's StableHLO text", version=jax.__version__, held=jax_range(),
        error="AttributeError: 'str' object has no attribute 'operation'"))
    assert "not your function's doing" in str(result)


# --- renderings -----------------------------------------------------------------------------
def test_html_shows_the_status_and_the_public_tests_that_pass(correct_results):
    """Does the notebook rendering show the exercise, its status, and how many of its public
    tests pass on which device counts (not points: the grader's hidden tests give those)?"""
    result = correct_results["halo_difference"]
    page = result._repr_html_()
    assert 'data-status="passed"' in page
    assert "halo_difference" in page
    assert "(2 of 2 public tests pass, on 8 and 2 devices)" in page
    assert str(result).splitlines()[0] == (
        "halo_difference: passed (2 of 2 public tests pass, on 8 and 2 devices)")


def test_the_first_line_says_on_which_device_counts_the_tests_pass():
    """Where every public test passes on one device count and not on another, does the first
    line say so, counting tests; and does a grader's result still count points?"""
    from grader.framework.results import ExerciseResult, TestResult

    tests = [TestResult("a", 0, 2, msg.FAILED, devices=[2]), TestResult("b", 1, 1, msg.PASSED)]
    split = ExerciseResult("distributed_dot", tests, ran_on={8: True, 2: False})
    assert str(split).splitlines()[0] == ("distributed_dot: partial (1 of 2 public tests pass "
                                          "on every device count: it passes on 8 devices, "
                                          "fails on 2)")
    assert str(ExerciseResult("distributed_dot", tests)).splitlines()[0] == (
        "distributed_dot: partial (1/3)")
    assert "(1/3 points)" in ExerciseResult("distributed_dot", tests)._repr_html_()


def test_html_escapes_what_the_student_raised():
    """Is markup in an exception's message shown as text, not injected into the page?"""

    def distributed_dot(v1, v2):
        raise ValueError("<script>alert('x')</script> & <b>bold</b>")

    page = check(distributed_dot)._repr_html_()
    assert "<script>" not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;" in page and "&amp;" in page
    assert 'data-status="failed"' in page


def test_text_shows_yours_next_to_expected():
    """Does str() of a failed result show the student's value and the expected one?"""

    def fixed_pmap_port(x, w):
        h = x @ w  # stacked one slice per device, as pmap returns it
        return (h - h.mean(axis=0)).reshape(jax.device_count(), -1, w.shape[1])

    text = str(check(fixed_pmap_port))
    assert text.startswith("fixed_pmap_port: failed")
    assert "FAIL" in text
    assert "yours:" in text and "expected:" in text
    assert collectives.HINT_PORT_STACKED_ROWS in text


def test_text_of_a_passing_result_has_no_comparison(correct_results):
    """Does a passing result list its tests as ok, without yours/expected lines?"""
    text = str(correct_results["distributed_dot"])
    assert text.startswith("distributed_dot: passed")
    assert "FAIL" not in text and "yours:" not in text
    assert text.count("ok  ") == len(correct_results["distributed_dot"].tests)


# --- hints for the errors JAX raises on the usual mistakes ----------------------------------
def raised_by(action) -> str:
    """The text of the exception ``action()`` raises (what the grader matches hints on)."""
    with pytest.raises(Exception) as caught:  # noqa: PT011 - any error: its text is the point
        action()
    return str(caught.value)


def test_setting_the_device_count_after_jax_started_gets_the_restart_hint():
    """Do JAX's own refusal (jax_num_cpu_devices after the backend started) and
    use_cpu_devices' DeviceSetupError both get the hint to restart and set devices first?"""
    from grader.devices import DeviceSetupError, use_cpu_devices

    n = jax.device_count()  # the backend runs (with conftest's 8 devices)
    late = raised_by(lambda: jax.config.update("jax_num_cpu_devices", n + 1))
    assert error_hint(late) == common.HINT_DEVICES_SET_TOO_LATE
    with pytest.raises(DeviceSetupError) as too_few:
        use_cpu_devices(2 * n)
    assert error_hint(str(too_few.value)) == common.HINT_DEVICES_SET_TOO_LATE
    assert jax.device_count() == n


@pytest.mark.parametrize("rows, committed, hint", [
    (9, False, common.HINT_PMAP_INPUT),          # not a multiple of 8: pmap's own sharding fails
    (16, False, common.HINT_PMAP_SQUEEZE),       # a multiple: each device gets 2 rows, not 1
    (8, True, common.HINT_PMAP_INPUT),           # one per device, but committed to one device
])
def test_a_pmap_input_that_is_not_one_entry_per_device_gets_the_pmap_hint(rows, committed, hint):
    """pmap neither splits a batch nor moves a committed input: does each of its errors
    (leading axis not a multiple, a multiple, input placed elsewhere) get the pmap hint?"""
    batch = jnp.ones((rows, 3))
    if committed:
        batch = jax.device_put(batch, jax.devices()[-1])
    text = raised_by(lambda: jax.pmap(lambda row: row.sum())(batch))
    assert error_hint(text) == hint


def test_pmap_squeezing_a_batch_gets_the_pmap_hint_through_check():
    """Does a student's pmap over the whole (N, 3) batch fail check with the pmap hint?"""

    def distributed_dot(v1, v2):
        return jax.pmap(lambda a, b: jax.lax.psum(jnp.vdot(a, b), "i"), axis_name="i")(v1, v2)

    result = check(distributed_dot)
    assert result.points == 0
    assert {t.hint for t in result.tests if t.status == msg.ERROR} == {common.HINT_PMAP_SQUEEZE}


def test_a_spec_longer_than_the_rank_gets_the_spec_hint_on_auto_and_explicit_meshes():
    """A 3-entry spec on a 2-D array: does the Auto mesh's ValueError, the Explicit mesh's
    bare AssertionError, jit's in_shardings and shard_map's in_specs each get the hint?"""
    devices = np.array(jax.devices()).reshape(4, 2)
    auto = Mesh(devices, ("x", "y"))
    explicit = jax.make_mesh((4, 2), ("x", "y"))
    x, spec = jnp.zeros((8, 4)), P("x", None, "y")
    texts = {
        "auto": raised_by(lambda: jax.device_put(x, jax.NamedSharding(auto, spec))),
        "explicit": raised_by(lambda: jax.device_put(x, jax.NamedSharding(explicit, spec))),
        "jit": raised_by(lambda: jax.jit(lambda a: a,
                                         in_shardings=jax.NamedSharding(explicit, spec))(x)),
        "shard_map": raised_by(lambda: jax.shard_map(lambda b: b, mesh=auto, in_specs=spec,
                                                     out_specs=P("x"))(x)),
    }
    assert "rank at least 3" in texts["auto"]
    assert {name: error_hint(text) for name, text in texts.items()} == dict.fromkeys(
        texts, common.HINT_SPEC_TOO_LONG)


def test_shard_map_on_an_explicit_mesh_gets_the_reshard_hint():
    """An unplaced input to shard_map on a jax.make_mesh mesh: is the hint the reshard one,
    naming shard_map and Explicit axes (and not pmap, which takes no mesh)?"""
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    text = raised_by(lambda: jax.shard_map(lambda b: b, mesh=mesh, in_specs=P("data"),
                                           out_specs=P("data"))(jnp.arange(8.0 * 8)))
    assert error_hint(text) == common.HINT_RESHARD
    assert "pmap" not in common.HINT_RESHARD and "Explicit" in common.HINT_RESHARD


def test_check_imports_nothing_that_starts_workers():
    """Does `from grader import check` (every notebook's first import) leave the grader's
    workers, batch grading, authoring and lesson helpers unimported?"""
    code = ("import sys\nfrom grader import check\n"
            "print(' '.join(m for m in sys.modules if m.startswith('grader')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    imported = done.stdout.split()
    assert "grader.check" in imported
    assert not [m for m in imported if m.startswith(
        ("grader.workers", "grader.grading", "grader.authoring", "grader.lessons"))]
