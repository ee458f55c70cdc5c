"""A learner's shard_map drawn (grader/lessons/shard_map_drawing.py): values moved are coloured
by their source and drawn with arrows found by differentiating the body, not guessed from
equal values.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from figures import N, arrows, by_gid, cells, drawn, holding, path
from jax.sharding import AxisType
from jax.sharding import PartitionSpec as P
from matplotlib.colors import to_rgba

from grader.lessons.collective_drawing import SUM_COLOUR
from grader.lessons.drawing import LayoutError
from grader.lessons.shard_map_drawing import draw_shard_map
from grader.palette import device_colour


def shift_right(b):
    """A ring shift: device k sends its block to device k + 1."""
    return jax.lax.ppermute(b, "i", [(k, (k + 1) % N) for k in range(N)])


def test_draw_shard_map_colours_moved_values_by_their_source(ring):
    """For a learner's ring shift, does each device receive its left neighbour's values, in
    that neighbour's colour, with one arrow per neighbour pair from block to block?"""
    shift = shift_right
    fig = draw_shard_map(shift, (N * 2,), ring, P("i"), P("i"))
    assert drawn(fig, "after", range(N)) == [[6, 7], [0, 1], [2, 3], [4, 5]]
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-1-0"][0].get_facecolor() == to_rgba(device_colour(0))
    boxes = cells(fig)
    for i in range(N):
        points = path(fig, f"arrow-{i}-{(i + 1) % N}")
        assert holding(boxes, points[0]) == {f"before-{i}-1"}
        assert holding(boxes, points[-1]) == {f"after-{(i + 1) % N}-0"}
    assert fig.axes[0].get_title().startswith("shard_map of shift_right:")
    assert "in_specs P('i'), out_specs P('i')" in fig.axes[0].get_title()


def test_draw_shard_map_finds_moves_whatever_the_values(ring):
    """On data that is zero everywhere, where equal values say nothing, does a ring shift still
    draw its arrows and colour each value by the device it came from?"""
    fig = draw_shard_map(shift_right, np.zeros(N * 2, np.float32), ring, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-2-1"][0].get_facecolor() == to_rgba(device_colour(1))


def test_draw_shard_map_names_cells_and_arrows_by_device_id():
    """On a mesh of devices 4 to 7, are cells, colours and arrows those of the real ids?"""
    mesh = jax.make_mesh((N,), ("i",), axis_types=(AxisType.Auto,), devices=jax.devices()[4:])
    fig = draw_shard_map(shift_right, (N,), mesh, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{4 + i}-{4 + (i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-5-0"][0].get_facecolor() == to_rgba(device_colour(4))
    assert by_gid(fig)["value-after-5-0"][0].get_text() == "0"
    assert by_gid(fig)["arrow-4-5"][0].arrow_patch.get_edgecolor() == to_rgba(device_colour(4))


def test_draw_shard_map_finds_the_moves_on_an_explicit_mesh():
    """On a mesh made by jax.make_mesh with its default Explicit axes, are the moves of a ring
    shift found and drawn (not left out with 'could not differentiate')?"""
    mesh = jax.make_mesh((N,), ("i",), devices=jax.devices()[:N])
    assert mesh.axis_types == (AxisType.Explicit,)
    fig = draw_shard_map(shift_right, (N,), mesh, P("i"), P("i"))
    assert sorted(arrows(fig)) == sorted(f"arrow-{i}-{(i + 1) % N}" for i in range(N))
    assert by_gid(fig)["after-1-0"][0].get_facecolor() == to_rgba(device_colour(0))
    assert "not drawn" not in fig.axes[0].get_title()


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
