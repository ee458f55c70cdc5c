"""Where an array lives, as plain data: the one description of placements the tests compare.

A test that asks where a function put its result measures it here, in the kernel for
``check`` and in the worker in grading, and the judge compares the measure with the reference
solution's. Each measure reads the same whatever way the placement was written:
``P('x')``, ``P('x', None)`` and ``P(('x',), None)`` are one spec.

- :func:`spec_of`: the PartitionSpec, one entry per dimension (:func:`plain_spec` for a
  spec written out).
- :func:`layout`: the block shape each device holds.
- :func:`blocks`: which block each device holds and which copy of it.
- :func:`mesh_of`: the mesh: axis names and types, and where each device sits.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import NamedSharding

#: What :func:`spec_of` and :func:`mesh_of` give for an array that is not on a mesh.
NOT_A_NAMED_SHARDING = "not placed with a NamedSharding"


def _entry(entry: Any) -> Any:
    """A spec entry as plain data: None, an axis name, or a list of two names or more."""
    if entry is None or isinstance(entry, str):
        return entry
    if isinstance(entry, (tuple, list)):
        names = [str(name) for name in entry]
        return None if not names else names[0] if len(names) == 1 else names
    return str(entry)


def spec_of(x: Any) -> list | str:
    """The PartitionSpec of ``x`` as a list with one entry per dimension (None, an axis name,
    or a list of names), or :data:`NOT_A_NAMED_SHARDING`."""
    sharding = getattr(x, "sharding", None)
    if not isinstance(x, jax.Array) or not isinstance(sharding, NamedSharding):
        return NOT_A_NAMED_SHARDING
    entries = plain_spec(sharding.spec)
    return entries + [None] * (x.ndim - len(entries))


def entry_axes(entry: Any) -> tuple:
    """The mesh axes one entry of a spec names (None, an axis name, or several), in order:
    of a PartitionSpec's entry or of its plain form alike."""
    return () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)


def plain_spec(spec: Any) -> list:
    """A PartitionSpec's entries as plain data (as far as it was written: no padding)."""
    return [_entry(e) for e in spec]


def layout(x: Any) -> dict[str, Any]:
    """Where an array lives: its shard shapes in device order and how many devices hold them."""
    if not isinstance(x, jax.Array):
        return {"on_devices": 0, "shard_shapes": []}
    shards = sorted(x.addressable_shards, key=lambda s: s.device.id)
    return {
        "on_devices": len({s.device.id for s in shards}),
        "shard_shapes": [list(s.data.shape) for s in shards],
    }


def blocks(x: Any) -> Any:
    """Which block each device holds: in device order, the offset where its block starts
    along every dimension, and which copy of that block it is."""
    if not isinstance(x, jax.Array):
        return "not a jax.Array"
    shards = sorted(x.addressable_shards, key=lambda s: s.device.id)
    return {
        "devices": [s.device.id for s in shards],
        "starts": [[part.indices(size)[0] for part, size in zip(s.index, x.shape, strict=True)]
                   for s in shards],
        "copy": [s.replica_id for s in shards],
    }


def mesh_of(x: Any) -> Any:
    """The mesh an array was placed on: axis names and types, and where each device sits
    (its ids in the mesh's shape); or :data:`NOT_A_NAMED_SHARDING`."""
    sharding = getattr(x, "sharding", None)
    if not isinstance(sharding, NamedSharding):
        return NOT_A_NAMED_SHARDING
    mesh = sharding.mesh
    return {
        "names": [str(name) for name in mesh.axis_names],
        "types": [str(kind) for kind in mesh.axis_types],
        "device_ids": np.asarray(mesh.device_ids),
    }


def floats(values: Any) -> jax.Array:
    """``values`` as a float32 array, cast by numpy: ``jnp.asarray(values, jnp.float32)``
    casts on the device instead, a program compiled once per shape (a few hundredths of a
    second each, several per test, in the time ``check`` takes)."""
    return jax.numpy.asarray(np.asarray(values, np.float32))
