"""What a jitted function really does on the devices: its collectives and its shardings.

``inspect_compiled(f, *args)`` compiles ``jax.jit(f)`` for ``args`` (or uses ``f`` as it is if
it is already jitted) and reads the compiled HLO, the per-device program XLA runs. The
:class:`Report` lists every collective in it (operation, operand shapes and dtype, the size of
its operands on one device, the bytes each device sends, which devices talk to each other) and
the shardings the program was compiled for, as PartitionSpecs over the mesh wherever a mesh of
the program (one of ``f``'s ``shard_map``, or of a sharded argument) lays the array out that
way. In a notebook it shows as an HTML table; ``print`` gives the same as text.

Bytes sent follow one stated model, :data:`grader.lessons.hlo.TRAFFIC_MODEL`; how the HLO is
read is told in :mod:`grader.lessons.hlo`.
"""

from __future__ import annotations

import html
import itertools
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from grader.framework.hlo import COLLECTIVES
from grader.lessons import texts
from grader.lessons.drawing import function_name, parameter_names, spec_text
from grader.lessons.hlo import TRAFFIC_MODEL, Collective, collectives_in_hlo
from grader.palette import device_colour

#: The footnote of the "bytes sent" column: the model in words (template in grader.messages).
TRAFFIC_NOTE = texts.TRAFFIC_NOTE.format(
    rules="; ".join(f"{op} {rule}" for op, (rule, _) in TRAFFIC_MODEL.items())
)


@dataclass(frozen=True)
class ArrayInfo:
    """An input or output of the compiled program: where it is, its type and its sharding."""

    path: str
    dtype: str
    shape: tuple[int, ...]
    sharding: str
    block: tuple[int, ...] | None
    block_bytes: int | None


@dataclass
class Report:
    """The collectives and the shardings of one compiled program."""

    function: str
    collectives: list[Collective]
    inputs: list[ArrayInfo]
    outputs: list[ArrayInfo]
    hlo: str = field(repr=False, default="")

    @property
    def counts(self) -> dict[str, int]:
        """How many of each collective, as :func:`.probes.hlo_collectives` counts."""
        counts = dict.fromkeys(COLLECTIVES, 0)
        for c in self.collectives:
            counts[c.op] += 1
        return counts

    @property
    def total_bytes(self) -> int:
        """Bytes of operands each device puts into collectives, all collectives together."""
        return sum(c.bytes for c in self.collectives)

    @property
    def total_sent(self) -> float | None:
        """Bytes each device sends, all collectives together, under :data:`TRAFFIC_MODEL` (None
        if a collective's group is not known)."""
        if any(c.sent is None for c in self.collectives):
            return None
        return sum(c.sent for c in self.collectives)

    def summary(self) -> str:
        """One line: how many collectives of which kind, their operands' bytes and the bytes
        each device sends."""
        if not self.collectives:
            return f"{self.function}: no collectives, the devices never communicate"
        ops = ", ".join(f"{k} {op}" for op, k in self.counts.items() if k)
        return (f"{self.function}: {len(self.collectives)} collective"
                f"{'s' if len(self.collectives) != 1 else ''} ({ops}); per device "
                f"{self.total_bytes} bytes of operands, {_bytes(self.total_sent)} bytes sent "
                "(traffic model)")

    # --- renderings ------------------------------------------------------------------------
    def __str__(self) -> str:
        lines = [self.summary()]
        if self.collectives:
            rows = [("op", "operands → result (per device)", "operand bytes", "bytes sent*",
                     "devices that communicate")]
            rows += [(c.op, _moved(c), str(c.bytes), _bytes(c.sent), _groups_text(c))
                     for c in self.collectives]
            lines += _table(rows)
            lines += textwrap.wrap(f"* {TRAFFIC_NOTE}", width=96, initial_indent="  ",
                                   subsequent_indent="    ")
        for title, infos in (("inputs", self.inputs), ("outputs", self.outputs)):
            lines.append(f"{title}:")
            rows = [("", "type", "sharding", "block per device")]
            rows += [(i.path, _type(i.dtype, i.shape), i.sharding, _block(i)) for i in infos]
            lines += _table(rows)
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        cells = 'style="text-align:left;padding:2px 8px"'
        parts = [f'<div class="grader-inspector"><p><b>{html.escape(self.summary())}</b></p>']
        if self.collectives:
            parts.append(
                f"<table><tr><th {cells}>op</th><th {cells}>operands → result (per device)</th>"
                f"<th {cells}>operand bytes per device</th><th {cells}>bytes sent per device*"
                f"</th><th {cells}>devices that communicate</th></tr>"
            )
            for c in self.collectives:
                parts.append(
                    f"<tr><td {cells}><code>{html.escape(c.op)}</code></td>"
                    f"<td {cells}><code>{html.escape(_moved(c))}</code></td>"
                    f"<td {cells}>{c.bytes}</td><td {cells}>{_bytes(c.sent)}</td>"
                    f"<td {cells}>{_groups_html(c)}</td></tr>"
                )
            parts.append(f'</table><p class="ring-model"><small>* {html.escape(TRAFFIC_NOTE)}'
                         "</small></p>")
        for title, infos in (("Inputs", self.inputs), ("Outputs", self.outputs)):
            parts.append(
                f"<p><b>{title}</b></p><table><tr><th {cells}></th><th {cells}>type</th>"
                f"<th {cells}>sharding</th><th {cells}>block per device</th></tr>"
            )
            for i in infos:
                parts.append(
                    f"<tr><td {cells}><code>{html.escape(i.path)}</code></td>"
                    f"<td {cells}><code>{html.escape(_type(i.dtype, i.shape))}</code></td>"
                    f"<td {cells}><code>{html.escape(i.sharding)}</code></td>"
                    f"<td {cells}>{html.escape(_block(i))}</td></tr>"
                )
            parts.append("</table>")
        parts.append("</div>")
        return "".join(parts)


# --- the entry point -------------------------------------------------------------------------
def inspect_compiled(f: Callable, *args: Any) -> Report:
    """Compile ``jax.jit(f)`` (or ``f``, if it is already jitted) for ``args`` and report its
    collectives and the shardings of its inputs and outputs.

    Inputs are named after the parameters of the function that is compiled (``f``, or the
    function ``f`` jits); a ``shard_map`` has none of its own (its body's parameters name
    blocks, not these arrays), so its inputs are ``args[0]``, ``args[1]``, ...
    """
    lowerable = f if hasattr(f, "lower") else jax.jit(f)
    traced = lowerable.trace(*args)
    compiled = traced.lower().compile()
    text = compiled.as_text()
    meshes = _meshes(traced.jaxpr.jaxpr, args, compiled)
    in_shardings, _ = compiled.input_shardings
    arg_leaves = jax.tree_util.tree_flatten_with_path(compiled.args_info[0])[0]
    names = parameter_names(f, len(args))
    inputs = [
        _info(names[path[0].idx] + jax.tree_util.keystr(path[1:]), arg, sharding, meshes)
        for (path, arg), sharding in zip(arg_leaves, jax.tree.leaves(in_shardings), strict=True)
    ]
    out_leaves = jax.tree_util.tree_flatten_with_path(compiled.out_info)[0]
    outputs = [
        _info(f"out{jax.tree_util.keystr(path)}", value, value.sharding, meshes)
        for path, value in out_leaves
    ]
    return Report(function_name(f), collectives_in_hlo(text), inputs, outputs, text)


def _meshes(jaxpr: Any, args: tuple[Any, ...], compiled: Any) -> list[Any]:
    """The meshes a program's arrays may be laid out over: those of its shard_maps, then those
    of its arguments' and compiled inputs' and outputs' NamedShardings."""
    found = _shard_map_meshes(jaxpr)
    in_shardings, _ = compiled.input_shardings
    for sharding in [*(getattr(a, "sharding", None) for a in jax.tree.leaves(args)),
                     *jax.tree.leaves(in_shardings), *jax.tree.leaves(compiled.output_shardings)]:
        mesh = getattr(sharding, "mesh", None)
        if hasattr(mesh, "device_ids"):
            found.append(mesh)
    return list(dict.fromkeys(found))


def _shard_map_meshes(jaxpr: Any) -> list[Any]:
    """The concrete meshes of every shard_map in a jaxpr, nested ones included."""
    found = []
    for eqn in jaxpr.eqns:
        mesh = eqn.params.get("mesh")
        if eqn.primitive.name == "shard_map" and hasattr(mesh, "device_ids"):
            found.append(mesh)
        for value in eqn.params.values():
            for inner in value if isinstance(value, (tuple, list)) else (value,):
                inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr holds a Jaxpr
                if hasattr(inner, "eqns"):
                    found += _shard_map_meshes(inner)
    return found


def as_partition_spec(sharding: Any, shape: tuple[int, ...], mesh: Any) -> Any:
    """A PartitionSpec that lays an array of ``shape`` out over ``mesh`` exactly as
    ``sharding`` does (the first found, with the fewest axes per dimension), or None.

    Compiled programs often describe an input by its HLO sharding only (a ``GSPMDSharding``
    such as ``{devices=[8]<=[8]}``); on the mesh it came from it is a plain spec.
    """
    from jax.sharding import NamedSharding, PartitionSpec

    mesh_ids = {int(d) for d in np.asarray(mesh.device_ids).flat}
    if {d.id for d in sharding.device_set} != mesh_ids:
        return None
    try:
        block = sharding.shard_shape(shape)
    except (AttributeError, ValueError, TypeError):
        return None
    sizes = {str(name): int(size) for name, size in mesh.shape.items()}
    axes = [name for name, size in sizes.items() if size > 1]
    choices = []
    for size, piece in zip(shape, block, strict=True):
        parts = size // piece if piece else 1
        choices.append([split for k in range(len(axes) + 1)
                        for split in itertools.permutations(axes, k)
                        if math.prod(sizes[a] for a in split) == parts])
    for splits in itertools.product(*choices):
        used = [a for split in splits for a in split]
        if len(used) != len(set(used)):
            continue
        entries = [None if not s else s[0] if len(s) == 1 else s for s in splits]
        while entries and entries[-1] is None:
            entries.pop()
        spec = PartitionSpec(*entries)
        if NamedSharding(mesh, spec).is_equivalent_to(sharding, len(shape)):
            return spec
    return None


def _info(path: str, value: Any, sharding: Any, meshes: list[Any] = ()) -> ArrayInfo:
    shape = tuple(int(d) for d in value.shape)
    dtype = np.dtype(value.dtype)
    spec = getattr(sharding, "spec", None)
    mesh = getattr(sharding, "mesh", None)
    for candidate in meshes if spec is None or mesh is None else ():
        spec = as_partition_spec(sharding, shape, candidate)
        if spec is not None:
            mesh = candidate
            break
    if spec is not None and mesh is not None:
        axes = ", ".join(f"{name!r}: {size}" for name, size in mesh.shape.items())
        described = f"{spec_text(spec)} on mesh {{{axes}}}"
    else:
        described = str(sharding)
    try:
        block = tuple(int(d) for d in sharding.shard_shape(shape))
    except (AttributeError, ValueError, TypeError):  # a sharding that cannot tell
        return ArrayInfo(path, dtype.name, shape, described, None, None)
    return ArrayInfo(path, dtype.name, shape, described, block, math.prod(block) * dtype.itemsize)


# --- formatting --------------------------------------------------------------------------------
def _type(dtype: str, shape: tuple[int, ...]) -> str:
    return f"{dtype}[{','.join(map(str, shape))}]"


def _types(arrays: tuple[tuple[str, tuple[int, ...]], ...]) -> str:
    return ", ".join(_type(dtype, shape) for dtype, shape in arrays)


def _moved(c: Collective) -> str:
    return f"{_types(c.operands)} → {_types(c.result)}"


def _bytes(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


def _block(info: ArrayInfo) -> str:
    if info.block is None:
        return "?"
    return f"{'×'.join(map(str, info.block)) or 'scalar'} ({info.block_bytes} bytes)"


def _groups_text(c: Collective) -> str:
    if c.pairs:
        return " ".join(f"{a}→{b}" for a, b in c.pairs)
    if c.groups == ():
        return "all devices"
    if c.groups is None:
        return c.groups_text
    return " ".join("{" + ",".join(map(str, g)) + "}" for g in c.groups)


def _chip(device: int) -> str:
    return (f'<span style="background:{device_colour(device)};color:#000;padding:0 4px;'
            f'border-radius:3px;margin:0 1px">{device}</span>')


def _groups_html(c: Collective) -> str:
    if c.pairs:
        return " ".join(f"{_chip(a)}→{_chip(b)}" for a, b in c.pairs)
    if c.groups is None or c.groups == ():
        return html.escape(_groups_text(c))
    return " ".join("{" + "".join(_chip(d) for d in g) + "}" for g in c.groups)


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows]
