"""What a compiled program costs each device: the bytes it holds and the bytes it receives.

A test of how a function computes is, in the end, a statement about these two numbers. A
dot of two vectors split over eight devices can be computed with each device receiving a
few bytes (its partial sum's partners); computing the whole dot on every device needs every
device to receive the seven eighths of both vectors it does not hold, however the program
hides or disguises the arithmetic. So the verifier (:mod:`grader.workers.verifier`) holds
each program handed in to the reference solution's footprint, with a margin
(:func:`beyond_bounds`), rather than counting its operations or looking for a collective by
name.

Both numbers are read from the program XLA compiled for one device, where the inputs are
placed as the test placed them:

- **held**: the bytes one device holds of each argument and of each output, as the compiled
  program places them, and the temporaries it needs at once
  (:meth:`jax.stages.Compiled.memory_analysis`).
- **received**: for each kind of collective, the bytes one device receives through it, each
  collective counted as many times as it runs: once per turn of the loops it is in (XLA's
  ``known_trip_count``), once for the costliest branch of a conditional. An all-gather
  receives what it adds to its operand, a reduce-scatter what it takes away, a receive what
  it results in; the others (an all-reduce, an all-to-all, a collective-permute...) receive
  their operand's size. A collective in a loop whose turns the compiler cannot count is named
  in ``uncounted``.
"""

from __future__ import annotations

import re
from typing import Any

#: Bytes per element of HLO's element types (4-bit types take a byte here).
_BYTES = {"pred": 1, "s4": 1, "u4": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2,
          "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8,
          "c128": 16}
_ARRAY = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128|f8\w*)\[([^\]]*)\]")
_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(.*\) -> .*\{$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*?) ([a-z][\w\-]*)\((.*?)\)(?:,|$)")
_OPERAND = re.compile(r"%([\w.\-]+)")
_CALLEE = re.compile(r"\b(body|condition|to_apply|calls|true_computation|false_computation)"
                     r"=%([\w.\-]+)")
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
#: Attributes whose text an author may choose (a name scope lands in ``op_name``): removed
#: before the compiler's own ``backend_config`` is read for a loop's turns.
_AUTHORED = re.compile(r'\b(?:metadata|frontend_attributes)=\{(?:"(?:[^"\\]|\\.)*"|[^{}"])*\}')
#: The operations that move data between devices, by their HLO opcode: what JAX's collectives
#: compile to, and the rest of what a program handed in as bytes could hold.
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute",
         "collective-broadcast", "ragged-all-to-all", "recv")


def type_bytes(text: str) -> int:
    """The bytes of an HLO type: an array (``f32[512]{0}``) or a tuple of them."""
    total = 0
    for element, dims in _ARRAY.findall(text):
        count = 1
        for dim in dims.split(","):
            dim = dim.strip().lstrip("<=")
            count *= int(dim) if dim.isdigit() else 1
        total += count * _BYTES.get(element, 1)
    return total


def footprint(program: Any) -> dict[str, Any]:
    """The bytes one device of ``program`` holds (``held``: arguments, outputs, temporaries)
    and receives through each kind of collective (``received``), with the kinds that run in a
    loop of uncounted turns (``uncounted``)."""
    from grader.probes import instructions

    executable = program.executable
    held = {"arguments": _per_device(program.exported.in_avals, executable.input_shardings),
            "outputs": _per_device(program.exported.out_avals, executable.output_shardings),
            "temporaries": int(executable.memory_analysis().temp_size_in_bytes)}
    received, uncounted = traffic(instructions(program.compiled))
    return {"held": held, "received": received, "uncounted": sorted(uncounted)}


def _per_device(avals: Any, shardings: Any) -> list[int]:
    """The bytes one device holds of each value of ``avals`` placed by ``shardings``."""
    import jax
    import numpy as np

    sizes = []
    for aval, sharding in zip(avals, jax.tree.leaves(shardings), strict=True):
        shape = sharding.shard_shape(aval.shape)
        sizes.append(int(np.prod(shape, dtype=int)) * int(aval.dtype.itemsize))
    return sizes


def traffic(lines: list[tuple[str, str]]) -> tuple[dict[str, int], set[str]]:
    """Bytes received per collective kind by one device of a compiled HLO module, given as
    :func:`grader.probes.instructions` gives its lines (each without its attributes, the only
    part read for an operation, and whole), walked from its entry computation."""
    computations: dict[str, list[tuple[str, str, list[str], str, str]]] = {}
    types: dict[str, str] = {}
    entry, current = None, None
    for head, line in lines:
        if (found := _COMPUTATION.match(line)) is not None:
            current = found.group(1)
            computations[current] = []
            entry = current if line.startswith("ENTRY ") else entry
            continue
        if current is None or (found := _INSTRUCTION.match(head)) is None:
            continue
        name, kind, opcode, operands = found.groups()
        types[name] = kind
        computations[current].append((kind, opcode, _OPERAND.findall(operands),
                                      head[len(found.group(0)):],
                                      _AUTHORED.sub("", line[len(found.group(0)):])))
    done: dict[str, tuple[dict[str, int], set[str]]] = {}

    def walk(name: str, depth: int = 0) -> tuple[dict[str, int], set[str]]:
        if depth > 64:
            return {}, {"collectives nested over 64 computations deep"}
        if name in done:
            return done[name]
        total: dict[str, int] = {}
        uncounted: set[str] = set()
        for kind, opcode, operands, attributes, config in computations.get(name, []):
            base = opcode.removesuffix("-start")
            if base in KINDS:
                given = sum(type_bytes(types.get(o, "")) for o in operands)
                made = type_bytes(kind) - (given if opcode.endswith("-start") else 0)
                moved = {"all-gather": made - given, "reduce-scatter": given - made,
                         "recv": made}
                total[base] = total.get(base, 0) + max(moved.get(base, given), 0)
            if opcode == "conditional":
                branches = _BRANCHES.search(attributes)
                names = (_OPERAND.findall(branches.group(1)) if branches else
                         [c for k, c in _CALLEE.findall(attributes) if k.endswith("computation")])
                worst: dict[str, int] = {}
                for branch in names:
                    inner, lost = walk(branch, depth + 1)
                    uncounted |= lost
                    worst = {k: max(worst.get(k, 0), inner.get(k, 0)) for k in {*worst, *inner}}
                _add(total, worst, 1)
                continue
            trips = _TRIP_COUNT.search(config)
            for role, callee in _CALLEE.findall(attributes):
                inner, lost = walk(callee, depth + 1)
                uncounted |= lost
                if opcode == "while" and trips is None and inner:
                    uncounted |= set(inner)
                turns = int(trips.group(1)) if trips else 1
                _add(total, inner, {"body": turns, "condition": turns + 1}.get(role, 1))
        done[name] = (total, uncounted)
        return done[name]

    return walk(entry) if entry else ({}, set())


def _add(total: dict[str, int], more: dict[str, int], times: int) -> None:
    for kind, count in more.items():
        total[kind] = total.get(kind, 0) + count * times


#: How far a program may go past the reference's footprint. Each argument and each output:
#: twice what one device holds of the reference's, plus :data:`SLACK` bytes (a scalar taken
#: whole where the reference splits a vector of two stays within). What it receives: this
#: many times the reference's, plus one device's share of all the arguments and
#: :data:`SLACK` (a vector sent where a scalar would do, or another choice of collective,
#: stays within). Computing the whole result on every device from inputs split over n
#: devices means taking them whole, n times one device's share, or receiving n - 1 times it:
#: either goes past these bounds from :data:`BOUNDS_FROM` devices on. Its temporaries: as
#: what it receives, with :data:`TEMPORARY_SLACK` for the compiler's own buffers, which vary
#: from one way of writing the same computation to another.
FACTOR = 4
SLACK = 16
TEMPORARY_SLACK = 1024
#: From how many devices on the bounds are applied: on two, gathering the whole input costs
#: one device's share of the arguments, within the margin.
BOUNDS_FROM = 4


def beyond_bounds(mine: dict[str, Any], theirs: dict[str, Any], devices: int) -> str | None:
    """Why the footprint ``mine`` goes past the bounds the reference's footprint ``theirs``
    sets on ``devices`` devices; None when it stays within them."""
    if devices < BOUNDS_FROM:
        return None
    extra = set(mine["uncounted"]) - set(theirs["uncounted"])
    if extra:
        return (f"it runs {', '.join(sorted(extra))} in a loop whose number of turns the "
                "compiler cannot tell, so what each device receives has no bound")
    for part, what in (("arguments", "arguments"), ("outputs", "results")):
        for index, (got, want) in enumerate(zip(mine["held"][part], theirs["held"][part],
                                                strict=True)):
            if got > 2 * want + SLACK:
                return (f"each device holds {got:,} bytes of array {index + 1} of its {what}, "
                        f"where the reference solution's hold {want:,}: it keeps whole what "
                        "should be split")
    share = sum(theirs["held"]["arguments"])
    got, want = sum(mine["received"].values()), sum(theirs["received"].values())
    if got > FACTOR * want + share + SLACK:
        return (f"each device receives {got:,} bytes through collectives, where the reference "
                f"solution's receive {want:,}: it gathers what it should keep split")
    got, want = mine["held"]["temporaries"], theirs["held"]["temporaries"]
    if got > FACTOR * want + share + TEMPORARY_SLACK:
        return (f"each device holds {got:,} bytes of temporaries, where the reference "
                f"solution's hold {want:,}: it holds what it should keep split")
    return None
