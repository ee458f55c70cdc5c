"""The function under test as grading's tests see it (grader/remote.py): a stand-in whose every
call a worker makes. Here the worker's side (grader/workers/worker.py) answers in this process,
as the runner would relay: does a test see what it would see calling the function itself?"""

from __future__ import annotations

import io
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import cases, placement, probes
from grader.remote import Remote
from grader.workers.worker import SEALED, Worker

SUBMISSION = '''
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def scale(x, factor=2.0):
    return x * factor


def picky(x):
    if x.ndim != 2:
        raise ValueError(f"wanted a matrix, got {x.ndim} dimensions")
    return x


def make_adder(offset):
    return jax.jit(lambda x: x + offset)


def under_the_mesh(x):
    return jax.sharding.reshard(x, P("d"))


def count_of(f, x):
    return len(jax.jit(f).lower(x).compile().as_text())
'''


@pytest.fixture(scope="module")
def remote():
    """A stand-in for each function of SUBMISSION, answered by a worker in this process."""
    worker = Worker(io.StringIO())
    assert worker.cell("answer.py", "cell 1", SUBMISSION) == {"ok": True}

    def ask(request: dict) -> dict:
        request = json.loads(json.dumps(request))  # as it travels: JSON only
        reply = SEALED[request.pop("op")](worker, **request)
        return json.loads(json.dumps(reply))

    return lambda name: Remote(ask, name=name)


def test_a_call_gives_back_what_the_function_returned(remote):
    """Values, keyword arguments and the placement of a result split over devices."""
    mesh = Mesh(jax.devices()[:4], ("d",))
    x = jax.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, P("d")))
    out = remote("scale")(x, factor=3.0)
    assert isinstance(out, jax.Array) and out.sharding == x.sharding
    np.testing.assert_array_equal(out, 3 * np.arange(8.0))
    assert placement.layout(out) == placement.layout(x * 3)


def test_what_the_function_raises_is_raised_under_its_own_name(remote):
    """Can a test catch a ValueError the function raised, and does the test's error report
    name it as the function did, with its message?"""
    with pytest.raises(ValueError, match="wanted a matrix") as caught:
        remote("picky")(np.zeros(3, np.float32))
    described = cases.describe_error(caught.value)
    assert described["type"] == "ValueError"
    assert described["message"] == "wanted a matrix, got 1 dimensions"
    assert described["where"] == "cell 1, line 12"  # in the submission, as it was


def test_a_function_the_function_returns_stays_in_the_worker(remote):
    """A jitted function returned by the function under test: called by handle, its input
    shardings read in the worker, its program exported there."""
    adder = remote("make_adder")(5.0)
    assert isinstance(adder, Remote) and adder.handle is not None
    x = jnp.arange(4.0)
    np.testing.assert_array_equal(adder(x), np.arange(4.0) + 5)
    [placed] = probes.input_shardings(adder, x)
    assert isinstance(placed, jax.sharding.Sharding)
    program = probes.Program.of(adder, x)
    assert jax.export.deserialize(bytearray(program.serialize())).in_avals[0].shape == (4,)


def test_steps_and_the_tests_mesh_travel_with_the_call(remote):
    """trailing and jitted apply in the worker in the order the test gave them; a mesh the
    test set with jax.set_mesh is set around the call."""
    x = jnp.arange(4.0)
    np.testing.assert_array_equal(probes.jitted(probes.trailing(remote("scale"), 4.0))(x),
                                  4 * np.arange(4.0))
    mesh = jax.make_mesh((4,), ("d",), axis_types=(jax.sharding.AxisType.Explicit,),
                         devices=jax.devices()[:4])
    with jax.set_mesh(mesh):
        out = remote("under_the_mesh")(jnp.arange(8.0))
    assert out.sharding.spec == P("d")


def test_a_function_given_to_the_function_travels_as_its_program(remote):
    """count_collectives-style exercises take a test's function: does the worker get one it
    can compile, made from the test's own?"""
    x = jnp.arange(8.0)
    length = remote("count_of")(jnp.sin, x)
    assert isinstance(length, int) and length > 0


def test_the_function_cannot_be_traced_by_a_test(remote):
    """A test that traces the stand-in itself is told to ask for a program instead."""
    with pytest.raises(TypeError, match="Program.of"):
        jax.jit(remote("scale"))(jnp.arange(3.0))
