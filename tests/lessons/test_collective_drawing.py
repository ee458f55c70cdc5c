"""Collective drawings: the values drawn are what JAX computes, the arrows are what moved, each
from the cell that holds it to the cell it lands in.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from figures import UNUSED, N, arrows, by_gid, cells, crossed, drawn, holding, path
from jax.sharding import PartitionSpec as P
from matplotlib.colors import to_rgba

from grader.lessons.collective_drawing import (
    KINDS,
    ROOT,
    SUM_COLOUR,
    collective_figure,
    steps,
)
from grader.lessons.drawing import LayoutError
from grader.palette import device_colour


def where(axis_is_root, b):
    return jnp.where(jax.lax.axis_index("i") == ROOT, b, 0) if axis_is_root else b


# The JAX computation of each kind, on a ring of N devices, and the devices it gives a result
# on (reduce and gather: the root only).
BODIES = {
    "psum": lambda b: jax.lax.psum(b, "i"),
    "all_gather": lambda b: jax.lax.all_gather(b, "i", tiled=True),
    "psum_scatter": lambda b: jax.lax.psum_scatter(b, "i", tiled=True),
    "ppermute": lambda b: jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)]),
    "all_to_all": lambda b: jax.lax.all_to_all(b, "i", 0, 0, tiled=True),
    "broadcast": lambda b: jax.lax.psum(where(True, b), "i"),
    "scatter": lambda b: jax.lax.psum_scatter(where(True, b), "i", tiled=True),
    "reduce": lambda b: jax.lax.psum(b, "i"),
    "gather": lambda b: jax.lax.all_gather(b, "i", tiled=True),
}
ROOT_ONLY = {"reduce", "gather"}


@pytest.mark.parametrize("kind", KINDS)
def test_the_drawn_values_are_what_jax_computes(kind, ring):
    """Does each device's 'after' hold exactly what the JAX computation leaves on it,
    starting from the 'before' values (an empty before cell given a value nothing may use),
    and are the devices that receive nothing drawn empty?"""
    fig = collective_figure(kind, N)
    start = np.array([[UNUSED if v is None else v for v in row]
                      for row in drawn(fig, "before", range(N))], dtype=np.int32)
    run = jax.jit(jax.shard_map(BODIES[kind], mesh=ring, in_specs=P("i"), out_specs=P("i")))
    result = np.asarray(run(jnp.asarray(start.ravel()))).reshape(N, -1).tolist()
    after = drawn(fig, "after", range(N))
    receivers = [ROOT] if kind in ROOT_ONLY else range(N)
    assert [after[d] for d in receivers] == [result[d] for d in receivers]
    assert all(v is None for d in range(N) if d not in receivers for v in after[d])
    assert UNUSED not in {v for row in after for v in row}


# Independently of the drawing code: the slot an arrow from device i to device t leaves from,
# and the slot it lands in.
SLOTS = {
    "all_gather": lambda i, t: (0, i),
    "gather": lambda i, t: (0, i),
    "psum_scatter": lambda i, t: (t, 0),
    "scatter": lambda i, t: (t, 0),
    "all_to_all": lambda i, t: (t, i),
    "ppermute": lambda i, t: (0, 0),
    "broadcast": lambda i, t: (0, 0),
}
PAIRS = {
    "all_gather": [(i, t) for i in range(N) for t in range(N) if i != t],
    "gather": [(i, ROOT) for i in range(N) if i != ROOT],
    "psum_scatter": [(i, t) for i in range(N) for t in range(N) if i != t],
    "scatter": [(ROOT, t) for t in range(N) if t != ROOT],
    "all_to_all": [(i, t) for i in range(N) for t in range(N) if i != t],
    "ppermute": [(i, (i + 1) % N) for i in range(N)],
    "broadcast": [(ROOT, t) for t in range(N) if t != ROOT],
}


@pytest.mark.parametrize("kind", sorted(SLOTS))
def test_every_arrow_starts_at_the_cell_that_holds_the_value_and_ends_where_it_lands(kind):
    """Is there one arrow per value that changes device, does it start in the before cell of
    that value, end in the after cell it lands in, cross no other cell on the way, and have
    the colour of the device it comes from?"""
    fig = collective_figure(kind, N)
    found = arrows(fig)
    assert sorted(found) == sorted(f"arrow-{i}-{t}" for i, t in PAIRS[kind])
    boxes = cells(fig)
    for i, t in PAIRS[kind]:
        slot_from, slot_to = SLOTS[kind](i, t)
        points = path(fig, f"arrow-{i}-{t}")
        source, target = f"before-{i}-{slot_from}", f"after-{t}-{slot_to}"
        assert holding(boxes, points[0]) == {source}, (points[0], source)
        assert holding(boxes, points[-1]) == {target}, (points[-1], target)
        assert crossed(boxes, points, [source, target]) == set()
        assert found[f"arrow-{i}-{t}"].arrow_patch.get_edgecolor() == to_rgba(device_colour(i))


@pytest.mark.parametrize(("kind", "receivers"), [("psum", range(N)), ("reduce", [ROOT])])
def test_a_reduction_goes_through_one_adding_node(kind, receivers):
    """Does psum (reduce) draw an arrow from every device's block into the + node, and out of
    it to every device (the root), with grey sums banded in every device's colour?"""
    fig = collective_figure(kind, N)
    assert sorted(arrows(fig)) == sorted(
        [f"arrow-{i}-sum" for i in range(N)] + [f"arrow-sum-{d}" for d in receivers]
    )
    boxes = cells(fig)
    for i in range(N):
        start = path(fig, f"arrow-{i}-sum")[0]
        assert holding(boxes, start) == {f"before-{i}-{N - 1}"}  # its block's right edge
    for d in receivers:
        assert holding(boxes, path(fig, f"arrow-sum-{d}")[-1]) == {f"after-{d}-0"}
    parts = by_gid(fig)
    assert parts[f"after-{ROOT}-1"][0].get_facecolor() == to_rgba(SUM_COLOUR)
    assert [parts[f"part-{ROOT}-1-{s}"][0].get_facecolor() for s in range(N)] == [
        to_rgba(device_colour(s)) for s in range(N)
    ]


def test_a_step_shows_what_has_arrived_so_far_and_who_is_sending():
    """At step 1 of all_gather, have slots 0 and 1 arrived everywhere, slots 2 and 3 not yet,
    and are the only arrows those of device 1?"""
    fig = collective_figure("all_gather", N, step=1)
    assert drawn(fig, "after", range(N)) == [[1, 11, None, None]] * N
    assert sorted(arrows(fig)) == ["arrow-1-0", "arrow-1-2", "arrow-1-3"]
    empty = by_gid(fig)["after-0-3"][0]
    assert empty.get_facecolor() == to_rgba("white") and empty.get_linestyle() == "--"


def test_a_psum_step_holds_the_partial_sum():
    """At step 2 of psum, does every device hold the sum of devices 0 to 2 only?"""
    fig = collective_figure("psum", N, step=2)
    # device i starts with 10 * i + j + 1: slot j adds (j + 1) + (j + 11) + (j + 21)
    assert drawn(fig, "after", range(N)) == [[33 + 3 * j for j in range(N)]] * N
    parts = sorted(g for g in by_gid(fig) if g.startswith("part-0-0-"))
    assert parts == ["part-0-0-0", "part-0-0-1", "part-0-0-2"]


def test_a_scatter_step_is_one_receiving_device():
    """At step 2 of scatter, have devices 0 to 2 received their block from the root, device 3
    not yet, and is the only arrow the one to device 2?"""
    fig = collective_figure("scatter", N, step=2)
    assert drawn(fig, "after", range(N)) == [[1], [2], [3], [None]]
    assert sorted(arrows(fig)) == ["arrow-0-2"]
    assert drawn(collective_figure("scatter", N, step=0), "after", range(N)) == [
        [1], [None], [None], [None]]


def test_every_step_has_the_layout_of_the_whole_collective():
    """Do the steps of all_to_all keep every cell where the whole drawing has it, so that
    stepping does not move the picture?"""
    whole = cells(collective_figure("all_to_all", N))
    for step in range(N):
        assert cells(collective_figure("all_to_all", N, step=step)) == whole


def test_steps_and_bad_arguments():
    """Is there one step per device, and are an unknown kind, device count or step refused?"""
    assert [steps(kind, 8) for kind in KINDS] == [8] * len(KINDS)
    with pytest.raises(LayoutError, match="choose one of psum"):
        collective_figure("allreduce")
    with pytest.raises(LayoutError, match="steps 0 to 3"):
        collective_figure("psum", 4, step=4)
    with pytest.raises(LayoutError, match="1 to 16 devices"):
        steps("psum", 0)
