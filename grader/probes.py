"""Measurements that tests take of a function: what it computed and how it was distributed.

These run next to the code under test (in a grader worker, or in the student's kernel for
``check``) and only *measure*; deciding what a measurement means is the judges' job.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import jax

#: Collective operations of compiled HLO, by the name ``count_collectives`` reports.
COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)

# An HLO instruction is `%name = type opcode(operands), attributes`; an async pair is
# `op-start`/`op-done`, so counting the plain opcode and the `-start` form counts each
# collective once. Only the text before the attributes counts: a name scope chosen by the
# author (in `metadata={op_name=...}`) could otherwise pose as an operation.
_OPCODE = re.compile(r"=\s*[^=]*?\s(" + "|".join(COLLECTIVES) + r")(-start)?\(")
_ATTRIBUTES = re.compile(r",\s*(metadata|frontend_attributes|backend_config)=")


def compiled_hlo(fn: Callable, *args: Any) -> str:
    """The optimised HLO text XLA compiled for ``jax.jit(fn)`` on ``args``."""
    return jax.jit(fn).lower(*args).compile().as_text()


def hlo_collectives(fn: Callable, *args: Any) -> dict[str, int]:
    """How many of each collective the compiled HLO of ``fn`` contains."""
    counts = dict.fromkeys(COLLECTIVES, 0)
    for line in compiled_hlo(fn, *args).splitlines():
        match = _OPCODE.search(_ATTRIBUTES.split(line, 1)[0])
        if match:
            counts[match.group(1)] += 1
    return counts


def _sub_jaxprs(eqn: Any):
    for param in eqn.params.values():
        for value in param if isinstance(param, (list, tuple)) else (param,):
            if hasattr(value, "eqns"):
                yield value
            elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
                yield value.jaxpr


def _spec_names(spec: Any) -> list[Any]:
    return [list(entry) if isinstance(entry, tuple) else entry for entry in spec]


def jaxpr_summary(fn: Callable, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """The primitives ``fn`` traces to, with the axes of its collectives and its shard_maps.

    Returns ``{"primitives": [...], "collectives": [{"primitive", "axes"}],
    "shard_maps": [{"mesh": {axis: size}, "in_specs": [...], "out_specs": [...]}]}``,
    walking into every nested jaxpr (jit, shard_map, pmap, control flow).
    """
    closed = jax.make_jaxpr(fn)(*args, **kwargs)
    primitives: set[str] = set()
    collectives: list[dict[str, Any]] = []
    shard_maps: list[dict[str, Any]] = []
    todo = [closed.jaxpr]
    while todo:
        jaxpr = todo.pop()
        for eqn in jaxpr.eqns:
            name = eqn.primitive.name
            primitives.add(name)
            if "axes" in eqn.params or "axis_name" in eqn.params:
                axes = eqn.params.get("axes", eqn.params.get("axis_name"))
                axes = axes if isinstance(axes, (tuple, list)) else (axes,)
                named = [str(a) for a in axes if isinstance(a, str)]
                if named:  # reductions also have `axes`, but positional ones
                    collectives.append({"primitive": name, "axes": named})
            if name == "shard_map":
                mesh = eqn.params["mesh"]
                shard_maps.append(
                    {
                        "mesh": {str(k): int(v) for k, v in mesh.shape.items()},
                        "in_specs": [_spec_names(s) for s in eqn.params["in_specs"]],
                        "out_specs": [_spec_names(s) for s in eqn.params["out_specs"]],
                    }
                )
            todo.extend(_sub_jaxprs(eqn))
    return {
        "primitives": sorted(primitives),
        "collectives": collectives,
        "shard_maps": shard_maps,
    }


def layout(x: Any) -> dict[str, Any]:
    """Where an array lives: its shard shapes in device order and the devices holding them."""
    if not isinstance(x, jax.Array):
        return {"on_devices": 0, "shard_shapes": []}
    shards = sorted(x.addressable_shards, key=lambda s: s.device.id)
    return {
        "on_devices": len({s.device.id for s in shards}),
        "shard_shapes": [list(s.data.shape) for s in shards],
    }
