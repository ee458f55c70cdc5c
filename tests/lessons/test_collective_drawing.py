"""Collective drawings: the values drawn are what JAX computes, the arrows are what moved, each
from the cell that holds it to the cell it lands in.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from grader.lessons.collective_drawing import (
    KINDS,
    ROOT,
    SUM_COLOUR,
    collective_figure,
    draw_shard_map,
    steps,
)
from grader.lessons.drawing import LayoutError
from grader.palette import device_colour

N = 4
#: What a drawing's empty (dashed) before cell is given in the JAX run: if a drawn result
#: used it, the result would show it.
UNUSED = -1000


@pytest.fixture(scope="module")
def ring():
    return jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:N])


def by_gid(fig):
    found = {}
    for ax in fig.axes:
        for artist in [*ax.patches, *ax.texts, *ax.lines]:
            if artist.get_gid():
                found.setdefault(artist.get_gid(), []).append(artist)
    return found


def drawn(fig, side, devices):
    """The values drawn on each device's side ('before' or 'after'), None for an empty slot."""
    artists = by_gid(fig)
    rows = []
    for d in devices:
        slots = sorted(int(g.rsplit("-", 1)[1]) for g in artists if g.startswith(f"{side}-{d}-"))
        rows.append([int(artists[f"value-{side}-{d}-{j}"][0].get_text())
                     if f"value-{side}-{d}-{j}" in artists else None for j in slots])
    return rows


def arrows(fig):
    return {a.get_gid(): a for ax in fig.axes for a in ax.texts
            if (a.get_gid() or "").startswith("arrow-")}


def path(fig, gid):
    """Every point an arrow passes through, from where it starts to the tip of its head."""
    artists = by_gid(fig)
    (head,) = artists[gid]
    route = artists.get(gid.replace("arrow-", "route-", 1))
    points = [tuple(p) for p in route[0].get_xydata()] if route else [tuple(head.xyann)]
    return [*points, tuple(head.xy)]


def cells(fig):
    """gid -> (x0, y0, x1, y1) of every before and after cell."""
    return {gid: (p.get_x(), p.get_y(), p.get_x() + p.get_width(), p.get_y() + p.get_height())
            for gid, (p, *_) in by_gid(fig).items()
            if gid.startswith(("before-", "after-")) and isinstance(p, Rectangle)}


def holding(boxes, point, inside=False):
    """The cells that contain ``point`` (on their edge too, unless ``inside``)."""
    x, y = point
    margin = 1e-6 if inside else -1e-9
    return {gid for gid, (x0, y0, x1, y1) in boxes.items()
            if x0 + margin <= x <= x1 - margin and y0 + margin <= y <= y1 - margin}


def crossed(boxes, points, allowed):
    """The cells other than ``allowed`` that a polyline through ``points`` passes inside."""
    found = set()
    for (x0, y0), (x1, y1) in zip(points, points[1:], strict=False):
        for t in np.linspace(0, 1, 60):
            found |= holding(boxes, (x0 + t * (x1 - x0), y0 + t * (y1 - y0)), inside=True)
    return found - set(allowed)


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
    assert drawn(fig, "after", range(N)) == [[0, 10, None, None]] * N
    assert sorted(arrows(fig)) == ["arrow-1-0", "arrow-1-2", "arrow-1-3"]
    empty = by_gid(fig)["after-0-3"][0]
    assert empty.get_facecolor() == to_rgba("white") and empty.get_linestyle() == "--"


def test_a_psum_step_holds_the_partial_sum():
    """At step 2 of psum, does every device hold the sum of devices 0 to 2 only?"""
    fig = collective_figure("psum", N, step=2)
    assert drawn(fig, "after", range(N)) == [[30 + 3 * j for j in range(N)]] * N
    parts = sorted(g for g in by_gid(fig) if g.startswith("part-0-0-"))
    assert parts == ["part-0-0-0", "part-0-0-1", "part-0-0-2"]


def test_a_scatter_step_is_one_receiving_device():
    """At step 2 of scatter, have devices 0 to 2 received their block from the root, device 3
    not yet, and is the only arrow the one to device 2?"""
    fig = collective_figure("scatter", N, step=2)
    assert drawn(fig, "after", range(N)) == [[0], [1], [2], [None]]
    assert sorted(arrows(fig)) == ["arrow-0-2"]
    assert drawn(collective_figure("scatter", N, step=0), "after", range(N)) == [
        [0], [None], [None], [None]]


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


# --- a learner's shard_map ---------------------------------------------------------------------
def test_draw_shard_map_colours_moved_values_by_their_source(ring):
    """For a learner's ring shift, does each device receive its left neighbour's values, in
    that neighbour's colour, with one arrow per neighbour pair from block to block?"""
    shift = BODIES["ppermute"]
    fig = draw_shard_map(shift, (N * 2,), ring, P("i"), P("i"))
    assert drawn(fig, "after", range(N)) == [[6, 7], [0, 1], [2, 3], [4, 5]]
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-1-0"][0].get_facecolor() == to_rgba(device_colour(0))
    boxes = cells(fig)
    for i in range(N):
        points = path(fig, f"arrow-{i}-{(i + 1) % N}")
        assert holding(boxes, points[0]) == {f"before-{i}-1"}
        assert holding(boxes, points[-1]) == {f"after-{(i + 1) % N}-0"}
    assert fig.axes[0].get_title().startswith("shard_map of a lambda:")
    assert "in_specs P('i'), out_specs P('i')" in fig.axes[0].get_title()


def test_draw_shard_map_finds_moves_whatever_the_values(ring):
    """On data that is zero everywhere, where equal values say nothing, does a ring shift still
    draw its arrows and colour each value by the device it came from?"""
    fig = draw_shard_map(BODIES["ppermute"], np.zeros(N * 2, np.float32), ring, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-2-1"][0].get_facecolor() == to_rgba(device_colour(1))


def test_draw_shard_map_names_cells_and_arrows_by_device_id():
    """On a mesh of devices 4 to 7, are cells, colours and arrows those of the real ids?"""
    mesh = jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[4:])
    fig = draw_shard_map(BODIES["ppermute"], (N,), mesh, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{4 + i}-{4 + (i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-5-0"][0].get_facecolor() == to_rgba(device_colour(4))
    assert by_gid(fig)["value-after-5-0"][0].get_text() == "0"
    assert by_gid(fig)["arrow-4-5"][0].arrow_patch.get_edgecolor() == to_rgba(device_colour(4))


def test_a_psum_is_drawn_as_a_sum_even_when_its_results_equal_inputs_elsewhere():
    """On 2 devices, psum of arange(8) gives [4, 6, 8, 10]: 4 and 6 are also device 1's inputs.
    Is it drawn as a sum (through +, banded with both devices), with no arrow from 1 to 0?"""
    two = jax.make_mesh((2,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:2])
    fig = draw_shard_map(lambda b: jax.lax.psum(b, "i"), (8,), two, P("i"), P())
    assert drawn(fig, "after", range(2)) == [[4, 6, 8, 10]] * 2
    assert sorted(arrows(fig)) == ["arrow-0-sum", "arrow-1-sum", "arrow-sum-0", "arrow-sum-1"]
    parts = by_gid(fig)
    assert parts["after-0-0"][0].get_facecolor() == to_rgba(SUM_COLOUR)
    assert sorted(g for g in parts if g.startswith("part-0-0-")) == ["part-0-0-0", "part-0-0-1"]


def test_a_constant_that_equals_an_input_value_did_not_move(ring):
    """Is a constant 4, which device 2 also holds as input, drawn as computed (plain grey, no
    band) with no arrow from device 2?"""
    fig = draw_shard_map(lambda b: b * 0 + 4, (N * 2,), ring, P("i"), P("i"))
    assert arrows(fig) == {}
    parts = by_gid(fig)
    assert parts["after-0-0"][0].get_facecolor() == to_rgba(SUM_COLOUR)
    assert not [g for g in parts if g.startswith("part-")]


def test_draw_shard_map_takes_several_inputs(ring):
    """With two inputs, are both blocks drawn on every device under their parameter names,
    the results those of JAX, and only the second input's moves drawn?"""
    def shift_second(a, b):
        return a * 0 + jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)])

    a, b = np.arange(N * 2), 100 + np.arange(N * 2)
    fig = draw_shard_map(shift_second, (a, b), ring, (P("i"), P("i")), P("i"))
    assert drawn(fig, "before", range(N)) == [
        [2 * d, 2 * d + 1, 100 + 2 * d, 101 + 2 * d] for d in range(N)]
    assert drawn(fig, "after", range(N)) == np.roll(b, 2).reshape(N, 2).tolist()
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    names = {t.get_gid(): t.get_text() for t in fig.axes[0].texts if t.get_gid()}
    assert (names["input-0"], names["input-1"]) == ("a", "b")
    assert "in_specs (P('i'), P('i'))" in fig.axes[0].get_title()
    with pytest.raises(LayoutError, match="one per spec"):
        draw_shard_map(shift_second, a, ring, (P("i"), P("i")), P("i"))


def test_a_sum_of_two_inputs_from_two_devices_goes_through_the_adding_node(ring):
    """Is a + (b shifted from the left neighbour) banded with both devices and drawn through
    +, since each value combines the data of two devices?"""
    def add_shifted(a, b):
        return a + jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)])

    fig = draw_shard_map(add_shifted, (np.arange(N), np.arange(N)), ring, (P("i"), P("i")),
                         P("i"))
    assert drawn(fig, "after", range(N)) == [[d + (d - 1) % N] for d in range(N)]
    assert "arrow-sum-1" in arrows(fig) and "arrow-0-1" not in arrows(fig)
    assert sorted(g for g in by_gid(fig) if g.startswith("part-1-0-")) == [
        "part-1-0-0", "part-1-0-1"]


def test_a_function_jax_cannot_differentiate_is_drawn_without_arrows_and_says_so(ring):
    """Is a body that only works on integers drawn with its values, no arrows, and a title
    that says what moved is not drawn?"""
    def odd_after_shift(b):
        return jnp.bitwise_and(jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)]), 1)

    fig = draw_shard_map(odd_after_shift, (N * 2,), ring, P("i"), P("i"))
    assert drawn(fig, "after", range(N)) == [[0, 1]] * N
    assert arrows(fig) == {}
    assert "what moved is not drawn" in fig.axes[0].get_title()


def test_draw_shard_map_refuses_big_blocks(ring):
    """Is a block too large to draw refused with a message rather than an unreadable picture?"""
    with pytest.raises(LayoutError, match="draws small data"):
        draw_shard_map(lambda b: b, (N * 100,), ring, P("i"), P("i"))
