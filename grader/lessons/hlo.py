"""Reading compiled HLO: every collective of a program, what it moves and who talks to whom.

:func:`collectives_in_hlo` reads the text of an HLO module, the per-device program XLA runs
(``jax.jit(f).lower(...).compile().as_text()``), into :class:`Collective` records; the
compiled-code inspector (:mod:`grader.lessons.inspector`) shows them.

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

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

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
_COMPUTATION = re.compile(r"^(?:ENTRY\s+)?%([\w.\-]+)\s*\(.*\{\s*$")
_NOISE = re.compile(r",\s*(?:metadata|frontend_attributes|backend_config)=")

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

@dataclass(frozen=True)
class Collective:
    """One collective of a compiled program, as each device runs it.

    ``operands`` and ``result`` are (dtype, shape) pairs per device; ``bytes`` is the size of
    the operands on one device, ``sent`` the bytes one device sends under :data:`RING_MODEL`
    (the most any device sends, for a collective-permute; None when the group is not known);
    ``groups`` lists the groups of device ids that communicate (None when XLA printed them in
    a form this module does not know: see ``groups_text``), ``pairs`` the (source, target)
    pairs of a collective-permute. ``reduction`` is how an all-reduce or a reduce-scatter
    combines values (the root opcode of the computation it applies: ``"add"``, ``"maximum"``,
    ...; None for the other collectives); ``line`` is its instruction as XLA printed it (its
    ``-start`` half, for an async pair), without the metadata that follows.
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
    reduction: str | None = None
    line: str = ""


# --- what a lesson asks: the collectives XLA compiled a function to ---------------------------
def compiled_text(f: Callable, *args: Any) -> str:
    """The HLO text XLA compiles ``jax.jit(f)`` to for ``args``: the program each device runs."""
    return jax.jit(f).lower(*args).compile().as_text()


def collectives(f: Callable, *args: Any) -> list[Collective]:
    """Every collective of the program XLA compiles ``jax.jit(f)`` to for ``args``, in order."""
    return collectives_in_hlo(compiled_text(f, *args))


def collective_names(f: Callable, *args: Any) -> list[str]:
    """The sorted names of the kinds of collective in that program (``[]``: no communication)."""
    return sorted({c.op for c in collectives(f, *args)})


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
    roots: dict[str, str] = {}  # computation -> the opcode of its ROOT instruction
    instructions = []
    computation = None
    for printed in text.splitlines():
        line = _COMMENT.sub("", printed)  # XLA numbers long operand lists: /*index=5*/
        if header := _COMPUTATION.match(line):
            computation = header.group(1)
            continue
        match = _DEFINITION.match(line)
        if not match:
            continue
        rest = line[match.end():]
        type_text, rest = _split_type(rest)
        types[match.group(1)] = type_text
        if line.lstrip().startswith("ROOT") and computation is not None:
            roots.setdefault(computation, rest.strip().split("(", 1)[0])
        shown = _NOISE.split(printed, maxsplit=1)[0].strip()
        instructions.append((match.group(1), type_text, rest.strip(), shown))
    done_of: dict[str, str] = {}
    for _, type_text, rest, _ in instructions:
        opcode = rest.split("(", 1)[0]
        if opcode.endswith("-done"):
            operands, _ = _operands(rest)
            for operand in operands:
                done_of[operand[1]] = type_text
    found = []
    for name, type_text, rest, shown in instructions:
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
        applied = _attribute(attributes, "to_apply")
        found.append(Collective(
            op=base, name=name, operands=shapes, result=result, bytes=size,
            groups=groups, groups_text=groups_text, pairs=pairs, asynchronous=asynchronous,
            sent=bytes_sent(base, size, groups, pairs, n_devices),
            reduction=roots.get(applied.lstrip("%")) if applied else None, line=shown,
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
