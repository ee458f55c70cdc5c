"""check(fn) on the grader's other device counts: a function that passes on this kernel's 8
devices is run on 2 as well, in a process of its own (grader/check_elsewhere.py).

The functions are distributed_dot (lesson 3, graded on 8 and 2 devices) written at the top
level of this file, as a notebook defines them, so that their source can be read and sent.
"""

from __future__ import annotations

import signal
import time

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, Mesh
from jax.sharding import PartitionSpec as P

from grader import check_elsewhere
from grader import messages as msg
from grader.check import check
from grader.hints import common


def _dot(mesh, v1, v2):
    def local_dot(a, b):
        return jax.lax.psum(jnp.vdot(a, b), axis_name="data")

    return jax.shard_map(local_dot, mesh=mesh, in_specs=(P("data"), P("data")),
                         out_specs=P())(v1, v2)


def distributed_dot(v1, v2):
    return _dot(Mesh(jax.devices(), ("data",)), v1, v2)


def fixed_to_eight(v1, v2):  # the example: right on 8 devices only
    return _dot(jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,)), v1, v2)


def prints_what_looks_like_an_answer(v1, v2):
    print('{"outcomes": {}}')
    print("}{ not json")
    return _dot(Mesh(jax.devices(), ("data",)), v1, v2)


def hangs_on_two_devices(v1, v2):
    if jax.device_count() == 2:
        time.sleep(3600)
    return _dot(Mesh(jax.devices(), ("data",)), v1, v2)


def named_dot(fn):
    fn.__name__ = "distributed_dot"
    return fn


def test_a_correct_function_passes_on_every_device_count_the_grader_uses():
    result = check(distributed_dot)
    assert result.points == result.max_points == 2
    assert [t.devices for t in result.tests] == [[8, 2], [8, 2]]
    assert result.note is None


def test_a_function_right_on_8_devices_only_fails_on_2_with_the_device_count_hint():
    """The issue's case: jax.make_mesh((8,), ...) passed check() and lost 4 of 6 points."""
    result = check(named_dot(fixed_to_eight))
    assert result.points == 0
    assert {t.status for t in result.tests} == {msg.ERROR}
    assert all(t.devices == [2] for t in result.tests)
    assert all(t.hint == common.HINT_DEVICE_COUNT for t in result.tests)
    assert "Number of devices 2" in result.tests[0].message


def test_what_the_function_prints_there_does_not_reach_the_answer():
    result = check(named_dot(prints_what_looks_like_an_answer))
    assert result.points == 2
    assert [t.devices for t in result.tests] == [[8, 2], [8, 2]]


def test_a_function_that_cannot_travel_is_checked_here_and_the_note_says_why():
    mesh = Mesh(jax.devices(), ("data",))

    def distributed_dot(v1, v2):  # a closure over mesh: there is no source to send
        return _dot(mesh, v1, v2)

    result = check(distributed_dot)
    assert result.points == 2
    assert [t.devices for t in result.tests] == [[8], [8]]
    assert result.note.startswith("Not checked on 2 devices, where the grader runs it too")
    assert "mesh" in result.note


def test_a_function_that_hangs_there_is_stopped_and_the_next_check_runs_again(monkeypatch):
    monkeypatch.setattr(check_elsewhere, "TIMEOUT", 4.0)
    started = time.monotonic()
    result = check(named_dot(hangs_on_two_devices))
    assert time.monotonic() - started < 60
    assert result.points == 2 and [t.devices for t in result.tests] == [[8], [8]]
    assert "did not finish within 4 s" in result.note
    assert 2 not in check_elsewhere._running  # killed, not left busy
    monkeypatch.setattr(check_elsewhere, "TIMEOUT", 120.0)
    again = check(distributed_dot)
    assert [t.devices for t in again.tests] == [[8, 2], [8, 2]]


def wrong_here_and_hangs_there(v1, v2):
    return hangs_on_two_devices(v1, v2) + 1


def wrong_here_and_hangs_there_past_interrupts(v1, v2):
    if jax.device_count() == 2:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        time.sleep(3600)
    return _dot(Mesh(jax.devices(), ("data",)), v1, v2) + 1


@pytest.mark.parametrize("fn", [wrong_here_and_hangs_there,
                                wrong_here_and_hangs_there_past_interrupts])
def test_work_nobody_waits_for_does_not_hold_up_the_next_check(fn):
    """A function wrong in the kernel is not waited for elsewhere: its work there is
    interrupted, and its process killed if it goes on past the interrupt."""
    started = time.monotonic()
    process = check_elsewhere.started(2)
    assert check(named_dot(fn)).points == 0
    again = check(distributed_dot)
    assert [t.devices for t in again.tests] == [[8, 2], [8, 2]]
    assert time.monotonic() - started < check_elsewhere.SETTLE + 30
    if fn is wrong_here_and_hangs_there:
        assert check_elsewhere._running[2] is process  # stopped by the interrupt: kept
    else:
        assert check_elsewhere._running[2] is not process  # killed, a new one started


@pytest.mark.parametrize("why", ["wrong", "stub"])
def test_a_function_that_fails_here_is_not_waited_for_elsewhere(monkeypatch, why):
    """The first failure is the one shown: the other process's outcomes are not waited for."""
    def not_asked(*args):
        raise AssertionError("the other process's outcomes were waited for")

    monkeypatch.setattr(check_elsewhere.Run, "outcomes", not_asked)

    def distributed_dot(v1, v2):
        if why == "stub":
            raise NotImplementedError
        return jnp.vdot(v1, v2) + 1

    result = check(distributed_dot)
    assert result.points == 0 and all(t.devices == [8] for t in result.tests)


def test_an_exercise_graded_on_8_devices_only_is_run_here_only(monkeypatch):
    monkeypatch.setattr(check_elsewhere, "Run", lambda *args: pytest.fail("asked"))

    def is_congruent(shape, blocks):
        pairs = zip(shape, blocks, strict=False)
        return len(shape) == len(blocks) and all(size % count == 0 for size, count in pairs)

    result = check(is_congruent)
    assert result.points == result.max_points and result.note is None


@jax.jit
def jitted_dot(v1, v2):
    return _dot(Mesh(jax.devices(), ("data",)), v1, v2)


def test_a_jitted_function_travels_with_its_decorator():
    """sharded_dropout's solution is a def under @jax.jit: sent with the decorator."""
    result = check(named_dot(jitted_dot))
    assert result.points == 2 and [t.devices for t in result.tests] == [[8, 2], [8, 2]]
