"""Replies written in the worker's place, from the request id found in the worker's frame:
for halo_difference, a reply of 60 MiB of empty dicts (under the old 64 MiB line limit, but
gigabytes of Python objects once parsed, in the grader's own process); for
pmean_update_step, a failure whose texts are NaN (which JSON cannot write back: it would stop
results.json from being written). Each reply answers the test being measured before the
worker's own reply does. Both exercises must fail alone, the grader staying small and the
results written."""
import sys

import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P


def answer_for_the_worker(line_for):
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "serve":
        frame = frame.f_back
    if frame is not None:
        write, flush = frame.f_locals["write"], frame.f_locals["flush"]
        write(line_for(frame.f_locals["req"]))
        flush()


def halo_difference(x):
    bomb = "{}," * (20 * 2**20)
    answer_for_the_worker(lambda req: '{"req": "%s", "ok": true, "data": {"list": [%s{}]}}\n'
                          % (req, bomb))
    n = jax.device_count()

    def difference(b):
        before = jax.lax.ppermute(b[-1:], "data", [(i, (i + 1) % n) for i in range(n)])
        after = jax.lax.ppermute(b[:1], "data", [(i, (i - 1) % n) for i in range(n)])
        padded = jnp.concatenate([before, b, after])
        return (padded[2:] - padded[:-2]) / 2

    halo = jax.shard_map(difference, mesh=Mesh(jax.devices(), ("data",)), in_specs=P("data"),
                         out_specs=P("data"))
    return halo(x)


def pmean_update_step(*args):
    answer_for_the_worker(lambda req: '{"req": "%s", "ok": false, "missing": NaN, "error": '
                          '{"type": NaN, "message": Infinity}, "tampered": [NaN], '
                          '"threads": NaN, "timeout": NaN, "devices": NaN}\n' % req)
    raise RuntimeError("never reached: the forged reply was read first")
