"""Public tests of lesson 11 (the capstone): ``check`` runs them in the notebook, and the
grader runs them too. The predictions are plain numbers: nothing is compiled for them here.
The specs of the attention layer are data too: the tests compile their own layer with them
(:func:`mqa_case`). The step the student fixes is measured on its compiled program: the
bytes one device sends per mesh axis (:func:`sent_by_axis`)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import hlo, plain
from grader.framework.cases import case
from grader.framework.judge import PASS, Hint, Verdict, difference, first_hint, result_close_to
from grader.framework.placement import entry_axes, layout
from grader.framework.probes import Program, measure, quick_on
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
    return axes_sent(program.compiled, sizes, [d.id for d in jax.devices()[:count]])


def axes_sent(text: str, sizes: dict[str, int], ids: list[int]) -> dict[str, dict[str, float]]:
    """The bytes one device sends per call of a compiled program (its text) on a mesh of
    these axis sizes and device ids, by the mesh axes of each collective ('data', 'model',
    'data+model'; '?' for groups that fit no axes) and by kind, as
    :func:`grader.framework.hlo.sent_per_axis` reads them."""
    sent = hlo.sent_per_axis(text, sizes, ids)
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
    """A judge of :func:`tp_values_case`: the new weights equal the one-device step's."""
    problem = got.get("difference")
    return PASS if problem == "" else Verdict(False, str(problem), said_all=True)


def tp_values_case(fn, *args) -> dict:
    """How the new weights differ from the one-device step's, computed by hand in float64
    (:func:`grader.framework.judge.difference`: keys, shapes, then values within its
    tolerance), or "" where they agree. The probe compares them, next to the step it
    measures, so that a public case stores a sentence rather than two copies of every weight
    for each device count."""
    new = plain.from_plain(plain.to_plain(fn(*args)))
    return {"difference": difference(new, numpy_tp_step(*args)) or ""}


def tp_sent_case(fn, *args) -> dict:
    """What the compiled step sends per axis, and where the new weights it returns lie."""
    return {"sent": sent_by_axis(fn, *args),
            "layout": {k: layout(v) for k, v in dict(fn(*args)).items()}}


@case("fixed_tp_step", hidden=False, judge=same_as_one_device)
def equals_the_one_device_step(fn):  # the next case's shapes: one compile of the step for both
    return tp_values_case(fn, *tp_inputs(60, 2, 8, 32, 2))


@case("fixed_tp_step", hidden=False, judge=sends_no_more)
def sends_what_tensor_parallelism_sends(fn):
    return tp_sent_case(fn, *tp_inputs(61, 2, 8, 32, 2))


# --- mqa_specs ------------------------------------------------------------------------------
#: The weights of the layer, in the order the specs are checked.
MQA_NAMES = ("wq", "wkv", "wo", "w1", "w2")
#: How close the layer placed with the student's specs must be to the layer on one device.
MQA_RTOL, MQA_ATOL = 1e-4, 1e-5
#: Rows of the batch per 'data' device, and positions per sequence.
MQA_ROWS, MQA_SEQUENCE = 2, 8


def mqa_shapes(d_model: int, heads: int, head_size: int, kv_heads: int,
               d_hidden: int) -> dict[str, tuple[int, ...]]:
    """The shape of each weight of one layer with ``kv_heads`` key/value heads."""
    return {"wq": (d_model, heads, head_size), "wkv": (2, d_model, kv_heads, head_size),
            "wo": (heads, head_size, d_model), "w1": (d_model, d_hidden),
            "w2": (d_hidden, d_model)}


def mqa_layer(params: dict, x: jax.Array) -> jax.Array:
    """One layer of the exercise, as the tests compile it: causal attention whose H query
    heads share G key/value heads (query head h reads key/value head h // (H / G)), then an
    MLP, each after a layer norm without scale and added to x (batch, sequence, D). Nothing
    in it says where an array lives: the compiler places every intermediate from where the
    weights and x are."""
    batch, length, _ = x.shape
    heads, head_size = params["wq"].shape[1:]
    kv_heads = params["wkv"].shape[2]

    def norm(x):
        mean = x.mean(-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(((x - mean) ** 2).mean(-1, keepdims=True) + 1e-5)

    h = norm(x)
    q = jnp.einsum("bsd,dhk->bshk", h, params["wq"])
    q = q.reshape(batch, length, kv_heads, heads // kv_heads, head_size)
    k, v = jnp.einsum("bsd,cdgk->cbsgk", h, params["wkv"])
    scores = jnp.einsum("btgrk,bsgk->bgrts", q, k) / np.sqrt(head_size)
    causal = jnp.tril(jnp.ones((length, length), bool))
    attention = jax.nn.softmax(jnp.where(causal, scores, -1e9), axis=-1)
    o = jnp.einsum("bgrts,bsgk->btgrk", attention, v).reshape(batch, length, heads, head_size)
    x = x + jnp.einsum("bshk,hkd->bsd", o, params["wo"])
    return x + jax.nn.gelu(norm(x) @ params["w1"]) @ params["w2"]


def numpy_mqa_layer(params: dict, x: np.ndarray) -> np.ndarray:
    """:func:`mqa_layer` on one device, by hand in float64 (its GELU the tanh approximation
    that ``jax.nn.gelu`` computes by default)."""
    w = {name: np.asarray(value, np.float64) for name, value in params.items()}
    x = np.asarray(x, np.float64)
    batch, length, _ = x.shape
    heads, head_size = w["wq"].shape[1:]
    kv_heads = w["wkv"].shape[2]

    def norm(x):
        centred = x - x.mean(-1, keepdims=True)
        return centred / np.sqrt((centred**2).mean(-1, keepdims=True) + 1e-5)

    h = norm(x)
    q = np.einsum("bsd,dhk->bshk", h, w["wq"]).reshape(batch, length, kv_heads,
                                                       heads // kv_heads, head_size)
    k, v = np.einsum("bsd,cdgk->cbsgk", h, w["wkv"])
    scores = np.einsum("btgrk,bsgk->bgrts", q, k) / np.sqrt(head_size)
    scores = np.where(np.tril(np.ones((length, length), bool)), scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    attention = weights / weights.sum(-1, keepdims=True)
    o = np.einsum("bgrts,bsgk->btgrk", attention, v).reshape(batch, length, heads, head_size)
    x = x + np.einsum("bshk,hkd->bsd", o, w["wo"])
    hidden = norm(x) @ w["w1"]
    gelu = 0.5 * hidden * (1 + np.tanh(np.sqrt(2 / np.pi) * (hidden + 0.044715 * hidden**3)))
    return x + gelu @ w["w2"]


def mqa_mesh(kind: str) -> jax.sharding.Mesh:
    """A ('data', 'model') mesh of every device, its axes Auto (the compiler places what
    the specs leave open): ``"data"`` gives 'model' 2 devices where the count is even (4 x 2
    on 8), ``"model"`` gives 'data' 2 (2 x 4), ``"all"`` gives 'model' them all (1 x 8)."""
    n = jax.device_count()
    two = 2 if n % 2 == 0 else 1
    shape = {"data": (n // two, two), "model": (two, n // two), "all": (1, n)}[kind]
    return jax.make_mesh(shape, ("data", "model"), axis_types=(AxisType.Auto,) * 2)


def _described(value) -> str:
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"[:120]
    return f"a {type(value).__name__}"


def checked_specs(returned, shapes: dict, mesh) -> dict[str, P]:
    """The specs the student returned, or a ValueError that says what is wrong with them: a
    dict of a PartitionSpec per weight, each naming axes of the mesh, at most once, over
    dimensions they divide."""
    if not isinstance(returned, dict) or sorted(map(str, returned)) != sorted(MQA_NAMES):
        raise ValueError(hints.MSG_MQA_NOT_SPECS.format(got=_described(returned),
                                                        names=list(MQA_NAMES)))
    sizes = dict(mesh.shape)
    for name in MQA_NAMES:
        spec, shape = returned[name], shapes[name]
        why = None
        if not isinstance(spec, P):
            why = "it is not a PartitionSpec"
        elif len(spec) > len(shape):
            why = hints.MSG_MQA_TOO_LONG
        else:
            named = [axis for entry in spec for axis in entry_axes(entry)]
            unknown = [axis for axis in named if axis not in sizes]
            twice = [axis for axis in named if named.count(axis) > 1]
            if unknown:
                why = hints.MSG_MQA_AXIS.format(axis=unknown[0], axes=list(sizes))
            elif twice:
                why = hints.MSG_MQA_TWICE.format(axis=twice[0])
            for dim, entry in enumerate(spec):
                parts = int(np.prod([sizes[a] for a in entry_axes(entry)]))
                if why is None and shape[dim] % parts:
                    why = hints.MSG_MQA_INDIVISIBLE.format(dim=dim, size=shape[dim],
                                                           axes=entry_axes(entry), parts=parts)
        if why:
            raise ValueError(hints.MSG_MQA_BAD_SPEC.format(spec=str(spec)[:80], name=name,
                                                           shape=shape, why=why))
    return {name: returned[name] for name in MQA_NAMES}


def mqa_case(fn, seed: int, mesh_kind: str, *sizes: int) -> dict:
    """The layer compiled with the student's specs for its weights, x split by rows over
    'data' and its result too: whether it computes the one-device layer (by hand in float64,
    :func:`numpy_mqa_layer`: a program less to compile), the bytes of weights one device
    holds, and the bytes it sends per mesh axis. The student's function returns data only
    (the specs): the program measured is the tests' own."""
    mesh = mqa_mesh(mesh_kind)
    shapes = mqa_shapes(*sizes)
    specs = checked_specs(fn(dict(shapes), mesh), shapes, mesh)
    rng = np.random.default_rng(seed)
    params = {name: np.float32(rng.normal(size=shape) / np.sqrt(shape[-2] if name != "wkv"
                                                                else shape[1]))
              for name, shape in shapes.items()}
    x = np.float32(rng.normal(size=(MQA_ROWS * mesh.shape["data"], MQA_SEQUENCE, sizes[0])))
    placed = {name: NamedSharding(mesh, spec) for name, spec in specs.items()}
    rows = NamedSharding(mesh, P("data"))
    compiled = jax.jit(mqa_layer, in_shardings=(placed, rows), out_shardings=rows).lower(
        params, x).compile(compiler_options=quick_on(mesh.devices.flat[0]))
    out = compiled({k: jax.device_put(v, placed[k]) for k, v in params.items()},
                   jax.device_put(x, rows))
    return {
        "same_as_one_device": bool(np.allclose(out, numpy_mqa_layer(params, x),
                                               rtol=MQA_RTOL, atol=MQA_ATOL)),
        "weight_bytes": float(sum(np.prod(placed[k].shard_shape(shape)) * 4
                                  for k, shape in shapes.items())),
        "sent": axes_sent(compiled.as_text(), dict(mesh.shape),
                          [d.id for d in mesh.devices.flat]),
        "_specs": {name: [sorted(entry_axes(e)) for e in specs[name]]
                   + [[]] * (len(shapes[name]) - len(specs[name])) for name in MQA_NAMES},
    }


def split_over(name: str, dims: tuple[int, ...], axis: str | None = None):
    """Whether the student's spec of ``name`` splits one of ``dims`` (over ``axis``, or any)."""
    def when(got: dict, want: dict) -> bool:
        entries = got["_specs"][name]
        return any(axis in entries[d] if axis else bool(entries[d]) for d in dims)
    return when


def whole_over_model(got: dict, want: dict) -> bool:
    """Whether a weight the reference splits over 'model' is whole over it here (wkv apart)."""
    def names_model(specs, name):
        return any("model" in entry for entry in specs[name])
    return any(names_model(want["_specs"], name) and not names_model(got["_specs"], name)
               for name in ("wq", "wo", "w1", "w2"))


MQA_BYTES_HINTS = [
    Hint(whole_over_model, hints.HINT_MQA_MEGATRON),
    Hint(lambda got, want: split_over("wkv", (2,), "model")(want, got)
         and not split_over("wkv", (2,), "model")(got, want), hints.HINT_MQA_KV_HEADS),
]
MQA_SENT_HINTS = [
    Hint(lambda got, want: any(split_over(n, tuple(range(len(got["_specs"][n]))), "data")(
        got, want) for n in MQA_NAMES), hints.HINT_MQA_DATA),
    Hint(split_over("wkv", (0, 1, 3)), hints.HINT_MQA_KV_SPLIT),
    Hint(lambda got, want: any(split_over(n, dims)(got, want) for n, dims in
                               (("wq", (0, 2)), ("wo", (2,)), ("w1", (0,)), ("w2", (1,)))),
         hints.HINT_MQA_CONTRACTION),
]


def within_the_references_bounds(got: dict, want: dict) -> Verdict:
    """A judge of :func:`mqa_case`: the layer computes the one-device layer; each device
    holds no more bytes of weights than with the reference's specs; and over every mesh
    axis it sends at most :data:`SENT_MARGIN` times what the reference's specs send, plus
    :data:`SENT_SLACK` bytes. Any specs within these bounds are right."""
    if np.asarray(got.get("same_as_one_device")).tolist() is not True:
        return Verdict(False, hints.MSG_MQA_VALUES.format(rtol=MQA_RTOL, atol=MQA_ATOL))
    mine, theirs = (float(np.asarray(m["weight_bytes"]).item()) for m in (got, want))
    if mine > theirs:
        return Verdict(False, hints.MSG_MQA_BYTES.format(mine=mine, theirs=theirs),
                       first_hint(MQA_BYTES_HINTS, got, want), said_all=True)
    sent, reference = per_axis(got["sent"]), per_axis(want["sent"])
    for axis in sorted(set(sent) | set(reference)):
        if sent.get(axis, 0) > SENT_MARGIN * reference.get(axis, 0) + SENT_SLACK:
            kinds = {k: int(np.asarray(v).item()) for k, v in got["sent"][axis].items()}
            text = hints.MSG_MQA_SENT.format(axis=axis, mine=sent[axis],
                                             theirs=reference.get(axis, 0), kinds=kinds)
            return Verdict(False, text, first_hint(MQA_SENT_HINTS, got, want), said_all=True)
    return PASS


#: The public cases' layer: D = 16, H = 4 query heads of K = 16, a hidden layer of 64.
MQA_SIZES = (16, 4, 16)


@case("mqa_specs", hidden=False, judge=within_the_references_bounds)
def one_kv_head_on_more_data_devices(fn):
    return mqa_case(fn, 80, "data", *MQA_SIZES, 1, 64)


@case("mqa_specs", hidden=False, judge=within_the_references_bounds)
def two_kv_heads_on_more_data_devices(fn):
    return mqa_case(fn, 81, "data", *MQA_SIZES, 2, 64)


@case("mqa_specs", hidden=False, judge=within_the_references_bounds)
def two_kv_heads_on_more_model_devices(fn):
    return mqa_case(fn, 82, "model", *MQA_SIZES, 2, 64)
