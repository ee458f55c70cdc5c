"""Hidden tests of lesson 11 (the capstone): only the grader runs them. The predictions are
compared with what a compiled program really sends, read by grader.framework.hlo per mesh
axis."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.hlo import sent_per_axis
from grader.framework.judge import PASS, Verdict, difference, first_hint
from grader.public.capstone import GATHER_HINTS, gather_context


def what_runs(key: str, hints: tuple | list = ()):
    """A judge: the prediction must equal ``key``, what the reference's probe measured on a
    compiled program (trusted: it ran next to the reference solution)."""

    def judge(got: dict, want: dict) -> Verdict:
        problem = difference(got.get("result"), want[key])
        if problem is None:
            return PASS
        return Verdict(False, problem, first_hint(hints, got, want))

    return judge


# --- fsdp_gather_bytes: what a compiled gradient gathers over 'data' ----------------------
def compiled_gather_bytes(d_model: int, d_hidden: int, layers: int, data: int, model: int,
                          remat: bool) -> float:
    """Bytes one device sends in the all-gathers over 'data' of jax.grad of the exercise's
    stack of blocks, in float32, on a data x model mesh of the first devices."""
    mesh = jax.make_mesh((data, model), ("data", "model"), devices=jax.devices()[:data * model])
    w1 = jax.device_put(jnp.zeros((layers, d_model, d_hidden)),
                        NamedSharding(mesh, P(None, "data", "model")))
    w2 = jax.device_put(jnp.zeros((layers, d_hidden, d_model)),
                        NamedSharding(mesh, P(None, "model", "data")))
    x = jax.device_put(jnp.ones((2 * data, d_model)), NamedSharding(mesh, P("data", None)))

    def block(h, w):
        a = jax.reshard(w[0], NamedSharding(mesh, P(None, "model")))
        b = jax.reshard(w[1], NamedSharding(mesh, P("model", None)))
        return h + jnp.matmul(jnp.tanh(h @ a), b,
                              out_sharding=NamedSharding(mesh, P("data", None)))

    if remat:
        block = jax.checkpoint(block,
                               policy=jax.checkpoint_policies.dots_with_no_batch_dims_saveable)

    def loss(ws, x):
        out, _ = jax.lax.scan(lambda h, w: (block(h, w), None), x, ws)
        return jnp.mean(out**2)

    text = jax.jit(jax.grad(loss)).lower((w1, w2), x).compile().as_text()
    sent = sent_per_axis(text, dict(mesh.shape), [d.id for d in mesh.devices.flat])
    return float(sent.get(("data",), {}).get("all-gather", 0))


def gather_case(args: tuple):
    def probe(fn):
        return {"result": float(fn(*args)), "_compiled": compiled_gather_bytes(*args[:6]),
                **gather_context(*args)}

    return probe


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def rematerialised_on_two_by_two(fn):
    return gather_case((16, 32, 4, 2, 2, True, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def kept_on_four_by_two(fn):
    return gather_case((16, 32, 3, 4, 2, False, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, judge=what_runs("_compiled", GATHER_HINTS))
def rematerialised_on_eight_data_devices(fn):
    return gather_case((8, 48, 2, 8, 1, True, 4))(fn)


@case("fsdp_gather_bytes", hidden=True, hints=GATHER_HINTS)
def kept_in_bfloat16(fn):
    """Compared with the reference's prediction only: XLA on this CPU moves a bfloat16
    all-gather as float32 and sends twice the bytes (the traffic model counts bfloat16)."""
    args = (32, 64, 2, 4, 2, False, 2)
    return {"result": float(fn(*args)), **gather_context(*args)}
