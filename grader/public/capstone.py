"""Public tests of lesson 11 (the capstone): ``check`` runs them in the notebook, and the
grader runs them too. The predictions are plain numbers: nothing is compiled for them here.
The step the student fixes is measured on its compiled program: the bytes one device sends
per mesh axis (:func:`sent_by_axis`)."""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import hlo
from grader.framework.cases import case
from grader.framework.judge import PASS, Hint, Verdict, difference, first_hint, result_close_to
from grader.framework.placement import layout
from grader.framework.probes import Program, measure
from grader.hints import capstone as hints


# --- fsdp_gather_bytes ----------------------------------------------------------------------
def gather_context(d_model: int, d_hidden: int, layers: int, data: int, model: int,
                   remat: bool, itemsize: int) -> dict:
    """What the usual mistakes give: the other remat's count, the whole weight gathered, and
    the block counted once or as the whole gathered weight."""
    block = 2 * d_model * d_hidden // (data * model) * itemsize  # w1 and w2, one device
    times = layers * (2 if remat else 1)
    return {"_other_remat": float(layers * (1 if remat else 2) * (data - 1) * block),
            "_whole_weight": float(times * (data - 1) * block * model),
            "_own_block": float(times * block),
            "_gathered": float(times * data * block)}


remat_swapped = result_close_to("_other_remat", hints.HINT_GATHER_REMAT)
whole_weight = result_close_to("_whole_weight", hints.HINT_GATHER_MODEL_BLOCK)
own_block = result_close_to("_own_block", hints.HINT_GATHER_RING)
whole_gathered = result_close_to("_gathered", hints.HINT_GATHER_RING)
GATHER_HINTS = [remat_swapped, whole_weight, own_block, whole_gathered]


@case("fsdp_gather_bytes", hidden=False, hints=GATHER_HINTS)
def rematerialised_on_four_by_two(fn):
    args = (16, 64, 3, 4, 2, True, 4)
    return {"result": float(fn(*args)), **gather_context(*args)}


@case("fsdp_gather_bytes", hidden=False, hints=GATHER_HINTS)
def kept_on_eight_by_one(fn):
    args = (32, 16, 2, 8, 1, False, 4)
    return {"result": float(fn(*args)), **gather_context(*args)}


#: A small model's state: weights over both axes, a weight over 'data' only (on 4 x 2 its
#: 3 x 3 blocks cannot be shared by their two copies), a replicated table its copies share, a
#: replicated bias of 3 and a scalar.
STATE_SHAPES = [(8, 16), (16, 8), (12, 3), (4, 8), (3,), ()]
STATE_SPECS = [P("data", "model"), P("model", "data"), P("data"), P(), P(), P()]


# --- checkpoint_bytes -----------------------------------------------------------------------
def blocks(shapes, specs, data: int, model: int):
    """For each array: its block shape and the mesh axes its spec names."""
    sizes = {"data": data, "model": model}
    for shape, spec in zip(shapes, specs, strict=True):
        named = [() if s is None else (s,) if isinstance(s, str) else tuple(s) for s in spec]
        named += [()] * (len(shape) - len(named))
        splits = [int(np.prod([sizes[a] for a in axes])) for axes in named]
        yield tuple(d // k for d, k in zip(shape, splits, strict=True)), {a for n in named
                                                                          for a in n}


def numpy_checkpoint_bytes(shapes, specs, data: int, model: int, itemsize: int, *,
                           share: bool = True, every_copy: bool = False,
                           split_anyway: bool = False) -> list[float]:
    """Bytes each device of the (data, model) mesh writes, in row-major order: Orbax's rule
    (``share``), or every copy writing its block, or the first copy only, or a block split
    among its copies even where no dimension divides evenly."""
    sizes = {"data": data, "model": model}
    written = np.zeros((data, model))
    for block, used in blocks(shapes, specs, data, model):
        nbytes = int(np.prod(block)) * itemsize
        copies = int(np.prod([sizes[a] for a in sizes if a not in used]))
        divisible = any(d % copies == 0 for d in block) or copies == 1
        for i in range(data):
            for j in range(model):
                first = all({"data": i, "model": j}[a] == 0 for a in sizes if a not in used)
                if every_copy:
                    written[i, j] += nbytes
                elif share and (divisible or split_anyway):
                    written[i, j] += nbytes / copies
                elif first:
                    written[i, j] += nbytes
    return written.reshape(-1).tolist()


def checkpoint_context(shapes, specs, data: int, model: int, itemsize: int) -> dict:
    args = (shapes, specs, data, model, itemsize)
    return {"_every_copy": np.asarray(numpy_checkpoint_bytes(*args, every_copy=True)),
            "_first_copy": np.asarray(numpy_checkpoint_bytes(*args, share=False)),
            "_split_anyway": np.asarray(numpy_checkpoint_bytes(*args, split_anyway=True))}


every_copy = result_close_to("_every_copy", hints.HINT_CKPT_EVERY_COPY)
first_copy = result_close_to("_first_copy", hints.HINT_CKPT_FIRST_COPY)
split_anyway = result_close_to("_split_anyway", hints.HINT_CKPT_INDIVISIBLE)
CKPT_HINTS = [every_copy, first_copy, split_anyway]



@case("checkpoint_bytes", hidden=False, hints=CKPT_HINTS)
def a_state_on_four_by_two(fn):
    args = (STATE_SHAPES, STATE_SPECS, 4, 2, 4)
    return {"result": np.asarray(fn(*args), float), **checkpoint_context(*args)}


@case("checkpoint_bytes", hidden=False, hints=CKPT_HINTS)
def a_state_on_two_by_two_in_bfloat16(fn):
    args = (STATE_SHAPES[1:], STATE_SPECS[1:], 2, 2, 2)
    return {"result": np.asarray(fn(*args), float), **checkpoint_context(*args)}


# --- adam_state_bytes -----------------------------------------------------------------------
def numpy_state_bytes(shapes, specs, data: int, model: int, *, split: bool = True,
                      arrays: int = 3, over_all: bool = False) -> float:
    """Bytes of the weights (float32), ``arrays`` per weight, and an int32 step count on one
    device; ``split`` False keeps every array whole, ``over_all`` divides each by every
    device."""
    total = 0
    for (block, _), shape in zip(blocks(shapes, specs, data, model), shapes, strict=True):
        numbers = (int(np.prod(shape)) / (data * model) if over_all else
                   int(np.prod(block)) if split else int(np.prod(shape)))
        total += arrays * 4 * numbers
    return float(total + 4)


def state_context(shapes, specs, data: int, model: int) -> dict:
    args = (shapes, specs, data, model)
    return {"_whole": numpy_state_bytes(*args, split=False),
            "_weights_only": numpy_state_bytes(*args, arrays=1) - 4,
            "_weights_and_step": numpy_state_bytes(*args, arrays=1),
            "_one_moment": numpy_state_bytes(*args, arrays=2),
            "_over_all": numpy_state_bytes(*args, over_all=True)}


state_whole = result_close_to("_whole", hints.HINT_STATE_WHOLE)
state_weights_only = result_close_to("_weights_only", hints.HINT_STATE_MOMENTS)
state_weights_and_step = result_close_to("_weights_and_step", hints.HINT_STATE_MOMENTS)
state_one_moment = result_close_to("_one_moment", hints.HINT_STATE_MOMENTS)
state_over_all = result_close_to("_over_all", hints.HINT_STATE_ALL_DEVICES)
STATE_HINTS = [state_whole, state_weights_only, state_weights_and_step, state_one_moment,
               state_over_all]


@case("adam_state_bytes", hidden=False, hints=STATE_HINTS)
def the_state_on_four_by_two(fn):
    args = (STATE_SHAPES[:-1], STATE_SPECS[:-1], 4, 2)
    return {"result": float(fn(*args)), **state_context(*args)}


@case("adam_state_bytes", hidden=False, hints=STATE_HINTS)
def the_state_on_two_by_four(fn):
    args = (STATE_SHAPES[:-1], STATE_SPECS[:-1], 2, 4)
    return {"result": float(fn(*args)), **state_context(*args)}


# --- fixed_tp_step --------------------------------------------------------------------------
TP_LR = 0.1  # as in the exercise notebook
#: How the fixed step stores each weight: the hidden units split over 'model'.
TP_SPECS = {"w1": P(None, None, "model"), "w2": P(None, "model", None)}
#: How far the bytes a fixed step sends over an axis may go past the reference fix's: a
#: factor, and a few bytes (a scalar reduced where the reference reduces none).
SENT_MARGIN, SENT_SLACK = 1.25, 64


def tp_mesh():
    """The ('data', 'model') mesh of every device: 'model' of 2 where the count is even."""
    n = jax.device_count()
    model = 2 if n % 2 == 0 else 1
    return jax.make_mesh((n // model, model), ("data", "model"))


def tp_inputs(seed: int, layers: int, d_model: int, d_hidden: int, rows_per_block: int,
              stored: bool = False) -> tuple:
    """params {'w1': (layers, d_model, d_hidden), 'w2': (layers, d_hidden, d_model)}, and x
    and y (rows, d_model) split by rows over 'data': the weights replicated, as after an
    init on the host, or ``stored`` as the fixed step returns them."""
    mesh = tp_mesh()
    rng = np.random.default_rng(seed)
    rows = rows_per_block * mesh.shape["data"]
    arrays = {"w1": rng.normal(size=(layers, d_model, d_hidden)) / np.sqrt(d_model),
              "w2": rng.normal(size=(layers, d_hidden, d_model)) / np.sqrt(d_hidden),
              "x": rng.normal(size=(rows, d_model)), "y": rng.normal(size=(rows, d_model))}
    arrays = {k: np.asarray(v, np.float32) for k, v in arrays.items()}
    params = {k: jax.device_put(arrays[k], NamedSharding(mesh, TP_SPECS[k] if stored else P()))
              for k in ("w1", "w2")}
    x, y = (jax.device_put(arrays[k], NamedSharding(mesh, P("data", None))) for k in "xy")
    return params, x, y


def numpy_tp_step(params, x, y) -> dict:
    """The step on one device, by hand in float64: the new weights."""
    w1, w2 = (np.asarray(params[k], np.float64) for k in ("w1", "w2"))
    y = np.asarray(y, np.float64)
    seen, h = [], np.asarray(x, np.float64)
    for a, b in zip(w1, w2, strict=True):
        seen.append(h)
        h = h + np.tanh(h @ a) @ b
    back = 2 * (h - y) / y.size
    g1, g2 = np.zeros_like(w1), np.zeros_like(w2)
    for i in reversed(range(len(w1))):
        t = np.tanh(seen[i] @ w1[i])
        g2[i] = t.T @ back
        inner = (back @ w2[i].T) * (1 - t**2)
        g1[i] = seen[i].T @ inner
        back = back + inner @ w1[i].T
    return {"w1": w1 - TP_LR * g1, "w2": w2 - TP_LR * g2}


@measure
def sent_by_axis(program: Program) -> dict[str, dict[str, float]]:
    """The bytes one device sends per call of the compiled program under the course's
    traffic model, by the mesh axes each collective acts over ('data', 'model',
    'data+model'; '?' for groups that fit no axes) and by kind, as
    :func:`grader.framework.hlo.sent_per_axis` reads them (a loop's body once per turn), on
    the mesh of the program's inputs."""
    mesh = next((s.mesh for s in program.exported.in_shardings_jax(None)
                 if s is not None and s.mesh.axis_names), None)
    count = program.exported.nr_devices
    sizes = (dict(zip(mesh.axis_names, mesh.axis_sizes, strict=True)) if mesh is not None
             else {"devices": count})
    ids = [d.id for d in jax.devices()[:count]]
    sent = hlo.sent_per_axis(program.compiled, sizes, ids)
    return {"?" if axes is None else "+".join(axes) or "none":
            {kind: float(size) for kind, size in kinds.items()} for axes, kinds in sent.items()}


def per_axis(sent: dict) -> dict[str, float]:
    """The bytes a :func:`sent_by_axis` measure gives each axis, all kinds together."""
    return {axis: float(sum(np.asarray(v).item() for v in kinds.values()))
            for axis, kinds in sent.items()}


def gathers_over(axis: str):
    """Whether the step all-gathers over ``axis`` where the reference fix does not."""
    def when(got: dict, want: dict) -> bool:
        return ("all-gather" in got["sent"].get(axis, {})
                and "all-gather" not in want["sent"].get(axis, {}))
    return when


tp_gathers_activations = Hint(gathers_over("model"), hints.HINT_TP_GATHERS)
tp_reduces_whole_weights = Hint(
    lambda got, want: per_axis(got["sent"]).get("data", 0)
    > SENT_MARGIN * per_axis(want["sent"]).get("data", 0) + SENT_SLACK,
    hints.HINT_TP_WHOLE_GRADIENTS)
SENT_HINTS = [tp_reduces_whole_weights, tp_gathers_activations]


def sends_no_more(got: dict, want: dict) -> Verdict:
    """A judge of :func:`sent_by_axis` and the new weights' layout: over every axis, the step
    sends at most :data:`SENT_MARGIN` times what the reference fix sends, plus
    :data:`SENT_SLACK` bytes; and each new weight comes back split as the fix stores it."""
    sent = got.get("sent")
    if not isinstance(sent, dict):
        return Verdict(False, hints.MSG_TP_NOT_MEASURED)
    mine, theirs = per_axis(sent), per_axis(want["sent"])
    for axis in sorted(set(mine) | set(theirs)):
        if mine.get(axis, 0) > SENT_MARGIN * theirs.get(axis, 0) + SENT_SLACK:
            text = hints.MSG_TP_SENT.format(axis=axis, mine=mine.get(axis, 0),
                                            theirs=theirs.get(axis, 0),
                                            kinds={k: int(np.asarray(v).item())
                                                   for k, v in sent[axis].items()})
            return Verdict(False, text, first_hint(SENT_HINTS, got, want), said_all=True)
    problem = difference(got.get("layout"), want["layout"], "the layout")
    if problem:
        return Verdict(False, problem, hints.HINT_TP_LAYOUT)
    return PASS


def same_as_one_device(got: dict, want: dict) -> Verdict:
    """The new weights equal the one-device step's, computed by hand in float64."""
    problem = difference(got.get("result"), want["_alone"])
    return PASS if problem is None else Verdict(False, problem)


def tp_values_case(fn, *args) -> dict:
    return {"result": fn(*args), "_alone": numpy_tp_step(*args)}


def tp_sent_case(fn, *args) -> dict:
    """What the compiled step sends per axis, and where the new weights it returns lie."""
    return {"sent": sent_by_axis(fn, *args),
            "layout": {k: layout(v) for k, v in dict(fn(*args)).items()}}


@case("fixed_tp_step", hidden=False, judge=same_as_one_device)
def equals_the_one_device_step(fn):
    return tp_values_case(fn, *tp_inputs(60, 2, 16, 64, 4))


@case("fixed_tp_step", hidden=False, judge=sends_no_more)
def sends_what_tensor_parallelism_sends(fn):
    return tp_sent_case(fn, *tp_inputs(61, 2, 16, 64, 4))
