"""The verifier: takes measures of programs that submissions handed in, where none of their
code runs.

A grader worker runs a submission, so anything it reports about *how* a function computes
could have been changed by that submission. It therefore sends the program instead
(:class:`grader.framework.probes.Program`, serialized by :mod:`jax.export`), and the runner has it
measured here. Started by :mod:`grader.workers.runner` as ``python -I -c "from
grader.workers.verifier import main; main()" DEVICES MEMORY GRADER TASKS``, in the same
sandbox as a worker (GRADER and TASKS as for a worker). Reading a program runs no Python
code of the submission.

A program could also be one the function never traced to: a function that computes its
values on the host, say, and hands in a program with a decorative collective. So a program
is also run next to the reference solution's program for the same test, on fresh random
inputs the submission never saw, and must give the same results: how a function computes
counts only for a program that computes what the exercise asks. Its collectives must carry
something (:func:`carries_nothing`), and what each of its devices holds and receives must stay
within the bounds the reference's program sets (:func:`grader.framework.footprint.beyond_bounds`).

It answers JSON lines on stdin with JSON lines on stdout. ``{"op": "record", "req", "blob",
"seed"}``: ``{"ok": true, "record": ...}`` (:func:`record`, for ``refresh-expected``).
``{"op": "verify", "req", "measures", "blob", "reference", "seed"}``: ``{"ok": true,
"measured": [{"ok": true, "data": value} or {"ok": false, "error": {...}}, one per
measure]}``, with ``"differs": why`` added when the program does not compute what the
reference's does (the measures are still taken, so that the judges can name what is
missing, with their hints), or ``{"ok": false, "error": {...}}`` when the program cannot be
read or run.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from typing import Any

import numpy as np

from grader import messages as msg
from grader.caches import Newest
from grader.framework import hlo
from grader.workers.confine import begin

#: How far a program's results may be from the reference's: looser than the judges'
#: tolerance, since what this catches is another program, not rounding.
RTOL, ATOL = 1e-3, 1e-4
#: The custom calls a program may make to be run here: sharding annotations and LAPACK.
#: Anything else (a call back into Python, whose handle would point into the worker) is
#: never run.
_SAFE_CALL = re.compile(r"^(Sharding|SPMDFullToShardShape|SPMDShardToFullShape|"
                        r"annotate_device_placement|lapack_\w+_ffi)$")
#: Reference programs read and compiled so far, by their bytes (base64).
_references: Newest[str, Any] = Newest(256)
#: Measures taken so far, by the measure's name and the program's identity (only those taken).
_measured: Newest[tuple, dict[str, Any]] = Newest(1024)


def verify(measures: Any, blob: Any, reference: Any = None, seed: Any = 0) -> dict[str, Any]:
    """Take each measure named in ``measures`` on the program ``blob`` (base64 text), and say
    why it does not compute what the ``reference`` program (base64 text, or None when there
    is none to compare with) computes on fresh inputs drawn from ``seed``, if it does not."""
    from grader.framework import cases

    if (not isinstance(measures, list) or not isinstance(blob, str)
            or not isinstance(reference, (str, type(None))) or not isinstance(seed, int)):
        return {"ok": False, "error": {"type": "ValueError", "message": "a malformed request"}}
    try:
        program = _load(blob)
        why = None if reference is None else differs(program, _reference(reference), seed)
    except Exception as exc:  # noqa: BLE001 - bytes anyone could write, base64 included
        return {"ok": False, "error": cases.describe_error(exc)}
    reply = {"ok": True, "measured": [_take(name, program) for name in measures]}
    return {**reply, "differs": why} if why else reply


def recorded(blob: Any, seed: Any) -> dict[str, Any]:
    """The :func:`record` of the reference program ``blob`` (base64 text) for ``seed``."""
    from grader.framework import cases

    if not isinstance(blob, str) or not isinstance(seed, int):
        return {"ok": False, "error": {"type": "ValueError", "message": "a malformed request"}}
    from grader.framework import plain

    try:
        made = record(_reference(blob), seed)
        return {"ok": True, "record": {**made, "results": [
            plain.to_plain(result) for result in made["results"]]}}
    except Exception as exc:  # noqa: BLE001 - the grader's own reference, but said as it is
        return {"ok": False, "error": cases.describe_error(exc)}


def _take(name: Any, program: Any) -> dict[str, Any]:
    """One measure of a program, or why it could not be taken; taken once per verifier for
    the programs of one identity (a measure takes the same of each)."""
    from grader.framework import cases, plain
    from grader.framework.probes import MEASURES

    if not isinstance(name, str) or name not in MEASURES:
        return {"ok": False, "error": {"type": "ValueError", "message": "no such measure"}}
    try:
        return _measured.get((name, program.identity), lambda: {
            "ok": True, "data": plain.to_plain(MEASURES[name](program))})
    except Exception as exc:  # noqa: BLE001 - compiling bytes anyone could write
        return {"ok": False, "error": cases.describe_error(exc)}


def _load(blob: str) -> Any:
    from grader.framework.probes import Program

    return Program.load(base64.b64decode(blob, validate=True))


def _reference(blob: str) -> Any:
    """The reference program of these bytes, read and compiled once per verifier."""
    return _references.get(blob, lambda: _load(blob))


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
    footprint (:mod:`.footprint`); its results as numpy arrays. The grader makes it at
    once for each program; ``refresh-expected`` stores it (its results as plain data,
    :func:`recorded`) for each public test, so that ``check`` compares a student's program
    as the grader does, in the student's kernel."""
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
        "footprint": _measured.get(("footprint", reference.identity),
                                   lambda: footprint(reference)),
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
    :func:`_moving_kinds` reads them) carries nothing in
    ``program``: what every device holds of its results, on fresh inputs drawn from
    ``seed`` (and :data:`DRAWS` draws in all), stays the same (to the tolerance) when every
    collective of that kind moves nothing (see :func:`without`). A decorative psum, added to
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


def main() -> None:
    devices, have, requests, replies = begin()
    from grader.framework import cases
    from grader.workers import compiled, reuse

    compiled.install()
    reuse.install()  # one MLIR context for the programs it reads and lowers
    cases.load(hidden=False)  # the measures defined next to the public tests
    replies.write(json.dumps({"req": "ready", "ok": have == devices, "devices": have}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        if request.get("op") == "record":
            reply = recorded(request.get("blob"), request.get("seed", 0))
        else:
            reply = verify(request.get("measures"), request.get("blob"),
                           request.get("reference"), request.get("seed", 0))
        replies.write(json.dumps({"req": request.get("req"), **reply}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
