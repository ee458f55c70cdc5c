"""Values as data between the tester and a worker (grader/wire.py): does every kind of value a
test passes or a function returns come back as it was, what each device held included, and is
data that no worker should send refused with a reason, never read as something else?"""

from __future__ import annotations

import base64
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

from grader import wire


def _grid(types=(AxisType.Explicit, AxisType.Auto)) -> Mesh:
    return Mesh(np.array(jax.devices()[:8]).reshape(2, 4)[:, ::-1], ("x", "y"), axis_types=types)


def _same(a, b) -> bool:
    """Equal values of the same types, arrays with their dtype, sharding and every device's
    data (copies that should agree included)."""
    if isinstance(a, jax.Array):
        if jax.dtypes.issubdtype(a.dtype, jax.dtypes.prng_key):
            return (isinstance(b, jax.Array) and a.dtype == b.dtype
                    and _same(jax.random.key_data(a), jax.random.key_data(b)))
        shards = [sorted(x.addressable_shards, key=lambda s: s.device.id) for x in (a, b)]
        return (type(b) is type(a) and a.shape == b.shape and a.dtype == b.dtype
                and a.sharding == b.sharding and a.committed == b.committed
                and all(x.device == y.device and np.array_equal(x.data, y.data)
                        for x, y in zip(*shards, strict=True)))
    if isinstance(a, np.ndarray | np.generic):
        return type(b) is type(a) and a.dtype == b.dtype and np.array_equal(a, b,
                                                                            equal_nan=True)
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, list | tuple) and not isinstance(a, P):
        return type(b) is type(a) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(b) is type(a) and a == b


def test_every_kind_of_value_comes_back_as_it_was():
    """Numbers (NaN and infinities too), texts, containers, numpy arrays of every dtype a
    test uses, numpy scalars, JAX arrays on one device (committed or not) or split over an
    Explicit mesh whose devices are not in order, keys, meshes, specs and shardings."""
    grid = _grid()
    split = jax.device_put(np.arange(32.0, dtype=np.float32).reshape(4, 8),
                           NamedSharding(grid, P("x", "y")))
    keys = jax.device_put(jax.random.split(jax.random.key(3), 8), NamedSharding(grid, P("y")))
    value = {
        "scalars": [None, True, 7, -2**70, 1.5, math.inf, -math.inf, math.nan, "μ text"],
        3: ("tuple", [np.float32(2.5), np.int64(-3), np.bool_(True)]),
        "numpy": [np.arange(6).astype(d).reshape(2, 3) for d in
                  ("int8", "uint32", "float16", "float64", "bool")] + [
            jnp.ones(3, jnp.bfloat16).__array__(), np.zeros((0, 4), np.float32)],
        "arrays": [jnp.arange(5.0), jax.device_put(jnp.arange(3), jax.devices()[5]), split,
                   jax.random.key(0), keys],
        "placement": [grid, P("x", None, ("y", "z")), P(), NamedSharding(grid, P(None, "y")),
                      SingleDeviceSharding(jax.devices()[2])],
    }
    back = wire.decode(wire.encode(value))
    assert _same(value, back)
    assert back["arrays"][0].committed is False and back["arrays"][1].committed is True


def test_arrays_are_read_back_without_compiling_anything():
    """A worker and a tester read many arrays of many shapes: is reading one back, on one
    device (committed or not) or split over a mesh, free of any program to trace and lower
    (as ``jnp.asarray`` would lower one per shape and dtype)?"""
    lowered = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **kw: lowered.append(event)
        if event == "/jax/core/compile/jaxpr_to_mlir_module_duration" else None)
    values = [jax.device_put(np.full((n, 3), n, dtype))
              for n in (5, 6, 7) for dtype in ("float32", "int16")]
    sent = wire.encode([*values, jax.device_put(values[0], jax.devices()[1]),
                        jax.device_put(np.zeros((8, 2)), NamedSharding(_grid(), P("y")))])
    lowered.clear()
    back = wire.decode(sent)
    read = list(lowered)
    jax.jit(lambda a: a + 1).lower(jax.ShapeDtypeStruct((11,), jnp.float32))  # heard: the control
    assert all(a.committed is False for a in back[:-2]) and back[-2].committed
    assert all(_same(a, b) for a, b in zip(back[:-2], values, strict=True))
    assert read == [] and len(lowered) == 1


def test_copies_that_should_agree_come_back_as_each_device_held_them():
    """A result that claims to be the same on every device but is not (a shard_map output
    with the check off, say): does each device's copy come back as it was, not the first
    one's everywhere?"""
    mesh = Mesh(jax.devices()[:4], ("d",))
    sharding = NamedSharding(mesh, P())
    pieces = [jax.device_put(np.full(3, i, np.float32), d) for i, d in enumerate(mesh.devices)]
    odd = jax.make_array_from_single_device_arrays((3,), sharding, pieces)
    back = wire.decode(wire.encode(odd))
    assert [float(s.data[0]) for s in sorted(back.addressable_shards,
                                              key=lambda s: s.device.id)] == [0, 1, 2, 3]


def test_functions_travel_only_as_the_caller_says():
    """Is a function refused unless the caller says what it becomes, a handle made of it when
    it does, and a returned function read back only by a reader that expects one?"""
    with pytest.raises(wire.Unreadable, match="function"):
        wire.encode([print])
    sent = wire.encode([print], function=lambda f: {"function": 4})
    assert wire.decode(sent, function=lambda handle: ("handle", handle)) == [("handle", 4)]
    with pytest.raises(wire.Unreadable, match="tagged 'function'"):
        wire.decode(sent)
    with pytest.raises(wire.Unreadable, match="tagged 'program'"):
        wire.decode({"program": base64.b64encode(b"x").decode()})


class Strange:
    """An object of the student's own making."""


@pytest.mark.parametrize("value", [Strange(), {1, 2}, np.array([object()]), 1 + 2j,
                                   b"bytes", {(1, 2): 3}])
def test_a_value_of_another_kind_is_refused_when_sent(value):
    """Objects, sets, object arrays, complex numbers, bytes and dict keys that are not names
    or numbers: refused with a reason, never guessed at."""
    with pytest.raises(wire.Unreadable):
        wire.encode(value)


def _numpy(dtype="float32", shape=(2,), data=None) -> dict:
    data = np.zeros(shape, np.float32).tobytes() if data is None else data
    return {"dtype": dtype, "shape": list(shape), "data": base64.b64encode(data).decode()}


def _split(**changes) -> dict:
    """A 4-row array split over 2 devices, as a worker sends it, with ``changes``."""
    array = {"shape": [4], "committed": True,
             "sharding": {"named": {"mesh": {"shape": [2], "names": ["d"], "devices": [0, 1],
                                             "types": ["Auto"]}, "spec": ["d"]}},
             "shards": [[0, _numpy()], [1, _numpy()]]}
    return {"array": {**array, **changes}}


def _nested(depth: int) -> dict:
    data = {"none": None}
    for _ in range(depth):
        data = {"list": [data]}
    return data


MALFORMED = {
    "an object dtype": {"numpy": _numpy("object")},
    "data of another size": {"numpy": _numpy(data=b"\0" * 12)},
    "a huge shape for little data": {"numpy": _numpy(shape=(10**6, 10**6), data=b"\0" * 8)},
    "more numbers than any test needs": {"list": [{"numpy": _numpy(shape=(600_000,),
                                                            data=b"\0" * 2_400_000)}] * 2},
    "a negative dimension": {"numpy": _numpy(shape=(-2,), data=b"")},
    "a shard on a device this run lacks": _split(shards=[[0, _numpy()], [99, _numpy()]]),
    "two shards on one device": _split(shards=[[0, _numpy()], [0, _numpy()]]),
    "a shard missing": _split(shards=[[0, _numpy()]]),
    "a shard of another shape": _split(shards=[[0, _numpy(shape=(3,),
                                                          data=b"\0" * 12)], [1, _numpy()]]),
    "a mesh naming a device twice": _split(sharding={"named": {"mesh": {
        "shape": [2], "names": ["d"], "devices": [0, 0], "types": ["Auto"]}, "spec": ["d"]}}),
    "a spec of an axis the mesh lacks": _split(sharding={"named": {"mesh": {
        "shape": [2], "names": ["d"], "devices": [0, 1], "types": ["Auto"]}, "spec": ["e"]}}),
    "an axis type JAX lacks": {"mesh": {"shape": [2], "names": ["d"], "devices": [0, 1],
                                        "types": ["Sideways"]}},
    "a key of an unknown kind": {"key": {"impl": "mine", "data": _split()}},
    "an unknown tag": {"pickle": "gASVAAAA"},
    "two tags in one value": {"none": None, "str": "x"},
    "a dict key that is a list": {"dict": [[{"list": []}, {"none": None}]]},
    "a float that is not one": {"float": "one and a half"},
    "nesting deeper than any value": _nested(wire.MAX_DEPTH + 5),
}


@pytest.mark.parametrize("why", MALFORMED)
def test_data_no_worker_should_send_is_refused(why):
    """Whatever a worker sends in a value's place is either that value or refused with a
    reason (wire.Unreadable), never an error of another kind or a value made up."""
    with pytest.raises(wire.Unreadable):
        wire.decode(MALFORMED[why])
