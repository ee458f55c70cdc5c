"""How a program is compared with the reference solution's, the one rule that ``check`` in a
student's kernel and the grader's verifier both apply.

A test of how a function computes measures the program the function traced to
(:class:`grader.framework.probes.Program`). Before its measures count, the program must
compute what the reference's program computes: :func:`record` takes, of the reference's
program, what a program is compared with (the arguments it takes, its results on fresh
random inputs, its kinds of collective and its footprint), and :func:`against` says why a
program does not match it, if it does not. The verifier (:mod:`grader.workers.verifier`)
records the reference at once and compares in a process where no submission code runs;
``check`` compares in the student's kernel with the record ``refresh-expected`` stored
(:func:`measure_here`). Neither side imports the other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from grader import messages as msg
from grader.caches import Newest
from grader.framework import cases, hlo

#: How far a program's results may be from the reference's: looser than the judges'
#: tolerance, since what this catches is another program, not rounding.
RTOL, ATOL = 1e-3, 1e-4
#: The custom calls a program may make to be run here: sharding annotations and LAPACK.
#: Anything else (a call back into Python, whose handle would point into the worker) is
#: never run.
_SAFE_CALL = re.compile(r"^(Sharding|SPMDFullToShardShape|SPMDShardToFullShape|"
                        r"annotate_device_placement|lapack_\w+_ffi)$")
#: The footprints of reference programs taken so far, by the program's identity.
_footprints: Newest[tuple, dict[str, Any]] = Newest(256)


TAKES_OTHER = "it takes other arguments than the reference solution's program"


def differs(program: Any, reference: Any, seed: int) -> str | None:
    """Why ``program`` does not compute what ``reference`` computes, run side by side on
    fresh inputs drawn from ``seed`` (:func:`against` its :func:`record`); None when they
    agree, and at once when it is the reference's own program (of the same identity: another
    copy of the same code)."""
    if program.identity == reference.identity:
        return None
    mine, theirs = program.exported, reference.exported
    if (mine.in_tree, _kinds(mine.in_avals)) != (theirs.in_tree, _kinds(theirs.in_avals)):
        return TAKES_OTHER  # before the reference runs on inputs of the program's kinds
    return against(program, record(reference, seed))


def record(reference: Any, seed: int) -> dict[str, Any]:
    """What a program is compared with, of the reference's program: the arguments it takes,
    its results on fresh inputs drawn from ``seed``, the kinds of collective it has and its
    footprint (:mod:`.footprint`); its results as numpy arrays. The grader's verifier makes
    it at once for each program; ``refresh-expected`` stores it (its results as plain data)
    for each public test, so that ``check`` compares a student's program as the grader
    does, in the student's kernel."""
    from grader.framework.footprint import footprint

    exported = reference.exported
    results = reference.run(fresh_inputs(exported.in_avals, seed))
    return {
        "seed": seed,
        "takes": _takes(exported.in_avals),
        "in_tree": str(exported.in_tree),
        "out_tree": str(exported.out_tree),
        "results": results,
        "kinds": sorted(hlo.moving_kinds(reference.module)),
        "footprint": _footprints.get(reference.identity, lambda: footprint(reference)),
        "devices": exported.nr_devices,
    }


def against(program: Any, record: dict[str, Any]) -> str | None:
    """Why ``program`` does not compute what the reference's program of ``record`` computes:
    it takes other arguments, makes a call that is never run, returns other results on the
    record's fresh inputs, has a collective that carries nothing, or goes past the bounds the
    reference's footprint sets; None when none of these."""
    from grader.framework import plain
    from grader.framework.footprint import beyond_bounds, footprint

    mine = program.exported
    if (str(mine.in_tree), _takes(mine.in_avals)) != (record["in_tree"], record["takes"]):
        return TAKES_OTHER
    unsafe = sorted(_unsafe_calls(program.module))
    if unsafe:
        return (f"it calls {', '.join(unsafe)}, which the grader does not run (a call back "
                "into Python, such as jax.debug.print, cannot be checked)")
    seed = record["seed"]
    got = program.run(fresh_inputs(mine.in_avals, seed))
    want = [result if isinstance(result, np.ndarray) else plain.from_plain(result)
            for result in record["results"]]
    if str(mine.out_tree) != record["out_tree"] or len(got) != len(want):
        return "it returns another structure than the reference solution's program"
    for index, (g, w) in enumerate(zip(got, want, strict=True)):
        where = "its result" if len(got) == 1 else f"result {index}"
        if g.shape != w.shape:
            return f"{where} has shape {g.shape}, the reference's {w.shape}"
        if w.dtype.kind in "fc":
            same = g.dtype.kind in "fc" and np.allclose(g, w, rtol=RTOL, atol=ATOL,
                                                        equal_nan=True)
        else:
            same = np.array_equal(g, w)
        if not same:
            return f"{where} differs from the reference's"
    return (carries_nothing(program, set(record["kinds"]), seed)
            or beyond_bounds(footprint(program), record["footprint"], record["devices"]))


#: A collective of a StableHLO module, in the generic form JAX prints it in: its result (with
#: their count, when several), its kind and its operands; and the types of its operands and
#: results, at the end of the operation.
#: How many draws of fresh inputs a collective must leave every device's results unchanged
#: on before it is said to carry nothing (one draw could, by chance, make its data zero).
DRAWS = 3


def carries_nothing(program: Any, theirs: set[str], seed: int) -> str | None:
    """Why a kind of collective that the reference's program has too (``theirs``, as
    :func:`.hlo.moving_kinds` reads them) carries nothing in
    ``program``: what every device holds of its results, on fresh inputs drawn from
    ``seed`` (and :data:`DRAWS` draws in all), stays the same (to the tolerance) when every
    collective of that kind moves nothing (see :func:`.hlo.without`). A decorative psum, added to
    a result computed on every device as ``0 * psum(...)`` or ``+ psum(zeros)``, is there but
    does nothing; None when each such collective matters."""
    def unchanged(before: list, after: list) -> bool:
        return all(np.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)
                   for outputs in zip(before, after, strict=True)
                   for a, b in zip(*outputs, strict=True))

    for kind in sorted(hlo.moving_kinds(program.module) & theirs):
        changed = program.with_module(hlo.without(program.module, kind))
        draws = (fresh_inputs(program.exported.in_avals, seed + k) for k in range(DRAWS))
        if all(unchanged(program.run_on_devices(inputs), changed.run_on_devices(inputs))
               for inputs in draws):
            name = kind.replace("_", "-")
            return (f"its result stays the same when its {name} moves nothing, so that "
                    f"{name} carries nothing")
    return None


def _unsafe_calls(module: str) -> set[str]:
    """The custom calls of a StableHLO module that may not be run: any whose target is not
    on the list, or that is not in the usual printed form (:func:`.hlo.custom_calls`)."""
    return {target[:40] if target else "a custom call in an unusual form"
            for target in hlo.custom_calls(module)
            if not (target and _SAFE_CALL.match(target))}


def _kinds(avals: Any) -> list[tuple]:
    """The shape and dtype of each argument: what a program takes. Not its sharding, which on
    an Explicit mesh is part of the type (``float32[8@data,3]``) and is the program's own
    choice: a program placing its inputs on an Explicit mesh takes what one on an Auto mesh
    takes."""
    return [(aval.shape, aval.dtype) for aval in avals]


def _takes(avals: Any) -> list[list]:
    """:func:`_kinds` as plain data: ``[[shape as a list, dtype name], ...]``."""
    return [[list(shape), str(dtype)] for shape, dtype in _kinds(avals)]


def fresh_inputs(avals: Any, seed: int) -> list[Any]:
    """Random inputs of the shapes and types ``avals`` gives: normal floats, unsigned
    integers over their whole range (legacy PRNG keys are pairs of uint32), signed integers
    in [-100, 100], booleans, and random keys."""
    import jax

    rng = np.random.default_rng(seed)
    inputs = []
    for aval in avals:
        dtype = aval.dtype
        if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
            data = jax.eval_shape(jax.random.key_data, jax.ShapeDtypeStruct(aval.shape, dtype))
            bits = rng.integers(0, 2**32, size=data.shape, dtype=np.uint64).astype(data.dtype)
            inputs.append(jax.random.wrap_key_data(bits, impl=_key_impl(dtype)))
        elif np.dtype(dtype).kind in "fc":
            inputs.append(rng.standard_normal(aval.shape).astype(dtype))
        elif np.dtype(dtype).kind == "u":
            info = np.iinfo(dtype)
            inputs.append(rng.integers(0, int(info.max) + 1, size=aval.shape,
                                       dtype=np.uint64).astype(dtype))
        elif np.dtype(dtype).kind == "i":
            inputs.append(rng.integers(-100, 101, size=aval.shape).astype(dtype))
        else:
            inputs.append(rng.integers(0, 2, size=aval.shape).astype(dtype))
    return inputs


@functools.cache
def _key_impl(dtype: Any) -> str:
    """The name of the PRNG implementation whose keys have this dtype."""
    import jax

    for name in ("threefry2x32", "rbg", "unsafe_rbg"):
        if jax.random.key(0, impl=name).dtype == dtype:
            return name
    raise ValueError(msg.VERIFIER_UNKNOWN_KEYS.format(dtype=dtype))


def measure_here(fn: Callable, found: list[cases.Case], wants: dict[str, dict],
                 devices: int) -> dict[str, dict]:
    """Run ``found`` on ``fn`` in this process, on its ``devices``: the outcome of each by
    case id, a program measured by a test of how it computes compared with the reference's
    in ``wants`` (its outcomes by case id, as stored), as the grader compares them, once the
    function's values are right."""
    import jax

    outcomes, made = {}, {}
    for case in found:
        made[case.id] = []
        outcome = cases.measure(case, fn, made[case.id], material=False)  # see wants
        if outcome.get("error", {}).get("type") == "KeyboardInterrupt":
            raise KeyboardInterrupt  # the student pressed stop: stop, not just this test
        outcomes[case.id] = outcome
    # the records were made on CPU devices, as the grader grades: another chip's results and
    # temporaries differ from them by more than a program's do
    if jax.default_backend() == "cpu" and not cases.values_wrong(
            found, {i: {devices: o} for i, o in outcomes.items()},
            {c.id: {devices: wants[c.id]} for c in found}):
        for case in found:
            _compare_programs(outcomes[case.id], made[case.id], wants[case.id])
    return outcomes


def judge_here(fn: Callable, found: list[cases.Case], wants: dict[str, dict],
               devices: int) -> list:
    """Run ``found`` on ``fn`` in this process, on its ``devices``, and judge them as the
    grader judges against ``wants``, the reference's outcomes by case id (the side-by-side
    benchmark's nbgrader test cells run the hidden cases so)."""
    outcomes = measure_here(fn, found, wants, devices)
    return cases.decide_all(found, {c.id: {devices: outcomes[c.id]} for c in found},
                            {c.id: {devices: wants[c.id]} for c in found})


def _compare_programs(outcome: dict, made: list, want: dict) -> None:
    """Compare each program a test of how the function computes measured with the stored
    record of the reference solution's (:func:`against`): a program that computes something
    else, whose collective carries nothing, or that goes past the reference's bounds,
    cannot pass."""
    programs = dict(made)
    for stored in want.get("programs", []) if outcome.get("ok") else []:
        program = programs.get(tuple(stored["where"]))
        why = program is not None and against(program, stored["record"])
        if why:
            outcome["differs"] = why
            return
