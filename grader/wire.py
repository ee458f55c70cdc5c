"""Values as data: what the tester and a worker send each other about one call of a student's
function.

The tester (:mod:`grader.workers.tester`) holds the tests and a worker holds the submission,
so a test calls the student's function through :class:`grader.remote.Remote`: the arguments
go to the worker as data (:func:`encode`), and the result comes back as data (:func:`decode`).
A value is made of None, booleans, numbers, strings, lists, tuples and dicts of them, numpy
arrays and scalars, JAX arrays with their sharding and what each device holds of them, PRNG
keys, meshes, PartitionSpecs, NamedShardings and single-device shardings; a function given
to the student's function travels as its exported program, one returned by it as a handle
the worker keeps.

Decoding runs no code of the sender: every field is checked for its type, every dtype against
a list, every device id against this process's devices and every shard against the shape its
sharding gives it; anything else raises :class:`Unreadable`. Each tagged value is a dict with
one key, as in :mod:`grader.framework.plain`.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import numpy as np

from grader import messages as msg

#: The most elements one value may hold, all its arrays and every device's copy together:
#: fifty times what the largest test needs.
MAX_ELEMENTS = 1_000_000
#: The most dimensions of an array, and the deepest nesting of containers.
MAX_DIMENSIONS, MAX_DEPTH = 16, 64
#: The dtypes an array may have, by name.
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "bfloat16", "float32", "float64", "complex64", "complex128")
#: The PRNG implementations a key may use.
KEY_IMPLS = ("threefry2x32", "rbg", "unsafe_rbg")
#: What a dict's keys may be.
_KEYS = (str, int, float, bool, type(None))


class Unreadable(ValueError):
    """Data that is not a value this module writes."""


# --- writing ---------------------------------------------------------------------------------
def encode(value: Any, function: Callable[[Callable], dict] | None = None) -> Any:
    """``value`` as JSON-ready tagged data; ``function`` says what a callable becomes (none:
    it cannot be sent). Raises :class:`Unreadable` for a value of another kind."""
    budget = [MAX_ELEMENTS]
    return _encode(value, function, budget, 0)


def _encode(value: Any, function, budget: list[int], depth: int) -> Any:
    import jax

    if depth > MAX_DEPTH:
        raise Unreadable(msg.WIRE_TOO_DEEP)
    if value is None:
        return {"none": None}
    if type(value) is bool:
        return {"bool": value}
    if type(value) is int:
        return {"int": value}
    if type(value) is float:
        return {"float": value.hex()}
    if isinstance(value, str):
        return {"str": str(value)}
    if isinstance(value, jax.sharding.PartitionSpec):  # a tuple: before tuples
        return {"spec": _spec(value)}
    if isinstance(value, jax.sharding.Mesh):
        return {"mesh": _mesh(value)}
    if isinstance(value, jax.sharding.NamedSharding):
        return {"named": {"mesh": _mesh(value.mesh), "spec": _spec(value.spec)}}
    if isinstance(value, jax.sharding.SingleDeviceSharding):
        return {"single": next(iter(value.device_set)).id}
    if type(value) in (list, tuple):
        return {type(value).__name__: [_encode(v, function, budget, depth + 1) for v in value]}
    if type(value) is dict:
        if not all(type(k) in _KEYS for k in value):
            raise Unreadable(msg.WIRE_CANNOT_SEND.format(type="dict keyed by other values"))
        return {"dict": [[_encode(k, None, budget, depth + 1),
                          _encode(v, function, budget, depth + 1)] for k, v in value.items()]}
    if isinstance(value, jax.Array) and not isinstance(value, jax.core.Tracer):
        return _jax_array(value, budget)
    if isinstance(value, np.ndarray):
        return {"numpy": _numpy(value, budget)}
    if isinstance(value, np.generic):
        return {"scalar": _numpy(np.asarray(value), budget)}
    if callable(value) and function is not None:
        return function(value)
    raise Unreadable(msg.WIRE_CANNOT_SEND.format(type=_type_name(value)))


def _type_name(value: Any) -> str:
    return str(vars(type)["__name__"].__get__(type(value), type))[:40]


def _numpy(array: np.ndarray, budget: list[int]) -> dict:
    if array.dtype.name not in DTYPES:
        raise Unreadable(msg.WIRE_DTYPE.format(dtype=str(array.dtype)[:40]))
    budget[0] -= array.size
    if budget[0] < 0:
        raise Unreadable(msg.WIRE_TOO_LARGE.format(elements=MAX_ELEMENTS))
    data = np.ascontiguousarray(array).tobytes()
    return {"dtype": array.dtype.name, "shape": list(array.shape),
            "data": base64.b64encode(data).decode()}


def _jax_array(array: Any, budget: list[int]) -> dict:
    import jax

    if jax.dtypes.issubdtype(array.dtype, jax.dtypes.prng_key):
        return {"key": {"impl": str(jax.random.key_impl(array)),
                        "data": _jax_array(jax.random.key_data(array), budget)}}
    sharding = array.sharding
    if isinstance(sharding, jax.sharding.NamedSharding):
        placed = {"named": {"mesh": _mesh(sharding.mesh), "spec": _spec(sharding.spec)}}
    elif isinstance(sharding, jax.sharding.SingleDeviceSharding):
        placed = {"device": next(iter(sharding.device_set)).id}
    else:
        raise Unreadable(msg.WIRE_SHARDING.format(type=_type_name(sharding)))
    shards = sorted(array.addressable_shards, key=lambda shard: shard.device.id)
    return {"array": {"shape": list(array.shape), "committed": bool(array.committed),
                      "sharding": placed,
                      "shards": [[shard.device.id, _numpy(np.asarray(shard.data), budget)]
                                 for shard in shards]}}


def _mesh(mesh: Any) -> dict:
    return {"shape": list(mesh.devices.shape), "names": [str(n) for n in mesh.axis_names],
            "devices": [d.id for d in mesh.devices.flat],
            "types": [t.name for t in mesh.axis_types]}


def _spec(spec: Any) -> list:
    if getattr(spec, "unreduced", None) or getattr(spec, "reduced", None):
        raise Unreadable(msg.WIRE_SPEC)
    entries = []
    for entry in spec:
        if entry is None or isinstance(entry, str):
            entries.append(entry)
        elif isinstance(entry, tuple) and all(isinstance(e, str) for e in entry):
            entries.append(list(entry))
        else:
            raise Unreadable(msg.WIRE_SPEC)
    return entries


# --- reading ---------------------------------------------------------------------------------
def decode(data: Any, function: Callable[[Any], Any] | None = None,
           program: Callable[[bytes], Any] | None = None) -> Any:
    """The value tagged data stands for. ``function`` makes a returned function of its handle,
    ``program`` a given function of its exported program (none: such data is refused)."""
    budget = [MAX_ELEMENTS]
    try:
        return _decode(data, function, program, budget, 0)
    except Unreadable:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError, RecursionError) as exc:
        raise Unreadable(msg.WIRE_MALFORMED.format(why=str(exc)[:80])) from None


def _decode(data: Any, function, program, budget: list[int], depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise Unreadable(msg.WIRE_TOO_DEEP)
    if not isinstance(data, dict) or len(data) != 1:
        raise Unreadable(msg.WIRE_MALFORMED.format(why="not one tagged value"))
    (tag, inner), = data.items()
    if tag == "none" and inner is None:
        return None
    if tag == "bool" and type(inner) is bool:
        return inner
    if tag == "int" and type(inner) is int:
        return inner
    if tag == "float" and isinstance(inner, str):
        return float.fromhex(inner)
    if tag == "str" and isinstance(inner, str):
        return inner
    if tag in ("list", "tuple") and isinstance(inner, list):
        items = [_decode(v, function, program, budget, depth + 1) for v in inner]
        return items if tag == "list" else tuple(items)
    if tag == "dict" and isinstance(inner, list):
        found = {}
        for pair in inner:
            key, value = pair
            key = _decode(key, None, None, budget, depth + 1)
            if type(key) not in _KEYS:
                raise Unreadable(msg.WIRE_MALFORMED.format(why="a key that is not a name"))
            found[key] = _decode(value, function, program, budget, depth + 1)
        return found
    if tag == "numpy":
        return _read_numpy(inner, budget)
    if tag == "scalar":
        array = _read_numpy(inner, budget)
        if array.ndim:
            raise Unreadable(msg.WIRE_MALFORMED.format(why="a scalar with dimensions"))
        return array[()]
    if tag == "array":
        return _read_array(inner, budget)
    if tag == "key":
        return _read_key(inner, budget)
    if tag == "mesh":
        return _read_mesh(inner)
    if tag == "spec":
        return _read_spec(inner, None)
    if tag == "named":
        import jax

        mesh = _read_mesh(inner["mesh"])
        return jax.sharding.NamedSharding(mesh, _read_spec(inner["spec"], mesh))
    if tag == "single" and type(inner) is int and inner in _devices():
        import jax

        return jax.sharding.SingleDeviceSharding(_devices()[inner])
    if tag == "function" and function is not None and type(inner) is int:
        return function(inner)
    if tag == "program" and program is not None and isinstance(inner, str):
        return program(base64.b64decode(inner, validate=True))
    raise Unreadable(msg.WIRE_MALFORMED.format(why=f"a value tagged {str(tag)[:40]!r}"))


def _read_numpy(inner: Any, budget: list[int]) -> np.ndarray:
    import jax.numpy as jnp

    if not isinstance(inner, dict) or inner.get("dtype") not in DTYPES:
        raise Unreadable(msg.WIRE_DTYPE.format(dtype=str(inner.get("dtype") if isinstance(
            inner, dict) else inner)[:40]))
    shape = _shape(inner["shape"])
    size = int(np.prod(shape, dtype=np.int64))
    budget[0] -= size
    if budget[0] < 0:
        raise Unreadable(msg.WIRE_TOO_LARGE.format(elements=MAX_ELEMENTS))
    dtype = jnp.dtype(inner["dtype"])
    if not isinstance(inner["data"], str) or len(inner["data"]) > 4 * (size * dtype.itemsize + 3):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="array data of another size"))
    raw = base64.b64decode(inner["data"], validate=True)
    if len(raw) != size * dtype.itemsize:
        raise Unreadable(msg.WIRE_MALFORMED.format(why="array data of another size"))
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def _shape(value: Any) -> tuple[int, ...]:
    if not (isinstance(value, list) and len(value) <= MAX_DIMENSIONS
            and all(type(d) is int and 0 <= d <= MAX_ELEMENTS for d in value)):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="a shape that is not one"))
    return tuple(value)


def _devices() -> dict[int, Any]:
    import jax

    return {d.id: d for d in jax.devices()}


def _read_mesh(inner: Any) -> Any:
    import jax

    shape = _shape(inner["shape"])
    names, ids, types = inner["names"], inner["devices"], inner["types"]
    devices = _devices()
    if not (isinstance(names, list) and len(names) == len(shape)
            and all(isinstance(n, str) for n in names) and len(set(names)) == len(names)
            and isinstance(ids, list) and len(ids) == int(np.prod(shape, dtype=np.int64))
            and all(type(i) is int and i in devices for i in ids) and len(set(ids)) == len(ids)
            and isinstance(types, list) and len(types) == len(shape)
            and all(t in jax.sharding.AxisType.__members__ for t in types)):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="a mesh that is not one"))
    grid = np.array([devices[i] for i in ids], dtype=object).reshape(shape)
    return jax.sharding.Mesh(grid, tuple(names),
                             axis_types=tuple(jax.sharding.AxisType[t] for t in types))


def _read_spec(inner: Any, mesh: Any) -> Any:
    import jax

    if not isinstance(inner, list) or len(inner) > MAX_DIMENSIONS:
        raise Unreadable(msg.WIRE_MALFORMED.format(why="a PartitionSpec that is not one"))
    entries = []
    for entry in inner:
        if entry is None or isinstance(entry, str):
            entries.append(entry)
        elif isinstance(entry, list) and all(isinstance(e, str) for e in entry):
            entries.append(tuple(entry))
        else:
            raise Unreadable(msg.WIRE_MALFORMED.format(why="a PartitionSpec that is not one"))
    named = [n for e in entries if e is not None for n in ((e,) if isinstance(e, str) else e)]
    if mesh is not None and not set(named) <= set(mesh.axis_names) or \
            len(set(named)) != len(named):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="a PartitionSpec not of its mesh"))
    return jax.sharding.PartitionSpec(*entries)


def _read_array(inner: Any, budget: list[int]) -> Any:
    """A JAX array rebuilt from what each device held: on the same devices, with the same
    sharding, each device's shard as sent (copies that should agree may not)."""
    import jax

    shape = _shape(inner["shape"])
    placed, shards, committed = inner["sharding"], inner["shards"], inner["committed"]
    if not (isinstance(placed, dict) and len(placed) == 1 and isinstance(shards, list)
            and type(committed) is bool):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="an array that is not one"))
    devices = _devices()
    held = {}
    for pair in shards:
        device, data = pair
        if type(device) is not int or device not in devices or device in held:
            raise Unreadable(msg.WIRE_MALFORMED.format(why="a shard on no device of this run"))
        held[device] = _read_numpy(data, budget)
    if "device" in placed:
        if set(held) != {placed["device"]} or held[placed["device"]].shape != shape:
            raise Unreadable(msg.WIRE_MALFORMED.format(why="a shard of another shape"))
        data = held[placed["device"]]
        # Uncommitted: device_put with no device, as jnp.asarray would place it, but with no
        # program to trace and compile per shape and dtype.
        return jax.device_put(data, devices[placed["device"]] if committed else None)
    named = placed["named"]
    mesh = _read_mesh(named["mesh"])
    sharding = jax.sharding.NamedSharding(mesh, _read_spec(named["spec"], mesh))
    wanted = sharding.addressable_devices_indices_map(shape)
    if {d.id for d in wanted} != set(held):
        raise Unreadable(msg.WIRE_MALFORMED.format(why="shards on other devices"))
    arrays = []
    for device, index in wanted.items():
        piece = held[device.id]
        if piece.shape != tuple(len(range(*part.indices(size)))
                                for part, size in zip(index, shape, strict=True)):
            raise Unreadable(msg.WIRE_MALFORMED.format(why="a shard of another shape"))
        arrays.append(jax.device_put(piece, device))
    return jax.make_array_from_single_device_arrays(shape, sharding, arrays)


def _read_key(inner: Any, budget: list[int]) -> Any:
    import jax

    if not isinstance(inner, dict) or inner.get("impl") not in KEY_IMPLS:
        raise Unreadable(msg.WIRE_MALFORMED.format(why="a key of no known kind"))
    data = _read_array(inner["data"]["array"], budget)
    if data.dtype != np.uint32:
        raise Unreadable(msg.WIRE_MALFORMED.format(why="key data that is not uint32"))
    return jax.random.wrap_key_data(data, impl=inner["impl"])
