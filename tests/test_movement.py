"""Collective drawings: the values drawn are what JAX computes, the arrows are what moved.

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

from grader.draw import LayoutError
from grader.movement import KINDS, SUM_COLOUR, collective_figure, draw_shard_map, steps
from grader.palette import device_colour

N = 4


@pytest.fixture(scope="module")
def ring():
    return jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[:N])


def by_gid(fig):
    found = {}
    for ax in fig.axes:
        for artist in [*ax.patches, *ax.texts]:
            if artist.get_gid():
                found.setdefault(artist.get_gid(), []).append(artist)
    return found


def drawn(fig, side, n):
    """The values drawn on each device's side ('before' or 'after'), None for an empty slot."""
    artists = by_gid(fig)
    rows = []
    for d in range(n):
        slots = sorted(int(g.rsplit("-", 1)[1]) for g in artists if g.startswith(f"{side}-{d}-"))
        rows.append([int(artists[f"value-{side}-{d}-{j}"][0].get_text())
                     if f"value-{side}-{d}-{j}" in artists else None for j in slots])
    return rows


def arrows(fig):
    return {a.get_gid(): a for ax in fig.axes for a in ax.texts
            if (a.get_gid() or "").startswith("arrow-")}


BODIES = {
    "psum": lambda b: jax.lax.psum(b, "i"),
    "all_gather": lambda b: jax.lax.all_gather(b, "i", tiled=True),
    "psum_scatter": lambda b: jax.lax.psum_scatter(b, "i", tiled=True),
    "ppermute": lambda b: jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)]),
    "all_to_all": lambda b: jax.lax.all_to_all(b, "i", 0, 0, tiled=True),
}


@pytest.mark.parametrize("kind", KINDS)
def test_the_drawn_values_are_what_jax_computes(kind, ring):
    """Does each device's 'after' hold exactly what the JAX collective leaves on it, starting
    from the 'before' values?"""
    fig = collective_figure(kind, N)
    before = np.array(drawn(fig, "before", N), dtype=np.int32)
    run = jax.jit(jax.shard_map(BODIES[kind], mesh=ring, in_specs=P("i"), out_specs=P("i")))
    result = np.asarray(run(jnp.asarray(before.ravel()))).reshape(N, -1)
    assert drawn(fig, "after", N) == result.tolist()


def test_ppermute_draws_one_arrow_per_device_to_the_next():
    """Does the ring shift have exactly n arrows, each from device i's row to device i+1's?"""
    fig = collective_figure("ppermute", N)
    found = arrows(fig)
    assert sorted(found) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    cells = by_gid(fig)
    for i in range(N):
        arrow = found[f"arrow-{i}-{(i + 1) % N}"]
        (x0, y0), (x1, y1) = arrow.xyann, arrow.xy
        source = cells[f"before-{i}-0"][0]
        target = cells[f"after-{(i + 1) % N}-0"][0]
        assert x0 >= source.get_x() + source.get_width() and x1 <= target.get_x()
        assert source.get_y() <= y0 <= source.get_y() + source.get_height()
        assert target.get_y() <= y1 <= target.get_y() + target.get_height()
        assert target.get_facecolor() == to_rgba(device_colour(i))


def test_psum_goes_through_one_adding_node():
    """Does psum draw n arrows into the + node and n out of it, with grey sums banded in every
    device's colour?"""
    fig = collective_figure("psum", N)
    assert sorted(arrows(fig)) == sorted(
        [f"arrow-{i}-sum" for i in range(N)] + [f"arrow-sum-{d}" for d in range(N)]
    )
    cells = by_gid(fig)
    assert cells["after-2-1"][0].get_facecolor() == to_rgba(SUM_COLOUR)
    assert [cells[f"part-2-1-{s}"][0].get_facecolor() for s in range(N)] == [
        to_rgba(device_colour(s)) for s in range(N)
    ]


@pytest.mark.parametrize(("kind", "moved"), [("all_gather", 12), ("psum_scatter", 12),
                                             ("all_to_all", 12)])
def test_every_block_that_changes_device_has_one_arrow(kind, moved):
    """Do all_gather, psum_scatter and all_to_all on 4 devices draw n(n-1) arrows, none from a
    device to itself?"""
    found = arrows(collective_figure(kind, N))
    assert len(found) == moved
    assert all(a.split("-")[1] != a.split("-")[2] for a in found)


def test_a_step_shows_what_has_arrived_so_far_and_who_is_sending():
    """At step 1 of all_gather, have slots 0 and 1 arrived everywhere, slots 2 and 3 not yet,
    and are the only arrows those of device 1?"""
    fig = collective_figure("all_gather", N, step=1)
    assert drawn(fig, "after", N) == [[0, 10, None, None]] * N
    assert sorted(arrows(fig)) == ["arrow-1-0", "arrow-1-2", "arrow-1-3"]
    empty = by_gid(fig)["after-0-3"][0]
    assert empty.get_facecolor() == to_rgba("white") and empty.get_linestyle() == "--"


def test_a_psum_step_holds_the_partial_sum():
    """At step 2 of psum, does every device hold the sum of devices 0 to 2 only?"""
    fig = collective_figure("psum", N, step=2)
    assert drawn(fig, "after", N) == [[30 + 3 * j for j in range(N)]] * N
    parts = sorted(g for g in by_gid(fig) if g.startswith("part-0-0-"))
    assert parts == ["part-0-0-0", "part-0-0-1", "part-0-0-2"]


def test_steps_and_bad_arguments():
    """Is there one step per device, and are an unknown kind, device count or step refused?"""
    assert [steps(kind, 8) for kind in KINDS] == [8] * len(KINDS)
    with pytest.raises(LayoutError, match="choose one of psum"):
        collective_figure("broadcast")
    with pytest.raises(LayoutError, match="steps 0 to 3"):
        collective_figure("psum", 4, step=4)
    with pytest.raises(LayoutError, match="1 to 16 devices"):
        steps("psum", 0)


def test_draw_shard_map_colours_moved_values_by_their_source(ring):
    """For a learner's ring shift, does each device receive its left neighbour's values, in
    that neighbour's colour, with one arrow per neighbour pair?"""
    shift = BODIES["ppermute"]
    fig = draw_shard_map(shift, (N * 2,), ring, P("i"), P("i"))
    assert drawn(fig, "after", N) == [[6, 7], [0, 1], [2, 3], [4, 5]]
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-1-0"][0].get_facecolor() == to_rgba(device_colour(0))


def test_draw_shard_map_names_cells_and_arrows_by_device_id():
    """On a mesh of devices 4 to 7, are cells, colours and arrows those of the real ids?"""
    mesh = jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[4:])
    fig = draw_shard_map(BODIES["ppermute"], (N,), mesh, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{4 + i}-{4 + (i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-5-0"][0].get_facecolor() == to_rgba(device_colour(4))
    assert by_gid(fig)["value-after-5-0"][0].get_text() == "0"


def test_draw_shard_map_shows_computed_values_as_sums_without_arrows(ring):
    """For a psum body, is every device's result grey (computed, not moved) and arrow-free?"""
    fig = draw_shard_map(BODIES["psum"], np.arange(N * 2), ring, (P("i"),), P())
    assert drawn(fig, "after", N) == [[12, 16]] * N
    assert arrows(fig) == {}
    assert by_gid(fig)["after-3-1"][0].get_facecolor() == to_rgba(SUM_COLOUR)


def test_draw_shard_map_refuses_big_blocks(ring):
    """Is a block too large to draw refused with a message rather than an unreadable picture?"""
    with pytest.raises(LayoutError, match="draws small data"):
        draw_shard_map(lambda b: b, (N * 100,), ring, P("i"), P("i"))
