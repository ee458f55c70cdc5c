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

from typing import Any

from grader.framework import hlo


def footprint(program: Any) -> dict[str, Any]:
    """The bytes one device of ``program`` holds (``held``: arguments, outputs, temporaries)
    and receives through each kind of collective (``received``), with the kinds that run in a
    loop of uncounted turns (``uncounted``)."""
    executable = program.executable
    held = {"arguments": _per_device(program.exported.in_avals, executable.input_shardings),
            "outputs": _per_device(program.exported.out_avals, executable.output_shardings),
            "temporaries": int(executable.memory_analysis().temp_size_in_bytes)}
    received, uncounted = hlo.received(program.compiled)
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
