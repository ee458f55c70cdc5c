"""The pictures lesson 3 shows on however many devices its kernel has (at most 4 are drawn):
on 1, 2 or 3 devices too, the collective drawings hold what JAX computes and the ring drawn by
draw_shard_map has the ring's arrows. The lesson's cells assert only what JAX does; these
checks of the course's own drawings moved here.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from figures import UNUSED, arrows, drawn
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P

from grader.lessons.collective_drawing import ROOT, collective_figure
from grader.lessons.shard_map_drawing import draw_shard_map


def ring_of(devices: int):
    return jax.make_mesh((devices,), ("i",), axis_types=(AxisType.Auto,),
                         devices=jax.devices()[:devices])


def from_root(b):
    return jnp.where(jax.lax.axis_index("i") == ROOT, b, 0)


# The lesson's bodies of the patterns it draws, and whether only the root uses the result.
BODIES = {
    "psum": (lambda b: jax.lax.psum(b, "i"), False),
    "all_gather": (lambda b: jax.lax.all_gather(b, "i", tiled=True), False),
    "psum_scatter": (lambda b: jax.lax.psum_scatter(b, "i", tiled=True), False),
    "all_to_all": (lambda b: jax.lax.all_to_all(b, "i", 0, 0, tiled=True), False),
    "broadcast": (lambda b: jax.lax.psum(from_root(b), "i"), False),
    "scatter": (lambda b: jax.lax.psum_scatter(from_root(b), "i", tiled=True), False),
    "reduce": (lambda b: jax.lax.psum(b, "i"), True),
    "gather": (lambda b: jax.lax.all_gather(b, "i", tiled=True), True),
}


@pytest.mark.parametrize("devices", [1, 2, 3])
@pytest.mark.parametrize("kind", sorted(BODIES))
def test_a_drawing_on_few_devices_holds_what_jax_computes(kind, devices):
    """Drawn for a kernel with fewer than 4 devices, does each device's 'after' hold what the
    collective leaves on it (the root's alone where only the root uses it)?"""
    body, root_only = BODIES[kind]
    fig = collective_figure(kind, devices)
    start = np.array([[UNUSED if v is None else v for v in row]
                      for row in drawn(fig, "before", range(devices))], dtype=np.int32)
    run = jax.jit(jax.shard_map(body, mesh=ring_of(devices), in_specs=P("i"), out_specs=P("i")))
    result = np.asarray(run(jnp.asarray(start.ravel()))).reshape(devices, -1).tolist()
    after = drawn(fig, "after", range(devices))
    receivers = [ROOT] if root_only else range(devices)
    assert [after[d] for d in receivers] == [result[d] for d in receivers]


@pytest.mark.parametrize("devices", [1, 2, 3, 4])
def test_the_lessons_shift_round_the_ring_is_drawn_with_its_arrows(devices):
    """Does the lesson's ring shift drawing, data starting at 1, have one arrow per pair of
    the ring (none on one device, where the block stays put)?"""
    pairs = [(i, (i + 1) % devices) for i in range(devices)]
    fig = draw_shard_map(lambda b: jax.lax.ppermute(b, "i", pairs),
                         np.arange(1, 2 * devices + 1), ring_of(devices), P("i"), P("i"))
    want = {f"arrow-{s}-{t}" for s, t in pairs} if devices > 1 else set()
    assert set(arrows(fig)) == want
