"""The one reader of program text: compiled HLO and traced StableHLO.

Everything the course learns from the text of a program is read here, for the probes, the
public and hidden tests, the verifier's footprint and the lessons alike
(:mod:`grader.lessons.hlo` is this module under the name the notebooks import).

**Compiled HLO** (``jax.jit(f).lower(...).compile().as_text()``) is the program each device
runs. :func:`parse` reads it into a :class:`Module` of computations of :class:`Instruction`
records; :func:`collectives_in_hlo` gives its collectives with their operands, results,
bytes and device groups, :func:`count_collectives` how many of each kind, :func:`received`
the bytes one device receives per kind with the turns of the loops they run in.

An instruction is printed ``%name = type opcode(operands), key=value, ...``; an asynchronous
``-start``/``-done`` pair is one collective. Device groups are printed in several forms
(``{{0,1},{2,3}}``, ``[2,4]<=[8]``, ``mesh['axis_0'=4,'axis_1'=2] {'axis_0'}``), all expanded
to lists of device ids (:func:`parse_replica_groups`).

**Author text is never read as structure.** A program's author chooses names that reach the
text: name scopes and source locations (``metadata``), ``frontend_attributes``, mesh axis
names, a custom call's strings. The reader splits a line only outside quoted strings and
comments, and drops ``metadata`` and ``frontend_attributes`` before any attribute is read, so
a name scope that reads ``all-reduce(`` or ``to_apply=%x`` is a name and nothing else.

**StableHLO** (the traced module, :attr:`grader.framework.probes.Program.module`) is read by
:func:`traced`: the collectives by the JAX primitive that traced to them and the mesh axes
they act over, and the shard_maps with their manual axes.

Bytes sent follow one stated model, :data:`TRAFFIC_MODEL`: the reductions and gathers run as a
ring over the ``n`` devices of their group, an all-to-all as a direct exchange (each piece
straight to the device it is for, as over a switch), a collective-permute point to point. XLA
may pick other algorithms, and on one machine's CPU "sending" is a copy in memory: the model is
what a learner can compare between programs, not a measurement.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader import messages as msg

#: Collective operations of compiled HLO, by the name :func:`count_collectives` reports.
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
#: Every operation that moves data between devices, by its HLO opcode: what JAX's collectives
#: compile to, and the rest of what a program handed in as bytes could hold.
MOVING = (*COLLECTIVES, "collective-broadcast", "ragged-all-to-all", "recv")

#: Bytes per element of each HLO element type (4-bit types count as half a byte).
ITEMSIZE = {
    "pred": 1, "s2": 0.25, "u2": 0.25, "s4": 0.5, "u4": 0.5, "s8": 1, "u8": 1, "s16": 2,
    "u16": 2, "s32": 4, "u32": 4, "s64": 8, "u64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8,
    "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1, "f8e4m3": 1, "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1, "f8e4m3b11fnuz": 1, "f8e3m4": 1, "f4e2m1fn": 0.5, "f8e8m0fnu": 1,
}

#: What each device sends in one collective of a group of ``n`` devices. Around a ring, an
#: all-reduce is a reduce-scatter then an all-gather of the n pieces of its operand, an
#: all-gather passes n - 1 blocks on, a reduce-scatter sends all but the device's own n-th of
#: the operand. In a direct exchange an all-to-all sends each other device its piece once, all
#: but its own n-th (around a ring, pieces would be forwarded and cost more). A
#: collective-permute sends the operand to its target.
TRAFFIC_MODEL = {
    "all-reduce": ("2(n-1)/n × operand, a ring", lambda n: 2 * (n - 1) / n),
    "all-gather": ("(n-1) × operand, a ring", lambda n: n - 1),
    "reduce-scatter": ("(n-1)/n × operand, a ring", lambda n: (n - 1) / n),
    "all-to-all": ("(n-1)/n × operand, a direct exchange", lambda n: (n - 1) / n),
    "collective-permute": ("the operand to its target", lambda n: 1),
}

# --- the text of a line: strings, comments and brackets ---------------------------------------
#: What a line is split around: quoted strings (read whole), comments, brackets and commas.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|/\*.*?\*/|[()\[\]{},]')
_OPENS, _CLOSES = "([{", ")]}"
#: Attributes whose text the program's author chooses, dropped before anything is read.
AUTHORED = ("metadata", "frontend_attributes")
#: Attributes left out of an instruction as the lessons show it.
_NOT_SHOWN = (*AUTHORED, "backend_config")

_DEFINITION = re.compile(r"\s*(ROOT\s+)?%([\w.\-]+)\s*=\s*")
_COMPUTATION = re.compile(r"^(ENTRY\s+)?%([\w.\-]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_MODULE = re.compile(r"^HloModule\s+[\w.\-]+(.*)$")
_OPCODE = re.compile(r"([a-z][\w\-]*)\(")
_ARRAY = re.compile(r"([a-z][a-z0-9]*)\[([^\]]*)\]")
_NAME = re.compile(r"%([\w.\-]+)")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def _uncommented(line: str) -> str:
    """The line without its ``/*index=5*/`` comments (a comment inside a string is text)."""
    if "/*" not in line:
        return line
    return "".join(part for part in _pieces(line) if not part.startswith("/*"))


def _pieces(text: str) -> list[str]:
    """The text cut into tokens (:data:`_TOKEN`) and what lies between them."""
    pieces, done = [], 0
    for token in _TOKEN.finditer(text):
        if token.start() > done:
            pieces.append(text[done:token.start()])
        pieces.append(token.group(0))
        done = token.end()
    return pieces + [text[done:]] if done < len(text) else pieces


def _closing(text: str, start: int) -> int:
    """Where the bracket opened at ``text[start]`` closes (``len(text)`` if it does not)."""
    depth = 0
    for token in _TOKEN.finditer(text, start):
        char = token.group(0)
        if char in _OPENS:
            depth += 1
        elif char in _CLOSES:
            depth -= 1
            if depth == 0:
                return token.start()
    return len(text)


def _split_top(text: str) -> list[tuple[int, str]]:
    """The parts of ``text`` between its top-level commas, with where each starts."""
    parts, depth, start = [], 0, 0
    for token in _TOKEN.finditer(text):
        char = token.group(0)
        if char in _OPENS:
            depth += 1
        elif char in _CLOSES:
            depth -= 1
        elif char == "," and depth == 0:
            parts.append((start, text[start:token.start()]))
            start = token.end()
    if text[start:].strip():
        parts.append((start, text[start:]))
    return parts


def _attributes(text: str) -> tuple[dict[str, str], int]:
    """An instruction's ``key=value`` attributes (author text dropped), and where the first
    attribute not shown starts (``len(text)`` if none)."""
    found: dict[str, str] = {}
    hidden_from = len(text)
    previous = None
    for start, part in _split_top(text):
        key, equals, value = part.strip().partition("=")
        if not equals:
            continue
        if key in _NOT_SHOWN:
            hidden_from = min(hidden_from, start - 1)
        if key in AUTHORED:
            continue
        if key == "device_ids" and previous == "replica_groups":  # part of the mesh form
            found[previous] += f", {part.strip()}"
            continue
        found[key] = value.strip()
        previous = key
    return found, hidden_from


# --- compiled HLO: instructions and computations ------------------------------------------------
@dataclass(frozen=True)
class Instruction:
    """One instruction of compiled HLO: its name, result type, opcode, operands as (type as
    printed with it or "", name), attributes by key (without the author's text), whether it
    is its computation's root, and the line as the lessons show it (without metadata and
    backend configuration)."""

    name: str
    type: str
    opcode: str
    operands: tuple[tuple[str, str], ...]
    attributes: dict[str, str] = field(hash=False)
    root: bool
    computation: str
    shown: str


@dataclass
class Module:
    """A compiled HLO module: its instructions in program order, by computation, with the
    entry computation's name and the module's ``num_partitions`` (None if not printed)."""

    instructions: list[Instruction]
    computations: dict[str, list[Instruction]]
    entry: str | None
    partitions: int | None

    @functools.cached_property
    def types(self) -> dict[str, str]:
        """Each instruction's result type by its name."""
        return {i.name: i.type for i in self.instructions}

    def operand_types(self, instruction: Instruction) -> list[str]:
        """The type of each operand of ``instruction``."""
        types = self.types
        return [typed or types.get(name, "") for typed, name in instruction.operands]


def parse(text: str) -> Module:
    """Read compiled HLO text into a :class:`Module`; lines that are not instructions or
    computation headers are skipped, and instructions outside any computation are kept
    (under the computation ``""``)."""
    instructions: list[Instruction] = []
    computations: dict[str, list[Instruction]] = {}
    entry, partitions, current = None, None, ""
    for printed in text.splitlines():
        if (header := _MODULE.match(printed)) is not None:
            value = _attributes(header.group(1).lstrip(", "))[0].get("num_partitions", "")
            partitions = int(value) if value.isdigit() else partitions
            continue
        if (header := _COMPUTATION.match(printed)) is not None:
            current = header.group(2)
            computations.setdefault(current, [])
            entry = current if header.group(1) else entry
            continue
        if (instruction := _instruction(printed, current)) is not None:
            instructions.append(instruction)
            computations.setdefault(current, []).append(instruction)
    return Module(instructions, computations, entry, partitions)


def _instruction(line: str, computation: str) -> Instruction | None:
    definition = _DEFINITION.match(line)
    if definition is None:
        return None
    at = definition.end()
    if line.startswith("(", at):  # a tuple type
        end = _closing(line, at) + 1
    else:
        end = line.find(" ", at) if " " in line[at:] else len(line)
    type_text = line[at:end]
    opcode = _OPCODE.match(line, end + 1) or _OPCODE.match(line, end)
    if opcode is None:
        return None
    closed = _closing(line, opcode.end() - 1)
    operands = []
    for _, part in _split_top(line[opcode.end():closed]):
        names = _NAME.findall(part)
        if names:
            typed = _uncommented(part[: part.index("%" + names[-1])]).strip()
            operands.append((typed, names[-1]))
    attributes, hidden_from = _attributes(line[closed + 1:])
    return Instruction(name=definition.group(2), type=type_text, opcode=opcode.group(1),
                       operands=tuple(operands), attributes=attributes,
                       root=bool(definition.group(1)), computation=computation,
                       shown=line[: closed + 1 + hidden_from].strip())


def arrays(type_text: str) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """(element type, shape) of each array in an HLO type such as ``(f32[2,8]{1,0}, s32[])``;
    a dynamic dimension (``<=8``) counts at its bound."""
    found = []
    for dtype, dims in _ARRAY.findall(type_text):
        if dtype in ITEMSIZE or dtype.startswith("f8"):
            shape = tuple(int(d) if d.isdigit() else 1
                          for d in (d.strip().lstrip("<=") for d in dims.split(",")) if d)
            found.append((dtype, shape))
    return tuple(found)


def type_bytes(type_text: str) -> int:
    """The bytes of an HLO type: an array (``f32[512]{0}``) or a tuple of them."""
    return sum(math.ceil(math.prod(shape) * ITEMSIZE.get(dtype, 1))
               for dtype, shape in arrays(type_text))


def largest_array(text: str) -> int:
    """The most elements of any array an instruction of compiled HLO makes, in any
    computation, fused ones included (a tuple's arrays one by one): the largest array shape
    the program names, whether or not it is ever stored whole."""
    return max((math.prod(shape) for instruction in parse(text).instructions
                for _, shape in arrays(instruction.type)), default=0)


#: Words in a custom call's target that name a library's matrix product (cuBLAS' ``gemm``,
#: oneDNN's ``matmul``): a backend may call one where the CPU prints ``dot``.
_MATMUL_TARGETS = ("gemm", "matmul")


def matmuls(text: str) -> int:
    """How many matrix-product instructions compiled HLO prints: its ``dot`` instructions (in
    fused computations too) and its custom calls of a library's matrix product. Each is
    counted once as printed: a loop body's once, whatever its number of turns, a computation
    that two fusions call once; a ``convolution`` is not counted."""
    return sum(_is_matmul(instruction) for instruction in parse(text).instructions)


def _is_matmul(instruction: Instruction) -> bool:
    target = instruction.attributes.get("custom_call_target", "").lower()
    return instruction.opcode == "dot" or (
        instruction.opcode == "custom-call" and any(w in target for w in _MATMUL_TARGETS))


# --- collectives ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Collective:
    """One collective of a compiled program, as each device runs it.

    ``operands`` and ``result`` are (dtype, shape) pairs per device; ``bytes`` is the size of
    the operands on one device, ``sent`` the bytes one device sends under :data:`TRAFFIC_MODEL`
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


def collectives_in_hlo(text: str, n_devices: int | None = None) -> list[Collective]:
    """Every collective instruction of an HLO module's text, in program order; an async
    ``-start``/``-done`` pair counts once (at its start).

    ``n_devices`` is the size of the group ``{}`` (all the program's devices); by default the
    ``num_partitions`` of the module's header, if it has one.
    """
    module = parse(text)
    n_devices = module.partitions if n_devices is None else n_devices
    roots = {}
    done_of: dict[str, str] = {}  # an async start's name -> the type of its -done
    for instruction in module.instructions:
        if instruction.root:
            roots.setdefault(instruction.computation, instruction.opcode)
        if instruction.opcode.endswith("-done"):
            for _, operand in instruction.operands:
                done_of[operand] = instruction.type
    found = []
    for instruction in module.instructions:
        base = instruction.opcode.removesuffix("-start")
        if base not in COLLECTIVES:
            continue
        shapes = tuple(parsed for typed in module.operand_types(instruction)
                       for parsed in arrays(typed))
        asynchronous = instruction.opcode.endswith("-start")
        result = arrays(done_of.get(instruction.name, instruction.type) if asynchronous
                        else instruction.type)
        groups_text, groups, pairs = _groups(base, instruction.attributes)
        size = int(sum(math.prod(shape) * ITEMSIZE.get(dtype, 1) for dtype, shape in shapes))
        applied = instruction.attributes.get("to_apply", "").lstrip("%")
        found.append(Collective(
            op=base, name=instruction.name, operands=shapes, result=result, bytes=size,
            groups=groups, groups_text=groups_text, pairs=pairs, asynchronous=asynchronous,
            sent=bytes_sent(base, size, groups, pairs, n_devices),
            reduction=roots.get(applied) if applied else None, line=instruction.shown,
        ))
    return found


def count_collectives(text: str) -> dict[str, int]:
    """How many of each of :data:`COLLECTIVES` compiled HLO text runs (an async pair once)."""
    counts = dict.fromkeys(COLLECTIVES, 0)
    for instruction in parse(text).instructions:
        base = instruction.opcode.removesuffix("-start")
        if base in counts:
            counts[base] += 1
    return counts


def bytes_sent(op: str, operand_bytes: int, groups: tuple[tuple[int, ...], ...] | None,
               pairs: tuple[tuple[int, int], ...] = (), n_devices: int | None = None
               ) -> float | None:
    """The bytes one device sends in a collective under :data:`TRAFFIC_MODEL` (a device of the
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
    return operand_bytes * TRAFFIC_MODEL[op][1](n) if n > 1 else 0.0


@functools.cache
def kept_on_one_device() -> bool:
    """Whether this backend compiles a collective over a group of one device: the CPU's keeps
    it (a copy), a GPU's drops it. Measured once, on a psum over the first device, so that a
    lesson run on one device states what it sees rather than what one backend does."""
    import jax
    from jax.sharding import AxisType, PartitionSpec

    one = jax.make_mesh((1,), ("one",), axis_types=(AxisType.Auto,), devices=jax.devices()[:1])
    psum = jax.shard_map(lambda block: jax.lax.psum(block, "one"), mesh=one,
                         in_specs=PartitionSpec("one"), out_specs=PartitionSpec())
    return bool(collectives(psum, np.zeros(1, np.float32)))


# --- what one device receives, loops counted --------------------------------------------------
_CALLEES = ("body", "condition", "to_apply", "calls", "true_computation", "false_computation")


def received(text: str) -> tuple[dict[str, int], set[str]]:
    """Bytes one device receives per kind of :data:`MOVING` operation in a compiled HLO
    module, walked from its entry computation: each collective as many times as it runs (once
    per turn of a loop, XLA's ``known_trip_count``; the costliest branch of a conditional),
    and the kinds that run in a loop of uncounted turns.

    An all-gather receives what it adds to its operand, a reduce-scatter what it takes away,
    a receive what it results in; the others their operand's size."""
    module = parse(text)
    types = module.types
    done: dict[str, tuple[dict[str, int], set[str]]] = {}

    def walk(name: str, depth: int = 0) -> tuple[dict[str, int], set[str]]:
        if depth > 64:
            return {}, {"collectives nested over 64 computations deep"}
        if name in done:
            return done[name]
        total: dict[str, int] = {}
        uncounted: set[str] = set()
        for instruction in module.computations.get(name, []):
            opcode, attributes = instruction.opcode, instruction.attributes
            base = opcode.removesuffix("-start")
            if base in MOVING:
                given = sum(type_bytes(types.get(o, "")) for _, o in instruction.operands)
                made = type_bytes(instruction.type) - (given if opcode.endswith("-start") else 0)
                moved = {"all-gather": made - given, "reduce-scatter": given - made,
                         "recv": made}
                total[base] = total.get(base, 0) + max(moved.get(base, given), 0)
            if opcode == "conditional":
                names = (_NAME.findall(attributes.get("branch_computations", "")) or
                         [attributes[k].lstrip("%") for k in _CALLEES[-2:] if k in attributes])
                worst: dict[str, int] = {}
                for branch in names:
                    inner, lost = walk(branch, depth + 1)
                    uncounted |= lost
                    worst = {k: max(worst.get(k, 0), inner.get(k, 0)) for k in {*worst, *inner}}
                _add(total, worst, 1)
                continue
            trips = _TRIP_COUNT.search(attributes.get("backend_config", ""))
            for role in _CALLEES:
                if role not in attributes:
                    continue
                inner, lost = walk(attributes[role].lstrip("%"), depth + 1)
                uncounted |= lost
                if opcode == "while" and trips is None and inner:
                    uncounted |= set(inner)
                turns = int(trips.group(1)) if trips else 1
                _add(total, inner, {"body": turns, "condition": turns + 1}.get(role, 1))
        done[name] = (total, uncounted)
        return done[name]

    return walk(module.entry) if module.entry else ({}, set())



def waiting_for_transfers(text: str) -> list[list[str]]:
    """For each loop (``while``) of a compiled HLO module, in the order the text prints them
    (an inner loop before the loop around it), the matrix products of its body that read,
    directly or through other instructions of the body, what a transfer of the same turn
    delivers: work that cannot start before that turn's transfer ends. ``[]`` for a body whose
    products read only what the turn began with, so that a backend may overlap its transfers
    with them.

    A product is one of :func:`matmuls`' kinds or an instruction that calls a computation
    holding one (a fusion, a call, an inner loop, a conditional's branches); a transfer is an
    operation of :data:`MOVING` (an async ``-start``/``-done`` pair included) or an instruction
    that calls a computation holding one."""
    module = parse(text)

    @functools.cache
    def holds(name: str, kind: str, depth: int = 0) -> bool:
        return depth <= 64 and any(
            (_is_matmul(i) if kind == "product" else _moves(i))
            or any(holds(callee, kind, depth + 1) for callee in _callees(i))
            for i in module.computations.get(name, []))

    waiting = []
    for loop in (i for i in module.instructions if i.opcode == "while"):
        delivered: set[str] = set()  # instructions of the body that read a transfer of the turn
        products = []
        for instruction in module.computations.get(loop.attributes.get("body", "").lstrip("%"),
                                                   []):
            calls = _callees(instruction)
            if _moves(instruction) or any(holds(c, "transfer") for c in calls):
                delivered.add(instruction.name)
            elif any(name in delivered for _, name in instruction.operands):
                delivered.add(instruction.name)
                if _is_matmul(instruction) or any(holds(c, "product") for c in calls):
                    products.append(instruction.name)
        waiting.append(products)
    return waiting


def _moves(instruction: Instruction) -> bool:
    return instruction.opcode.removesuffix("-start").removesuffix("-done") in MOVING


def _callees(instruction: Instruction) -> list[str]:
    """The computations an instruction calls: a fusion's, a loop's body and condition, a
    conditional's branches, a reduction's."""
    attributes = instruction.attributes
    return ([attributes[role].lstrip("%") for role in _CALLEES if role in attributes]
            + _NAME.findall(attributes.get("branch_computations", "")))


def turns(text: str) -> dict[str, int]:
    """How many times each computation of a compiled HLO module runs per call, walked from
    its entry computation: a loop body once per turn (XLA's ``known_trip_count``, 1 when not
    printed), every branch of a conditional once; a computation reached from several places
    adds up."""
    module = parse(text)
    counted: dict[str, int] = {}

    def walk(name: str, times: int, depth: int = 0) -> None:
        if depth > 64 or not times:
            return
        counted[name] = counted.get(name, 0) + times
        for instruction in module.computations.get(name, []):
            attributes = instruction.attributes
            trips = _TRIP_COUNT.search(attributes.get("backend_config", ""))
            loop = int(trips.group(1)) if trips and instruction.opcode == "while" else 1
            for role in _CALLEES:
                if role in attributes:
                    each = {"body": loop, "condition": loop + 1}.get(role, 1)
                    walk(attributes[role].lstrip("%"), times * each, depth + 1)
            for branch in _NAME.findall(attributes.get("branch_computations", "")):
                walk(branch, times, depth + 1)

    if module.entry:
        walk(module.entry, 1)
    return counted


def mesh_axes(collective: Collective, sizes: dict[str, int], ids: list[int] | None = None
              ) -> tuple[str, ...] | None:
    """The axes of a mesh (its axis sizes in order and its device ids, row-major, as
    ``mesh.devices.flat`` gives them) that a compiled collective acts over: the smallest set
    of axes whose device groups its groups are (all the axes of more than one device for the
    group of every device), the axes along which a permute's pairs differ; None when its
    groups fit no set of axes or were not read. An axis of size 1 is never named."""
    if collective.op == "collective-permute":
        found = _axes_of([list(p) for p in collective.pairs], True, (sizes, ids))
    elif collective.groups is None:
        return None
    elif collective.groups == ():
        return tuple(name for name, size in sizes.items() if size > 1)
    else:
        found = _axes_of([list(g) for g in collective.groups], False, (sizes, ids))
    return None if found is None else tuple(found)


def sent_per_axis(text: str, sizes: dict[str, int], ids: list[int] | None = None
                  ) -> dict[tuple[str, ...] | None, dict[str, float]]:
    """The bytes one device sends per call of a compiled program, under
    :data:`TRAFFIC_MODEL`, by the mesh axes each collective acts over (:func:`mesh_axes`)
    and by kind: each collective counted as many times as its computation runs
    (:func:`turns`)."""
    module = parse(text)
    where = {i.name: i.computation for i in module.instructions}
    times = turns(text)
    total: dict[tuple[str, ...] | None, dict[str, float]] = {}
    for collective in collectives_in_hlo(text):
        runs = times.get(where.get(collective.name, ""), 0)
        if not runs or collective.sent is None:
            continue
        kinds = total.setdefault(mesh_axes(collective, sizes, ids), {})
        kinds[collective.op] = kinds.get(collective.op, 0) + collective.sent * runs
    return total

def _add(total: dict[str, int], more: dict[str, int], times: int) -> None:
    for kind, count in more.items():
        total[kind] = total.get(kind, 0) + count * times


# --- device groups in every printed form ---------------------------------------------------------
def _groups(op: str, attributes: dict[str, str]):
    if op == "collective-permute":
        text = attributes.get("source_target_pairs", "")
        pairs = tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", text))
        return text, None, pairs
    text = attributes.get("replica_groups")
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


# --- a function's compiled program, for the lessons and the tests in the kernel ---------------
def compiled_text(f: Callable, *args: Any) -> str:
    """The HLO text XLA compiles ``jax.jit(f)`` to for ``args``: the program each device runs."""
    import jax

    return jax.jit(f).lower(*args).compile().as_text()


def collectives(f: Callable, *args: Any) -> list[Collective]:
    """Every collective of the program XLA compiles ``jax.jit(f)`` to for ``args``, in order."""
    return collectives_in_hlo(compiled_text(f, *args))


def collective_names(f: Callable, *args: Any) -> list[str]:
    """The sorted names of the kinds of collective in that program (``[]``: no communication)."""
    return sorted({c.op for c in collectives(f, *args)})


# --- StableHLO: what the traced program does ---------------------------------------------------
# Each operation of the printed module starts a line (`%r = "dialect.op"(...)` in generic form,
# `%r = dialect.op ...` in pretty form); text the author chose (names, locations) sits in
# string literals, which are blanked before anything is matched.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_OPERATION = re.compile(r"^\s*(?:%[^=]*=\s*)?(?:\"(?P<quoted>[\w.]+)\"|(?P<plain>[a-z_]+\.[\w.]+))")
_MESH = re.compile(r'^\s*sdy\.mesh @(\S+) = <\[(.*?)\](?:, device_ids=\[([\d, ]*)\])?>')
_MESH_AXIS = re.compile(r'"([^"]*)"=(\d+)')
_MANUAL = re.compile(r'manual_computation.*?in_shardings=\[<@(\S+?),.*manual_axes=\{([^}]*)\}')
_TRACED_GROUPS = re.compile(
    r"(replica_groups|source_target_pairs) = dense<(.*?)> : tensor<(\d+)x(\d+)x")
#: Replica groups named by mesh axes (JAX 0.11's default lowering of shard_map collectives,
#: `jax_use_rgv3`), the mesh cited by symbol or inlined.
_MESH_AXES_GROUPS = re.compile(r"replica_groups = #stablehlo\.replica_group_mesh_axes<mesh = "
                               r"(?:@(?P<symbol>[\w.\-]+)|#sdy\.mesh<\[(?P<inline>.*?)\]>), "
                               r"axes = \[(?P<axes>.*?)\]>")
_AXIS_REF = re.compile(r'#stablehlo\.axis_ref<name = "([^"]*)"')
_REDUCTION = re.compile(r"\bstablehlo\.(add|maximum|minimum|multiply|and|or|xor)\b")
#: StableHLO collectives by the name of the JAX primitive that traces to them.
_PRIMITIVES = {
    "stablehlo.all_gather": "all_gather",
    "stablehlo.reduce_scatter": "reduce_scatter",
    "stablehlo.all_to_all": "all_to_all",
    "stablehlo.collective_permute": "ppermute",
    "stablehlo.partition_id": "axis_index",
}
#: An all-reduce by how it combines values.
_ALL_REDUCES = {"add": "psum", "maximum": "pmax", "minimum": "pmin"}


def traced(text: str) -> dict[str, list[dict[str, Any]]]:
    """The collectives a StableHLO module performs and the shard_maps it runs.

    Returns ``{"collectives": [{"primitive", "axes"}], "shard_maps": [{"mesh": {axis:
    size}, "manual_axes": [...]}]}``. Collectives are named by the JAX primitive that traces
    to them (an all-reduce by how it combines: ``psum``, ``pmax``, ``pmin``); ``axis_index``
    (a read of the device's position) acts over the manual axes of the shard_map around it.
    A program on one device keeps no mesh (JAX drops it, with the shard_map): its collectives
    are there, over no named axis, and it has no shard_map.
    """
    named = text.splitlines()  # operation, mesh and axis names as printed
    lines = [_STRING.sub('""', line) for line in named]  # everything else, strings blanked
    found_meshes = meshes(named)
    collectives: list[dict[str, Any]] = []
    shard_maps: list[dict[str, Any]] = []
    manual: list[tuple[int, list[str]]] = []  # (depth its region opened at, its manual axes)
    depth = 0
    for index, line in enumerate(lines):
        match = _OPERATION.match(named[index])
        name = match.group("quoted") or match.group("plain") if match else None
        if name == "sdy.manual_computation":
            found = _MANUAL.search(named[index])
            if found and found.group(1) in found_meshes:
                axes = re.findall(r'"([^"]*)"', found.group(2))
                shard_maps.append({"mesh": dict(found_meshes[found.group(1)][0]),
                                   "manual_axes": axes})
                manual.append((depth, axes))
        elif name == "stablehlo.all_reduce":  # its combining region follows, to `})`
            region = " ".join(lines[index + 1: index + 6]).split("})", 1)[0]
            kind = _REDUCTION.search(region)
            primitive = _ALL_REDUCES.get(kind.group(1) if kind else "", "all_reduce")
            collectives.append({"primitive": primitive,
                                "axes": _named_axes(line, found_meshes, named[index])})
        elif name == "stablehlo.partition_id":
            axes = manual[-1][1] if manual else sorted({a for m in shard_maps
                                                        for a in m["manual_axes"]})
            collectives.append({"primitive": "axis_index", "axes": list(axes)})
        elif name in _PRIMITIVES:
            collectives.append({"primitive": _PRIMITIVES[name],
                                "axes": _named_axes(line, found_meshes, named[index])})
        depth += line.count("{") - line.count("}")
        while manual and depth <= manual[-1][0]:
            manual.pop()
    return {"collectives": collectives, "shard_maps": shard_maps}


def meshes(lines: list[str]) -> dict[str, tuple[dict[str, int], list[int] | None]]:
    """The module's meshes: ``{name: ({axis: size}, device ids or None for 0, 1, ...)}``."""
    found = {}
    for line in lines:
        match = _MESH.match(line)
        if match:
            axes = {name: int(size) for name, size in _MESH_AXIS.findall(match.group(2))}
            ids = [int(i) for i in match.group(3).split(",")] if match.group(3) else None
            found[match.group(1)] = (axes, ids)
    return found


def _traced_groups(line: str) -> list[list[int]] | None:
    """The replica groups (or source-target pairs) of a collective, as lists of device ids."""
    match = _TRACED_GROUPS.search(line)
    if not match:
        return None
    body, rows, columns = match.group(2), int(match.group(3)), int(match.group(4))
    if body.startswith("["):
        return json.loads(body)
    return np.full((rows, columns), int(body or 0)).tolist()  # a splat: one value everywhere


def _axes_of(groups: list[list[int]], pairs: bool,
             mesh: tuple[dict[str, int], list[int] | None]) -> list[str] | None:
    """The mesh axes a collective acts over, or None when its groups fit no set of axes:
    for groups, the smallest set of axes whose device groups they are; for pairs, the axes
    along which a pair's devices differ. An axis of size 1 leaves no trace in the groups
    (over it or not, they are the same), so it is never named."""
    sizes, ids = mesh
    names = list(sizes)
    count = int(np.prod(list(sizes.values()), dtype=int))
    order = ids if ids is not None else list(range(count))
    where = {device: np.unravel_index(i, tuple(sizes.values())) for i, device in enumerate(order)}
    if any(device not in where for group in groups for device in group):
        return None
    if pairs:
        return [name for k, name in enumerate(names)
                if any(where[a][k] != where[b][k] for a, b in groups)]
    given = {frozenset(group) for group in groups}
    seen = [k for k, name in enumerate(names) if sizes[name] > 1]
    for size in range(len(seen) + 1):
        for axes in itertools.combinations(seen, size):
            rest = [k for k in range(len(names)) if k not in axes]
            made: dict[tuple, set[int]] = {}
            for device, position in where.items():
                made.setdefault(tuple(position[k] for k in rest), set()).add(device)
            if {frozenset(group) for group in made.values()} == given:
                return [names[k] for k in axes]
    return None


def _named_axes(line: str, meshes: dict, named: str = "") -> list[str]:
    """The axes of the first mesh a collective's groups fit (none when no mesh fits).

    ``line`` has its strings blanked; ``named`` is the same line as printed, read only for
    the axis names of groups given by mesh axes once the blanked line shows that form."""
    if blanked := _MESH_AXES_GROUPS.search(line):
        found = _MESH_AXES_GROUPS.match(_as_printed(named, blanked.start(), blanked.end()))
        if found is None:
            return []
        if found.group("symbol"):
            sizes = meshes.get(found.group("symbol"), ({}, None))[0]
        else:
            sizes = {name: int(size) for name, size in _MESH_AXIS.findall(found.group("inline"))}
        wanted = set(_AXIS_REF.findall(found.group("axes")))
        return [name for name, size in sizes.items() if name in wanted and size > 1]
    groups = _traced_groups(line)
    if groups is None:
        return []
    for mesh in meshes.values():
        axes = _axes_of(groups, "source_target_pairs" in line, mesh)
        if axes is not None:
            return axes
    return []


def _as_printed(named: str, start: int, end: int) -> str:
    """The text of the printed line ``named`` that its strings-blanked form holds from
    ``start`` to ``end`` (a string there is read whole, one outside is never read)."""
    where = []  # for each character of the blanked line, where it came from in ``named``
    done = 0
    for string in _STRING.finditer(named):
        where += range(done, string.start())
        where += [string.start(), string.end() - 1]  # its quotes
        done = string.end()
    where += range(done, len(named) + 1)
    return named[where[start]: where[end - 1] + 1] if end > start else ""


# --- StableHLO: the collectives a program handed in could move data by -----------------------
#: A collective of a StableHLO module in generic form (as :attr:`Program.module` prints it),
#: at the start of its line: its indent, result, result count, kind and operands.
_COLLECTIVE = re.compile(r'^(\s*)%([\w$.-]+)(?::(\d+))? = "stablehlo\.(all_reduce|all_gather|'
                         r'reduce_scatter|all_to_all|collective_permute)"\(([^()]*)\)')
_SIGNATURE = re.compile(r": \(([^()]*)\) -> (\([^()]*\)|tensor<[^<>]*>)")
_FUNCTION = re.compile(r"^\s*func\.func ")
_CUSTOM_CALL = re.compile(r"^\s*(?:%[^=]*=\s*)?stablehlo\.custom_call @([\w.]+)\(")


def moving_kinds(module: str) -> set[str]:
    """The kinds of collective of a StableHLO module that can move data."""
    return {m.group(4) for line in module.splitlines()
            if (m := _COLLECTIVE.match(line)) and moves(line)}


def moves(line: str) -> bool:
    """Whether a collective can move data at all: one whose every group is one device (on a
    one-device program, or over axes of size 1) moves nothing by its nature."""
    groups = _traced_groups(_STRING.sub('""', line))  # what an author named is not read
    if groups is None:
        return True  # groups in a form not read here: it is taken to move data
    if "source_target_pairs" in line:
        return any(a != b for a, b in groups)
    return any(len(group) > 1 for group in groups)


def without(module: str, kind: str) -> str:
    """``module`` with every collective of ``kind`` that can move data moving nothing: each
    result of the type of its operand is replaced by the operand (each device keeps its own
    data); any other is moved by a constant (0.5, or 1 for integers, or flipped for
    booleans)."""
    lines = module.splitlines()
    starts = [i for i, line in enumerate(lines) if _FUNCTION.match(line)] + [len(lines)]
    uses: list[tuple[int, str, str]] = []  # (line after the collective, a result, instead)
    for index, line in enumerate(lines):
        found = _COLLECTIVE.match(line)
        if not found or found.group(4) != kind or not moves(line):
            continue
        indent, result, count = found.group(1), found.group(2), found.group(3)
        operands = [o.strip() for o in found.group(5).split(",")]
        end, depth = index, 0
        while True:  # to the end of its region, if it has one (strings do not count)
            bare = _STRING.sub('""', lines[end])
            depth += bare.count("{") - bare.count("}")
            if depth <= 0 or end + 1 == len(lines):
                break
            end += 1
        signature = _SIGNATURE.search(bare)
        if signature is None:
            raise ValueError(msg.VERIFIER_UNREADABLE.format(kind=kind))
        given = [t.strip() for t in signature.group(1).split(", ")]
        made = [t.strip() for t in signature.group(2).strip("()").split(", ")]
        moved = f"moved_nothing_{index}"
        lines[index] = line.replace(f"%{result}", f"%{moved}", 1)
        added = []
        for k, made_type in enumerate(made):
            name = f"%{result}#{k}" if count else f"%{result}"
            ours = f"%{moved}#{k}" if count else f"%{moved}"
            if k < len(given) and given[k] == made_type and len(given) == len(made):
                uses.append((end + 1, name, operands[k]))
                continue
            element = made_type.removeprefix("tensor<").removesuffix(">").split("x")[-1]
            value = ("true" if element == "i1" else "0.5" if element.startswith(("f", "bf"))
                     else "1")
            op = "xor" if element == "i1" else "add"
            added += [f"{indent}%{moved}_by_{k} = stablehlo.constant dense<{value}> : "
                      f"{made_type}",
                      f"{indent}%{moved}_{k} = stablehlo.{op} {ours}, %{moved}_by_{k} : "
                      f"{made_type}"]
            uses.append((end + 1, name, f"%{moved}_{k}"))
        lines[end] = "\n".join([lines[end], *added])
    resolved: dict[tuple[int, str], str] = {}  # (its function, a result) -> what replaced it
    for after, name, instead in uses:  # in its function, after it
        stop = next(start for start in starts if start >= after)
        instead = resolved.get((stop, instead), instead)  # an operand replaced earlier
        resolved[(stop, name)] = instead
        use = re.compile(rf"(?<![\w$.-]){re.escape(name)}(?![\w$.#-])")
        lines[after:stop] = [use.sub(instead, line) for line in lines[after:stop]]
    return "\n".join(lines)


#: Operations of a StableHLO module that declare it rather than compute: its functions, their
#: returns, its meshes and the layouts asked of values.
_DECLARING = ("func.func", "func.return", "return", "sdy.mesh", "builtin.module", "module",
              "sdy.sharding_constraint")


def operations(text: str) -> list[tuple[str, str]]:
    """The operations a StableHLO module computes, in the order printed: each one's name
    (``stablehlo.dot_general``; a call of another function of the module, ``func.call``) and
    the types it maps as printed on its line (``(tensor<32x16xf32>, tensor<16x24xf32>) ->
    tensor<32x24xf32>``, or the one type an elementwise operation prints; "" where its line
    prints none). Annotations (shardings, locations) are not part of either: two programs that
    differ only in where their arrays are placed have the same operations. A called function's
    own operations are listed where the text prints it, once however often it is called."""
    found = []
    for line in text.splitlines():
        match = _OPERATION.match(line)
        name = (match.group("quoted") or match.group("plain")) if match else ""
        name = name or ("func.call" if _CALL.match(line) else "")
        if name and name not in _DECLARING:
            blanked = _STRING.sub('""', line)
            types = _SIGNATURE.search(blanked)
            single = _TYPE_AT_END.search(blanked)
            found.append((name, f"({types.group(1)}) -> {types.group(2)}" if types
                          else single.group(1) if single else ""))
    return found


#: A call of another function of the module (printed without its dialect), and the one type
#: an elementwise operation prints at the end of its line.
_CALL = re.compile(r"^\s*(?:%[^=]*=\s*)?call @")
_TYPE_AT_END = re.compile(r": (tensor<[^<>]*>)\s*$")


def custom_calls(text: str) -> list[str | None]:
    """The target of each custom call of a StableHLO module, None for one not in its usual
    printed form (``stablehlo.custom_call @target(``). Each operation starts a line; what
    follows the target, such as a location an author named, is never read."""
    found = []
    for line in text.splitlines():
        match = _OPERATION.match(line)
        name = (match.group("quoted") or match.group("plain")) if match else ""
        if name.endswith("custom_call"):
            call = _CUSTOM_CALL.match(line)
            found.append(call.group(1) if call else None)
    return found


def without_locations(module: str) -> str:
    """StableHLO text printed with its source locations (``jax.export``'s public printer)
    as JAX's printer without them gives it: each ``loc(...)`` after an operation, its
    arguments or its results, and the ``#locN = loc(...)`` lines that name them, taken out
    (strings inside a location, file names with parentheses among them, are read as such)."""
    kept = [line for line in module.splitlines() if not _LOCATION_LINE.match(line)]
    text, out, index = "\n".join(kept), [], 0
    for found in _LOCATION.finditer(text):
        if found.start() < index:
            continue
        end, depth, quoted = found.end(), 1, False
        while end < len(text) and depth:
            char = text[end]
            if quoted:
                quoted = char != '"' or text[end - 1] == "\\"
            elif char == '"':
                quoted = True
            else:
                depth += (char == "(") - (char == ")")
            end += 1
        out.append(text[index:found.start()])
        index = end
    out.append(text[index:])
    return "".join(out) + ("\n" if module.endswith("\n") else "")


#: Where a source location starts after what it locates, and a line naming one.
_LOCATION = re.compile(r" ?\bloc\(")
_LOCATION_LINE = re.compile(r"^#loc\d*\s*=\s*loc\(")
