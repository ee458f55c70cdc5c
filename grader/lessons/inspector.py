"""What a jitted function really does on the devices: its collectives and its shardings.

``inspect_compiled(f, *args)`` compiles ``jax.jit(f)`` for ``args`` (or uses ``f`` as it is if
it is already jitted) and reads the compiled HLO, the per-device program XLA runs. The
:class:`Report` lists every collective in it (operation, operand shapes and dtype, the size of
its operands on one device, the bytes each device sends, which devices talk to each other) and
the shardings the program was compiled for, as PartitionSpecs over the mesh wherever a mesh of
the program (one of ``f``'s ``shard_map``, or of a sharded argument) lays the array out that
way. In a notebook it shows as an HTML table; ``print`` gives the same as text.

Bytes sent follow one stated model, :data:`RING_MODEL`: each collective runs as a ring over the
``n`` devices of its group, the textbook algorithm (XLA may pick another; on one machine's CPU
"sending" is a copy in memory). It is what a learner can compare between programs, not a
measurement.

How the HLO is read: an instruction is ``%name = type opcode(operands), attributes``; operands
are named, and their types come from the instructions that define them. An asynchronous
``-start``/``-done`` pair is one collective. Device groups are printed by XLA in several forms
(``{{0,1},{2,3}}``, ``[2,4]<=[8]``, ``mesh['axis_0'=4,'axis_1'=2] {'axis_0'}``); all are
expanded to lists of device ids.
"""

from __future__ import annotations

import html
import inspect
import itertools
import math
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from grader import messages as msg
from grader.lessons.drawing import function_name, spec_text
from grader.palette import device_colour
from grader.probes import COLLECTIVES

#: Bytes per element of each HLO element type (4-bit types count as half a byte).
ITEMSIZE = {
    "pred": 1, "s2": 0.25, "u2": 0.25, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2,
    "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8,
    "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3": 1, "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1, "f8e4m3b11fnuz": 1, "f8e3m4": 1, "f4e2m1fn": 0.5, "f8e8m0fnu": 1,
}

_DEFINITION = re.compile(r"^\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_OPERAND_NAME = re.compile(r"%([\w.\-]+)")
_COMMENT = re.compile(r"/\*.*?\*/")
_PARTITIONS = re.compile(r"\bnum_partitions=(\d+)")

#: What each device sends in one collective of a group of ``n`` devices, if it runs as a ring:
#: an all-reduce is a reduce-scatter then an all-gather of the n pieces of its operand; an
#: all-gather passes n - 1 blocks on; a reduce-scatter and an all-to-all send all but the
#: device's own n-th of the operand; a collective-permute sends the operand to its target.
RING_MODEL = {
    "all-reduce": ("2(n-1)/n × operand", lambda n: 2 * (n - 1) / n),
    "all-gather": ("(n-1) × operand", lambda n: n - 1),
    "reduce-scatter": ("(n-1)/n × operand", lambda n: (n - 1) / n),
    "all-to-all": ("(n-1)/n × operand", lambda n: (n - 1) / n),
    "collective-permute": ("the operand to its target", lambda n: 1),
}
#: The footnote of the "bytes sent" column: the model in words (template in grader.messages).
RING_NOTE = msg.RING_NOTE.format(
    rules="; ".join(f"{op} {rule}" for op, (rule, _) in RING_MODEL.items())
)


@dataclass(frozen=True)
class Collective:
    """One collective of a compiled program, as each device runs it.

    ``operands`` and ``result`` are (dtype, shape) pairs per device; ``bytes`` is the size of
    the operands on one device, ``sent`` the bytes one device sends under :data:`RING_MODEL`
    (the most any device sends, for a collective-permute; None when the group is not known);
    ``groups`` lists the groups of device ids that communicate (None when XLA printed them in
    a form this module does not know: see ``groups_text``), ``pairs`` the (source, target)
    pairs of a collective-permute.
    """

    op: str
    name: str
    operands: tuple[tuple[str, tuple[int, ...]], ...]
    result: tuple[tuple[str, tuple[int, ...]], ...]
    bytes: int
    groups: tuple[tuple[int, ...], ...] | None
    groups_text: str
    pairs: tuple[tuple[int, int], ...] = ()
    asynchronous: bool = False
    sent: float | None = None


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
        """How many of each collective, as :func:`grader.probes.hlo_collectives` counts."""
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
        """Bytes each device sends, all collectives together, under :data:`RING_MODEL` (None
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
                "(ring model)")

    # --- renderings ------------------------------------------------------------------------
    def __str__(self) -> str:
        lines = [self.summary()]
        if self.collectives:
            rows = [("op", "operands → result (per device)", "operand bytes", "bytes sent*",
                     "devices that communicate")]
            rows += [(c.op, _moved(c), str(c.bytes), _bytes(c.sent), _groups_text(c))
                     for c in self.collectives]
            lines += _table(rows)
            lines += textwrap.wrap(f"* {RING_NOTE}", width=96, initial_indent="  ",
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
            parts.append(f'</table><p class="ring-model"><small>* {html.escape(RING_NOTE)}'
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
    names = _parameter_names(f, len(args))
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


def _parameter_names(f: Callable, count: int) -> list[str]:
    """The names of the first ``count`` positional parameters of the function compiled: ``f``
    or, for a jitted ``f``, the function it wraps, without following any further wrapper (a
    shard_map's wrapper has no names: its body's describe blocks); args[i] where unknown."""
    names = [f"args[{i}]" for i in range(count)]
    compiled = getattr(f, "__wrapped__", f) if hasattr(f, "lower") else f
    try:
        parameters = list(inspect.signature(compiled, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return names
    for i, parameter in enumerate(parameters[:count]):
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD):
            names[i] = parameter.name
        else:
            break
    return names


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


# --- reading compiled HLO --------------------------------------------------------------------
def collectives_in_hlo(text: str, n_devices: int | None = None) -> list[Collective]:
    """Every collective instruction of an HLO module's text, in program order; an async
    ``-start``/``-done`` pair counts once (at its start).

    ``n_devices`` is the size of the group ``{}`` (all the program's devices); by default the
    ``num_partitions`` of the module's header, if it has one.
    """
    if n_devices is None and (partitions := _PARTITIONS.search(text)):
        n_devices = int(partitions.group(1))
    types: dict[str, str] = {}
    instructions = []
    for line in text.splitlines():
        line = _COMMENT.sub("", line)  # XLA numbers long operand lists: /*index=5*/
        match = _DEFINITION.match(line)
        if not match:
            continue
        rest = line[match.end():]
        type_text, rest = _split_type(rest)
        types[match.group(1)] = type_text
        instructions.append((match.group(1), type_text, rest.strip()))
    done_of: dict[str, str] = {}
    for _, type_text, rest in instructions:
        opcode = rest.split("(", 1)[0]
        if opcode.endswith("-done"):
            operands, _ = _operands(rest)
            for operand in operands:
                done_of[operand[1]] = type_text
    found = []
    for name, type_text, rest in instructions:
        opcode = rest.split("(", 1)[0]
        base = opcode.removesuffix("-start")
        if base not in COLLECTIVES:
            continue
        operands, attributes = _operands(rest)
        shapes = tuple(
            parsed for typed, operand in operands
            for parsed in _arrays(typed or types.get(operand, ""))
        )
        asynchronous = opcode.endswith("-start")
        result = _arrays(done_of.get(name, type_text)) if asynchronous else _arrays(type_text)
        groups_text, groups, pairs = _groups(base, attributes)
        size = int(sum(math.prod(shape) * ITEMSIZE.get(dtype, 0) for dtype, shape in shapes))
        found.append(Collective(
            op=base, name=name, operands=shapes, result=result, bytes=size,
            groups=groups, groups_text=groups_text, pairs=pairs, asynchronous=asynchronous,
            sent=bytes_sent(base, size, groups, pairs, n_devices),
        ))
    return found


def bytes_sent(op: str, operand_bytes: int, groups: tuple[tuple[int, ...], ...] | None,
               pairs: tuple[tuple[int, int], ...] = (), n_devices: int | None = None
               ) -> float | None:
    """The bytes one device sends in a collective under :data:`RING_MODEL` (a device of the
    largest group; for a collective-permute, the most any device sends); None if unknown.

    ``groups`` are the device groups as :func:`parse_replica_groups` gives them (``()``: one
    group of all ``n_devices``).
    """
    if op == "collective-permute":
        targets: dict[int, int] = {}
        for source, target in pairs:
            if source != target:
                targets[source] = targets.get(source, 0) + 1
        return float(operand_bytes * max(targets.values(), default=0))
    if groups is None or (groups == () and n_devices is None):
        return None
    n = max((len(g) for g in groups), default=n_devices)
    return operand_bytes * RING_MODEL[op][1](n) if n > 1 else 0.0


def _split_type(text: str) -> tuple[str, str]:
    """Split ``type opcode(...)`` into the type and the rest; a tuple type has parentheses."""
    text = text.lstrip()
    if not text.startswith("("):
        head, _, rest = text.partition(" ")
        return head, rest
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return text[: i + 1], text[i + 1:]
    return text, ""


def _operands(rest: str) -> tuple[list[tuple[str, str]], str]:
    """The operands of ``opcode(a, b), attributes`` as (type or "", name), and the attributes."""
    start = rest.index("(")
    depth = 0
    for i in range(start, len(rest)):
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(rest[i], 0)
        if depth == 0:
            inside, attributes = rest[start + 1: i], rest[i + 1:]
            break
    else:
        inside, attributes = rest[start + 1:], ""
    operands = []
    for part in _split_top(inside):
        names = _OPERAND_NAME.findall(part)
        if names:
            typed = part[: part.index("%" + names[-1])].strip()
            operands.append((typed, names[-1]))
    return operands, attributes


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return parts + [current] if current.strip() else parts


def _arrays(type_text: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(dtype, shape) for each array in an HLO type such as ``(f32[2,8]{1,0}, f32[])``."""
    found = []
    for dtype, dims in _ARRAY.findall(type_text):
        if dtype in ITEMSIZE:
            found.append((dtype, tuple(int(d.lstrip("<=")) for d in dims.split(",") if d)))
    return tuple(found)


def _attribute(attributes: str, key: str) -> str | None:
    """The raw text of ``key=...`` among an instruction's attributes (nesting respected)."""
    match = re.search(r"(?:^|,)\s*" + re.escape(key) + "=", attributes)
    if not match:
        return None
    text = attributes[match.end():]
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if depth < 0 or (depth == 0 and char == "," and not _continues(text[i + 1:])):
            return text[:i].strip()
    return text.strip()


def _continues(text: str) -> bool:
    # `mesh[...], device_ids=(...) {...}` is one value that contains a comma
    return text.lstrip().startswith("device_ids=")


def _groups(op: str, attributes: str):
    if op == "collective-permute":
        text = _attribute(attributes, "source_target_pairs") or ""
        pairs = tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", text))
        return text, None, pairs
    text = _attribute(attributes, "replica_groups")
    if text is None:
        return "", None, ()
    return text, parse_replica_groups(text), ()


def parse_replica_groups(text: str) -> tuple[tuple[int, ...], ...] | None:
    """Expand XLA's printed device groups into tuples of device ids (None if unknown).

    Handles the explicit list ``{{0,1},{2,3}}``, the iota form ``[2,4]<=[4,2]T(1,0)`` and the
    mesh form ``mesh['a'=4,'b'=2] {'a'}`` (with ``device_ids=(...)`` and sub-axes such as
    ``'b':(2)2``). ``{}`` means one group of all devices, which only the caller can expand:
    it is returned as an empty tuple.
    """
    text = text.strip()
    if text.startswith("{"):
        return tuple(tuple(int(d) for d in g.split(",") if d)
                     for g in re.findall(r"\{([\d,]*)\}", text[1:-1]))
    iota = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
    if iota:
        shape = _ints(iota.group(1))
        ids = _iota(_ints(iota.group(2)), iota.group(3))
        return tuple(tuple(int(d) for d in row) for row in ids.reshape(shape))
    mesh = re.fullmatch(
        r"mesh\[([^\]]*)\](?:,\s*device_ids=\((.*)\))?\s*\{(.*)\}", text, flags=re.S
    )
    if mesh:
        return _mesh_groups(mesh.group(1), mesh.group(2), mesh.group(3))
    return None


def _ints(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d]


def _iota(reshape: list[int], transpose: str | None) -> np.ndarray:
    ids = np.arange(math.prod(reshape)).reshape(reshape)
    if transpose:
        ids = ids.transpose(_ints(transpose))
    return ids.ravel()


def _mesh_groups(axes_text: str, ids_text: str | None, grouped_text: str):
    axes = re.findall(r"'([^']*)'=(\d+)", axes_text)
    names, sizes = [a for a, _ in axes], [int(s) for _, s in axes]
    total = math.prod(sizes)
    if ids_text is None:
        ids = np.arange(total)
    else:
        iota = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", ids_text.strip())
        if iota and iota.group(2):
            ids = _iota(_ints(iota.group(1)), iota.group(2))
        elif iota and len(_ints(iota.group(1))) == total:
            ids = np.array(_ints(iota.group(1)))
        else:
            return None
    # Each referenced axis (or sub-axis `'a':(pre)size`) becomes its own dimension.
    refs = re.findall(r"'([^']*)'(?::\((\d+)\)(\d+))?", grouped_text)
    pieces: dict[int, list[tuple[int, int]]] = {}
    for name, pre, size in refs:
        if name not in names:
            return None
        if pre:
            pieces.setdefault(names.index(name), []).append((int(pre), int(size)))
    dims, grouped_at, offset = [], {}, 0
    for axis, size in enumerate(sizes):
        cuts = sorted(pieces.get(axis, []))
        if not cuts:
            dims.append(size)
            grouped_at[(axis, None)] = offset
            offset += 1
            continue
        done = 1
        for pre, part in cuts:
            if pre != done:
                dims.append(pre // done)
                offset += 1
                done = pre
            dims.append(part)
            grouped_at[(axis, (pre, part))] = offset
            offset += 1
            done *= part
        if done != size:
            dims.append(size // done)
            offset += 1
    grouped = [
        grouped_at[(names.index(name), (int(pre), int(size)) if pre else None)]
        for name, pre, size in refs
    ]
    rest = [d for d in range(len(dims)) if d not in grouped]
    arranged = ids.reshape(dims).transpose(rest + grouped)
    group_size = math.prod(dims[d] for d in grouped)
    return tuple(tuple(int(d) for d in row) for row in arranged.reshape(-1, group_size))


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
