"""Public tests of lesson 3 (collectives): ``check`` runs them in the notebook, and the
grader runs them too. Inputs are built from the number of devices there are."""

from __future__ import annotations

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import hlo
from grader.framework.cases import case
from grader.framework.judge import (
    PASS,
    Hint,
    Verdict,
    close,
    compiles_to,
    result_close_to,
    same,
)
from grader.framework.placement import layout, spec_of
from grader.framework.probes import (
    Program,
    hlo_collectives,
    measure,
    program_summary,
    trailing,
)
from grader.hints import collectives as hints

forgot_psum = result_close_to("_first_shard", hints.HINT_FORGOT_PSUM)
no_wrap = result_close_to("_no_wrap", hints.HINT_RING_NO_WRAP)
wrong_direction = result_close_to("_backwards", hints.HINT_WRONG_DIRECTION)
forgot_pmean = result_close_to("_one_device", hints.HINT_FORGOT_PMEAN)
psum_not_pmean = result_close_to("_summed", hints.HINT_PSUM_NOT_PMEAN)


def _stacked(got: dict, want: dict) -> bool:
    """Whether the parameters came back with a device axis: one copy per device, as pmap."""
    result = got.get("result")
    return isinstance(result, dict) and any(np.ndim(v) > 0 for v in result.values())


one_copy_per_device = Hint(_stacked, hints.HINT_PORT_STACKED)


def dot_inputs(rows_per_device: int, seed: int | None = None):
    """Two (N, 3) arrays with N a multiple of the device count, and one device's share."""
    n = jax.device_count()
    shape = (rows_per_device * n, 3)
    if seed is None:
        v1 = np.arange(np.prod(shape), dtype=np.float32).reshape(shape) / 10
        v2 = np.ones(shape, np.float32)
    else:
        rng = np.random.default_rng(seed)
        v1, v2 = rng.normal(size=(2, *shape)).astype(np.float32)
    first = float(np.vdot(v1[:rows_per_device], v2[:rows_per_device]))
    return jnp.asarray(v1), jnp.asarray(v2), first


def linear_step(params: dict, x: np.ndarray, y: np.ndarray, lr: float) -> dict:
    """One gradient step of mean((w * x + b - y) ** 2), in numpy."""
    error = params["w"] * x + params["b"] - y
    return {"w": params["w"] - lr * np.mean(2 * error * x),
            "b": params["b"] - lr * np.mean(2 * error)}


def step_context(params: dict, batch: dict, lr: float) -> dict:
    """What a port that forgot the pmean (with check_vma=False, device 0's own step is what
    comes back), or used psum instead, would give: hint material."""
    first = linear_step(params, batch["x"][0], batch["y"][0], lr)
    full = linear_step(params, batch["x"], batch["y"], lr)
    n = batch["x"].shape[0]
    summed = {k: params[k] + n * (full[k] - params[k]) for k in full}
    return {"_one_device": {k: np.float32(v) for k, v in first.items()},
            "_summed": {k: np.float32(v) for k, v in summed.items()}}


def regression_batch(per_device: int, seed: int):
    """A batch for y = 3x - 1 plus noise, one row per device."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(jax.device_count(), per_device)).astype(np.float32)
    y = (3 * x - 1 + 0.1 * rng.normal(size=x.shape)).astype(np.float32)
    return {"x": x, "y": y}


# --- nan_mean_var: a mean and a variance from one psum of a pytree --------------------------
@measure
def all_reduces_in_hlo(program: Program) -> dict:
    """The all-reduces of the compiled HLO, each as [the values one device hands it, their
    dtypes], and the other collectives, by name."""
    found = hlo.collectives_in_hlo(program.compiled)
    return {"all_reduces": [[sum(math.prod(shape) for _, shape in c.operands),
                             sorted({dtype for dtype, _ in c.operands})]
                            for c in found if c.op == "all-reduce"],
            "others": sorted(c.op for c in found if c.op != "all-reduce")}


def all_reduces_once(got: dict, want: dict) -> Verdict:
    """A judge for :func:`all_reduces_in_hlo`: as many all-reduces as the reference's (one),
    each carrying as many values (the count, the sum and the sum of squares), and no other
    collective."""
    others = [str(op) for op in got.get("others", [])]
    if others:
        return Verdict(False, hints.MSG_MOMENTS_OTHERS.format(got=", ".join(others)),
                       hints.HINT_MOMENTS_GATHERS)
    have, need = list(got.get("all_reduces", [])), list(want["all_reduces"])
    if len(have) != len(need):
        dtypes = {str(dtype) for _, kinds in have for dtype in kinds}
        hint = (hints.HINT_MOMENTS_NO_PSUM if not have else
                hints.HINT_MOMENTS_DTYPES if len(dtypes) > 1 else hints.HINT_MOMENTS_ROUNDS)
        return Verdict(False, hints.MSG_ALL_REDUCES.format(got=len(have), want=len(need)), hint)
    carried, wanted = ([int(np.asarray(values).item()) for values, _ in reduces]
                       for reduces in (have, need))
    if carried != wanted:  # fewer: the count was left out, and x's length divides
        hint = (hints.HINT_MOMENTS_VALUES if sum(carried) > sum(wanted)
                else hints.HINT_MOMENTS_LENGTH)
        return Verdict(False, hints.MSG_MOMENT_VALUES.format(got=carried, want=wanted), hint)
    return PASS


def _moments(values: np.ndarray, count: float, ddof: int = 0) -> tuple[np.ndarray, ...]:
    """The mean and the variance of ``values`` over ``count`` entries, as float32 scalars."""
    mean = values.sum() / count
    variance = ((values - mean) ** 2).sum() / (count - ddof)
    return np.float32(mean), np.float32(variance)


def moments_context(x: np.ndarray) -> dict:
    """What dividing by the length of x, the sample variance, the first device's block alone,
    or the mean of the blocks' own means would give."""
    present = x[~np.isnan(x)].astype(np.float64)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a block of NaNs only: its mean is NaN
        blocks = x.astype(np.float64).reshape(jax.device_count(), -1)
        block_means = [np.nanmean(b) for b in blocks]
    over_length = present.sum() / x.size
    first = x[: x.size // jax.device_count()]
    first = first[~np.isnan(first)].astype(np.float64)
    return {"_over_length": (np.float32(over_length),
                             np.float32((present ** 2).sum() / x.size - over_length ** 2)),
            "_sample": _moments(present, present.size, ddof=1),
            "_mean_of_means": np.float32(np.mean(block_means)),
            "_first_shard": _moments(first, first.size) if first.size else (np.nan, np.nan)}


def with_gaps(per_device: int, seed: int, offset: float = 0.0, gaps: float = 0.25,
              empty_first_block: bool = False) -> np.ndarray:
    """A float32 vector of ``per_device`` entries per device about ``offset``, a share
    ``gaps`` of them NaN (the last entry always present), the first device's block all NaN
    if asked."""
    rng = np.random.default_rng(seed)
    x = (offset + rng.normal(size=per_device * jax.device_count())).astype(np.float32)
    x[rng.random(x.size) < gaps] = np.nan
    x[-1] = offset
    if empty_first_block:
        x[:per_device] = np.nan
    return x


def both_layouts(result) -> list:
    """Where each of the results lives (one :func:`layout` per element of a tuple)."""
    return [layout(r) for r in result] if isinstance(result, (tuple, list)) else [layout(result)]


def moments_of(fn, x, given=None) -> dict:
    result = fn(jnp.asarray(x) if given is None else given)
    return {"result": result, "layout": both_layouts(result), **moments_context(x)}


def _is_nan(got: dict, want: dict) -> bool:
    return bool(np.isnan(np.asarray(got["result"], dtype=float)).any())


nans_added_in = Hint(_is_nan, hints.HINT_MOMENTS_NAN)
over_length = result_close_to("_over_length", hints.HINT_MOMENTS_LENGTH)
sample_variance = result_close_to("_sample", hints.HINT_MOMENTS_SAMPLE)
mean_of_means = Hint(lambda got, want: close(got["result"][0], want["_mean_of_means"]),
                     hints.HINT_MOMENTS_MEAN_OF_MEANS)
moments_not_on_every_device = Hint(lambda got, want: close(got["result"], want["result"]),
                                   hints.HINT_MOMENTS_LAYOUT)
MOMENTS = same("result", "layout", hints=[nans_added_in, over_length, sample_variance,
                                          forgot_psum, mean_of_means,
                                          moments_not_on_every_device])


@case("nan_mean_var", hidden=False, judge=MOMENTS)
def moments_of_the_entries_present(fn):
    return moments_of(fn, with_gaps(3, seed=10))


@case("nan_mean_var", hidden=False, judge=all_reduces_once)
def all_reduces_three_numbers_once(fn):
    return all_reduces_in_hlo(fn, jnp.asarray(with_gaps(2, seed=11)))


# --- fixed_pmap_port: a line-by-line port of pmap code, fixed --------------------------------
@measure
def all_reduced_values(program: Program) -> int:
    """How many values one device hands to the all-reduces of the compiled HLO, in all."""
    return sum(math.prod(shape) for c in hlo.collectives_in_hlo(program.compiled)
               if c.op == "all-reduce" for _, shape in c.operands)


def reduces_the_mean_only(got: dict, want: dict) -> Verdict:
    """A judge for :func:`all_reduced_values`: the all-reduces carry what the reference's
    do (the m numbers of the mean), no more and no fewer."""
    have, need = (int(np.asarray(d.get("reduced", -1)).item()) for d in (got, want))
    if have == need:
        return PASS
    hint = hints.HINT_PORT_DEVICE_AXIS if have > need else hints.HINT_PORT_NO_PMEAN
    return Verdict(False, hints.MSG_REDUCED_VALUES.format(want=need, got=have), hint)


stacked_rows = Hint(lambda got, want: got["result"].ndim == 3, hints.HINT_PORT_STACKED_ROWS)
device_axis_mean = result_close_to("_device_axis_mean", hints.HINT_PORT_DEVICE_AXIS)
own_mean = result_close_to("_own_mean", hints.HINT_PORT_NO_PMEAN)
port_layout = Hint(lambda got, want: close(got["result"], want["result"]),
                   hints.HINT_PORT_LAYOUT)
PORT_FIXED = same("result", "layout", hints=[stacked_rows, device_axis_mean, own_mean,
                                             port_layout])


def features(rows_per_device: int, k: int, m: int, seed: int):
    """A batch x (n * rows_per_device, k), weights w (k, m), and what the line-by-line port
    (each row centred by the mean of the rows at its place on the other devices) or a
    port without the pmean (each block centred by its own mean) would give."""
    rng = np.random.default_rng(seed)
    n = jax.device_count()
    x = rng.normal(size=(n * rows_per_device, k)).astype(np.float32)
    w = rng.normal(size=(k, m)).astype(np.float32)
    h = (x @ w).reshape(n, rows_per_device, m)
    context = {"_device_axis_mean": (h - h.mean(axis=0)).reshape(-1, m),
               "_own_mean": (h - h.mean(axis=1, keepdims=True)).reshape(-1, m)}
    return x, w, context


def centred_on(fn, x, w, context) -> dict:
    result = fn(x, w)
    return {"result": result, "layout": layout(result), **context}


@case("fixed_pmap_port", hidden=False, judge=PORT_FIXED)
def centres_a_batch_held_whole_on_every_device(fn):
    x, w, context = features(2, 3, 2, seed=20)
    return centred_on(fn, split_over_devices(x, P()), jnp.asarray(w), context)


@case("fixed_pmap_port", hidden=False, judge=reduces_the_mean_only)
def all_reduces_the_mean_and_nothing_else(fn):
    x, w, _ = features(3, 4, 2, seed=21)
    return {"reduced": all_reduced_values(fn, jnp.asarray(x), jnp.asarray(w))}


# --- distributed_dot ----------------------------------------------------------------------
@case("distributed_dot", hidden=False, hints=[forgot_psum])
def dot_of_two_small_arrays(fn):
    v1, v2, first = dot_inputs(2)
    return {"result": fn(v1, v2), "_first_shard": first}


@case("distributed_dot", hidden=False, judge=compiles_to("all-reduce", hints.HINT_FORGOT_PSUM))
def compiles_to_an_all_reduce(fn):
    v1, v2, _ = dot_inputs(2)
    return hlo_collectives(fn, v1, v2)


# --- pmean_update_step: the pmap step of the exercise's statement, ported to shard_map ----
PORT_HINTS = [one_copy_per_device, forgot_pmean, psum_not_pmean]


@case("pmean_update_step", hidden=False, hints=PORT_HINTS)
def one_step_from_zero(fn):
    params = {"w": 0.0, "b": 0.0}
    batch = regression_batch(4, seed=0)
    return {"result": fn(params, batch), **step_context(params, batch, 0.01)}


@case("pmean_update_step", hidden=False, hints=PORT_HINTS)
def takes_the_learning_rate(fn):
    params = {"w": 1.0, "b": 0.5}
    batch = regression_batch(4, seed=1)
    return {"result": fn(params, batch, learning_rate=0.1), **step_context(params, batch, 0.1)}


@case("pmean_update_step", hidden=False,
      judge=compiles_to("all-reduce", hints.HINT_FORGOT_PMEAN))
def compiles_to_the_all_reduce_of_the_pmean(fn):
    return hlo_collectives(fn, {"w": 0.5, "b": 0.0}, regression_batch(2, seed=2))


# --- halo_difference ----------------------------------------------------------------------
def _difference_with(x: np.ndarray, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The central difference of every block of ``x`` (one row of blocks per device), padded
    with ``left[i]`` before block i and ``right[i]`` after it."""
    blocks = x.reshape(jax.device_count(), -1)
    padded = np.concatenate([left[:, None], blocks, right[:, None]], axis=1)
    return ((padded[:, 2:] - padded[:, :-2]) / 2).reshape(-1).astype(np.float32)


def halo_context(x: np.ndarray) -> dict:
    """What halos from the wrong neighbours (each block's last element sent to the previous
    device, its first to the next), no wrapping round at the ends of x (zeros there), or
    every block wrapping round on itself would give."""
    blocks = x.reshape(jax.device_count(), -1)
    firsts, lasts = blocks[:, 0], blocks[:, -1]
    zero = np.zeros(1, x.dtype)
    return {
        "_backwards": _difference_with(x, np.roll(lasts, -1), np.roll(firsts, 1)),
        "_no_wrap": _difference_with(x, np.concatenate([zero, lasts[:-1]]),
                                     np.concatenate([firsts[1:], zero])),
        "_own_block": _difference_with(x, lasts, firsts),
    }


@measure
def received_by_kind(program: Program) -> dict[str, int]:
    """The bytes one device receives through each kind of collective of the compiled
    program, each counted as often as it runs."""
    return hlo.received(program.compiled)[0]


def sends_edges_only(got: dict, want: dict) -> Verdict:
    """The devices may exchange nothing but collective-permutes, carrying no more than the
    reference's (one edge element each way), and must exchange something where it does."""
    have, ref = got["received"], want["received"]
    others = sorted(kind for kind, size in have.items()
                    if size and kind != "collective-permute")
    if others:
        return Verdict(False, hints.MSG_OTHER_COLLECTIVES.format(ops=", ".join(others)),
                       hints.HINT_HALO_OTHER_COLLECTIVES)
    permuted, needed = have.get("collective-permute", 0), ref.get("collective-permute", 0)
    if permuted > needed:
        return Verdict(False, hints.MSG_HALO_RECEIVED.format(have=permuted, want=needed),
                       hints.HINT_HALO_WHOLE_BLOCK)
    if needed and not permuted:
        return Verdict(False, hints.MSG_HALO_RECEIVED.format(have=0, want=needed),
                       hints.HINT_HALO_NO_PERMUTE)
    return PASS


own_block = result_close_to("_own_block", hints.HINT_HALO_OWN_BLOCK)
HALO_HINTS = [wrong_direction, no_wrap, own_block]


def squares(per_device: int) -> np.ndarray:
    """0, 1, 4, 9, ...: a vector whose central difference is 2k, except where x wraps round."""
    return np.arange(per_device * jax.device_count(), dtype=np.float32) ** 2


@case("halo_difference", hidden=False, hints=HALO_HINTS)
def differences_of_the_squares(fn):
    x = squares(4)
    return {"result": fn(jnp.asarray(x)), **halo_context(x)}


@case("halo_difference", hidden=False, judge=sends_edges_only)
def sends_one_element_each_way(fn):
    return {"received": received_by_kind(fn, jnp.asarray(squares(16)))}


# --- collectives beyond psum: measurements and judges ------------------------------------
@measure
def all_reduce_kinds(program: Program) -> list[str]:
    """How each all-reduce of the compiled HLO combines values ('add', 'maximum', ...):
    the root operation of the computation it applies, sorted, without repeats."""
    return sorted({c.reduction or "unknown" for c in hlo.collectives_in_hlo(program.compiled)
                   if c.op == "all-reduce"})


@measure
def gathered_per_device(program: Program) -> float:
    """The most values one device contributes to an all-gather of the compiled HLO, on a
    mesh of all the program's devices (0 without all-gather)."""
    largest = max((math.prod(shape) for c in hlo.collectives_in_hlo(program.compiled)
                   if c.op == "all-gather" for _, shape in c.result), default=0)
    return largest / program.exported.nr_devices


def uses_only(needed: str, forbidden: tuple[str, ...], hint: str):
    """A judge for :func:`hlo_collectives`: none of ``forbidden`` may be compiled, and
    ``needed`` must be where the reference has it."""
    wants_needed = compiles_to(needed, hint)

    def judge(got: dict, want: dict) -> Verdict:
        used = [op for op in forbidden if np.asarray(got.get(op, 0)).item()]
        if used:
            return Verdict(False, hints.MSG_OTHER_COLLECTIVES.format(ops=", ".join(used)), hint)
        return wants_needed(got, want)

    return judge


def takes_a_maximum(got: dict, want: dict) -> Verdict:
    """A judge for :func:`all_reduce_kinds`: some all-reduce must combine by maximum."""
    seen = [str(kind) for kind in got.get("all_reduces", [])]
    if "maximum" in seen:
        return PASS
    return Verdict(False, hints.MSG_NO_MAX_REDUCTION.format(seen=", ".join(seen) or "none"),
                   hints.HINT_NORMALIZE_PMAX)


def gathers_block_totals_only(got: dict, want: dict) -> Verdict:
    """A judge for :func:`gathered_per_device`: at most one value per device is gathered."""
    per_device = float(np.asarray(got.get("gathered_per_device", np.inf)).item())
    if per_device <= 1:
        return PASS
    return Verdict(False, hints.MSG_GATHERS_TOO_MUCH.format(got=per_device),
                   hints.HINT_CUMSUM_GATHERS_DATA)


def sums_over_only(axis: str):
    """A judge for :func:`program_summary`: every psum adds over ``axis`` alone, and there is
    at least one. Where ``axis`` has size 1 it leaves no trace in the program: every psum
    must then add over what the reference's does."""

    def psums(summary: dict) -> list[tuple]:
        return sorted({tuple(c.get("axes", [])) for c in summary.get("collectives", [])
                       if str(c.get("primitive", "")).startswith("psum")})

    def judge(got: dict, want: dict) -> Verdict:
        sums = psums(got)
        if sums == [(axis,)] or (sums and sums == psums(want)):
            return PASS
        hint = hints.HINT_ROW_SUMS_BOTH_AXES if sums else hints.HINT_ROW_SUMS_ONE_BLOCK
        seen = ", ".join(f"psum over {list(axes)}" for axes in sums) or "no psum"
        return Verdict(False, hints.MSG_REDUCED_OVER.format(want=[axis], got=seen), hint)

    return judge


def always(text: str) -> Hint:
    """A hint shown whenever its test fails."""
    return Hint(lambda got, want: True, text)


def _devices_mesh() -> Mesh:
    return Mesh(jax.devices(), ("data",))


def split_over_devices(x: np.ndarray, spec: P) -> jax.Array:
    """``x`` placed on a mesh of all devices with the axis 'data' (Auto axes)."""
    return jax.device_put(jnp.asarray(x), NamedSharding(_devices_mesh(), spec))


def grid_mesh(rows_major: bool = True, explicit: bool = True) -> Mesh:
    """A 2-D mesh ('x', 'y') of every device: (n/2, 2) or, with ``rows_major`` False,
    (2, n/2); on an odd device count, (n, 1) or (1, n)."""
    n = jax.device_count()
    shape = (n // 2, 2) if n % 2 == 0 else (n, 1)
    shape = shape if rows_major else shape[::-1]
    if explicit:
        return jax.make_mesh(shape, ("x", "y"))
    return Mesh(np.array(jax.devices()).reshape(shape), ("x", "y"))


# --- global_max_normalize -------------------------------------------------------------------
local_max = result_close_to("_local_max", hints.HINT_NORMALIZE_LOCAL_MAX)
no_abs = result_close_to("_no_abs", hints.HINT_NORMALIZE_ABS)


def normalize_context(x: np.ndarray) -> dict:
    """What dividing each block by its own max |x|, or x by max(x), would give."""
    blocks = x.reshape(jax.device_count(), -1)
    local = blocks / np.abs(blocks).max(axis=1, keepdims=True)
    return {"_local_max": local.reshape(-1), "_no_abs": x / x.max()}


def signed_vector(per_device: int, seed: int) -> np.ndarray:
    """Values whose largest magnitude is negative and on the last device."""
    x = np.random.default_rng(seed).uniform(-1, 1, size=per_device * jax.device_count())
    x[-1] = -3.0
    return x.astype(np.float32)


@case("global_max_normalize", hidden=False, hints=[local_max, no_abs])
def divides_by_the_largest_magnitude(fn):
    x = signed_vector(3, seed=60)
    return {"result": fn(jnp.asarray(x)), **normalize_context(x)}


@case("global_max_normalize", hidden=False, judge=takes_a_maximum)
def all_reduces_with_a_maximum(fn):
    return {"all_reduces": all_reduce_kinds(fn, jnp.asarray(signed_vector(2, seed=61)))}


# --- allreduce_from_ppermute ----------------------------------------------------------------
ring_steps = Hint(
    lambda got, want: any(close(got["result"], want[k]) for k in ("_no_shift", "_one_shift",
                                                                   "_n_shifts")),
    hints.HINT_RING_STEPS,
)
ONLY_PERMUTES = uses_only(
    "collective-permute",
    ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"),
    hints.HINT_RING_USES_OTHER_COLLECTIVES,
)


def one_row_per_device(columns: int, seed: int | None = None, integers: bool = False):
    """An (n_devices, columns) array, and what too few or too many ring steps would give."""
    n = jax.device_count()
    rng = np.random.default_rng(seed)
    if integers:
        x = rng.integers(-50, 50, size=(n, columns)).astype(np.int32)
    elif seed is None:
        x = np.arange(n * columns, dtype=np.float32).reshape(n, columns)
    else:
        x = rng.normal(size=(n, columns)).astype(np.float32)
    total = np.broadcast_to(x.sum(axis=0), x.shape)
    context = {"_no_shift": x, "_one_shift": x + np.roll(x, 1, axis=0), "_n_shifts": total + x}
    return x, context


@case("allreduce_from_ppermute", hidden=False, hints=[ring_steps])
def every_row_becomes_the_total(fn):
    x, context = one_row_per_device(4)
    return {"result": fn(jnp.asarray(x)), **context}


@case("allreduce_from_ppermute", hidden=False, judge=ONLY_PERMUTES)
def compiles_to_collective_permutes_only(fn):
    x, _ = one_row_per_device(4)
    return hlo_collectives(fn, jnp.asarray(x))


# --- sharded_cumsum -------------------------------------------------------------------------
restarts = result_close_to("_restarts", hints.HINT_CUMSUM_OFFSET)
own_total = result_close_to("_own_total", hints.HINT_CUMSUM_OWN_TOTAL)


def cumsum_context(x: np.ndarray) -> dict:
    """What restarting every block at 0, or adding a block's own total, would give."""
    blocks = x.reshape(jax.device_count(), -1)
    restarted = np.cumsum(blocks, axis=1)
    own = restarted + np.cumsum(blocks.sum(axis=1))[:, None]
    return {"_restarts": restarted.reshape(-1), "_own_total": own.reshape(-1)}


@case("sharded_cumsum", hidden=False, hints=[restarts, own_total])
def running_total_of_small_integers(fn):
    x = (np.arange(4 * jax.device_count(), dtype=np.int32) % 5) + 1
    return {"result": fn(jnp.asarray(x)), **cumsum_context(x)}


@case("sharded_cumsum", hidden=False, judge=gathers_block_totals_only)
def gathers_one_value_per_device_at_most(fn):
    x = np.arange(4 * jax.device_count(), dtype=np.float32)
    return {"gathered_per_device": gathered_per_device(fn, jnp.asarray(x))}


# --- reduce_scatter_columns -----------------------------------------------------------------
@measure
def reduce_scatter_groups(program: Program) -> list[list[list[int]]]:
    """The device groups of each reduce-scatter of the compiled HLO, in program order, each
    sorted (a group XLA printed in a form hlo does not read is an empty list)."""
    return [sorted(sorted(group) for group in c.groups or ())
            for c in hlo.collectives_in_hlo(program.compiled) if c.op == "reduce-scatter"]


SCATTERS = uses_only("reduce-scatter", ("all-reduce", "all-gather"), hints.HINT_SCATTER_NOT_PSUM)
columns_shape = Hint(lambda got, want: got["values"].shape != want["values"].shape,
                     hints.HINT_SCATTER_DIMENSION)
columns_order = Hint(lambda got, want: close(got["values"], want["_x_first"]),
                     hints.HINT_SCATTER_ORDER)
columns_layout = Hint(lambda got, want: close(got["values"], want["values"]),
                      hints.HINT_SCATTER_LAYOUT)
SCATTERED_COLUMNS = same("values", "spec", "layout", hints=[
    columns_shape, columns_order, columns_layout])


def scatter_groups(got: dict, want: dict) -> Verdict:
    """A judge for :func:`reduce_scatter_groups`: the reduce-scatters combine the devices
    the reference's do (those sharing a 'y' position), no more and no fewer."""
    if got.get("groups") == want.get("groups"):
        return PASS
    return Verdict(False, hints.MSG_SCATTER_GROUPS.format(want=want.get("groups"),
                                                          got=got.get("groups") or "none"),
                   hints.HINT_SCATTER_OVER_BOTH)


def partial_sums(mesh: Mesh, rows: int, columns: int, seed: int | None = None,
                 placed: bool = True):
    """``(nx * rows, columns * n)`` partial sums placed P('x', 'y') on ``mesh`` (or, with
    ``placed`` False, left to the function to place), and what laying the columns of the
    total out 'x' first would give."""
    size_x, size_y = mesh.shape["x"], mesh.shape["y"]
    shape = (size_x * rows, columns * size_x * size_y)
    if seed is None:
        x = (np.arange(math.prod(shape), dtype=np.float32) % 11).reshape(shape)
    else:
        x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    total = x.reshape(size_x, rows, -1).sum(axis=0)
    pieces = total.reshape(rows, size_y, size_x, columns)  # column piece (j, i): device (i, j)
    x_first = pieces.transpose(0, 2, 1, 3).reshape(rows, -1)
    context = {"_x_first": x_first}
    if not placed:
        return jnp.asarray(x), context
    return jax.device_put(x, NamedSharding(mesh, P("x", "y"))), context


def scattered_on(fn, mesh: Mesh, rows: int, columns: int, seed: int | None = None) -> dict:
    parts, context = partial_sums(mesh, rows, columns, seed)
    out = fn(parts, mesh)
    return {"values": out, "spec": spec_of(out), "layout": layout(out), **context}


@case("reduce_scatter_columns", hidden=False, judge=SCATTERED_COLUMNS)
def adds_over_x_and_scatters_the_columns(fn):
    return scattered_on(fn, grid_mesh(), rows=2, columns=3)


@case("reduce_scatter_columns", hidden=False, judge=SCATTERS)
def compiles_to_a_reduce_scatter_and_no_all_reduce(fn):
    mesh = grid_mesh(rows_major=False, explicit=False)
    parts, _ = partial_sums(mesh, rows=1, columns=2, placed=False)
    return hlo_collectives(trailing(fn, mesh), parts)


# --- rows_to_columns ------------------------------------------------------------------------
a2a_shape = Hint(lambda got, want: got["values"].shape != want["values"].shape, hints.HINT_A2A_AXES)
a2a_layout = Hint(lambda got, want: close(got["values"], want["values"]), hints.HINT_A2A_LAYOUT)
MOVES_ALL_TO_ALL = uses_only("all-to-all", ("all-gather",), hints.HINT_A2A_GATHERED)


def row_split_matrix(rows: int, columns: int, seed: int | None = None) -> jax.Array:
    """An (rows * n, columns * n) matrix split by rows over 'data'."""
    n = jax.device_count()
    shape = (rows * n, columns * n)
    if seed is None:
        x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    else:
        x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    return split_over_devices(x, P("data", None))


@case("rows_to_columns", hidden=False, judge=same("values", "spec", "layout",
                                                  hints=[a2a_shape, a2a_layout]))
def same_values_split_by_columns(fn):
    out = fn(row_split_matrix(2, 3))
    return {"values": out, "spec": spec_of(out), "layout": layout(out)}


@case("rows_to_columns", hidden=False, judge=MOVES_ALL_TO_ALL)
def compiles_to_an_all_to_all(fn):
    return hlo_collectives(fn, row_split_matrix(1, 2))


# --- row_group_sums -------------------------------------------------------------------------
both_axes = Hint(lambda got, want: close(got["values"], want["_both_axes"]),
                 hints.HINT_ROW_SUMS_BOTH_AXES)
one_block = Hint(lambda got, want: close(got["values"], want["_one_block"]),
                 hints.HINT_ROW_SUMS_ONE_BLOCK)
given_mesh = Hint(lambda got, want: close(got["values"], want["values"])
                  and got["spec"] == want["spec"], hints.HINT_ROW_SUMS_GIVEN_MESH)
row_layout = Hint(lambda got, want: close(got["values"], want["values"]),
                  hints.HINT_ROW_SUMS_LAYOUT)
ROW_SUMS = same("values", "spec", "layout",
                hints=[both_axes, one_block, given_mesh, row_layout])


def grid_matrix(mesh: Mesh, rows: int, columns: int, seed: int | None = None):
    """A matrix placed P('x', 'y') on ``mesh``, and what summing over the wrong axes, or over
    the first block of columns only, would give."""
    size_x, size_y = mesh.shape["x"], mesh.shape["y"]
    shape = (rows * size_x, columns * size_y)
    if seed is None:
        x = (np.arange(np.prod(shape), dtype=np.float32) % 7).reshape(shape)
    else:
        x = np.random.default_rng(seed).normal(size=shape).astype(np.float32)
    sums = x.sum(axis=1)
    both = np.tile(sums.reshape(size_x, rows).sum(axis=0), size_x)
    context = {"_both_axes": both, "_one_block": x[:, :columns].sum(axis=1)}
    return jax.device_put(x, NamedSharding(mesh, P("x", "y"))), context


def row_sums_on(fn, mesh: Mesh, rows: int, columns: int, seed: int | None = None) -> dict:
    x, context = grid_matrix(mesh, rows, columns, seed)
    out = fn(x, mesh)
    return {"values": out, "spec": spec_of(out), "layout": layout(out), **context}


@case("row_group_sums", hidden=False, judge=ROW_SUMS)
def row_sums_split_over_x(fn):
    return row_sums_on(fn, grid_mesh(), rows=2, columns=3)


@case("row_group_sums", hidden=False, judge=ROW_SUMS)
def row_sums_on_a_mesh_of_another_shape(fn):
    """The mesh turned the other way (2 x n/2): a function that builds a grid of its own,
    rather than use the mesh it is given, fails here."""
    return row_sums_on(fn, grid_mesh(rows_major=False, explicit=False), rows=2, columns=3)


@case("row_group_sums", hidden=False, judge=sums_over_only("y"))
def adds_over_y_only(fn):
    mesh = grid_mesh()
    x, _ = grid_matrix(mesh, rows=1, columns=2)
    return program_summary(trailing(fn, mesh), x)
