"""Layout drawings: the blocks a spec gives, and the patches that show them.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from matplotlib.colors import to_rgba

from grader.draw import LayoutError, blocks, draw_layout, layout_figure
from grader.palette import device_colour

MESH = {"x": 4, "y": 2}


def patches(fig, prefix):
    """gid -> patches whose gid starts with prefix, over every axes of the figure."""
    found: dict[str, list] = {}
    for ax in fig.axes:
        for patch in ax.patches:
            if (patch.get_gid() or "").startswith(prefix):
                found.setdefault(patch.get_gid(), []).append(patch)
    return found


def extent(patch):
    return (patch.get_x(), patch.get_y(), patch.get_width(), patch.get_height())


def as_index(slices, shape):
    return tuple(tuple(s.indices(n)[:2]) for s, n in zip(slices, shape, strict=True))


@pytest.mark.parametrize(
    ("shape", "spec"),
    [
        ((8, 4), ("x", "y")),
        ((8, 4), (("x", "y"),)),
        ((8, 4), (("y", "x"), None)),
        ((8, 4), (None, "y")),
        ((8, 4), ()),
        ((2, 8, 4), ("y", "x")),
        ((16,), ("x",)),
    ],
)
def test_blocks_are_the_blocks_jax_places(shape, spec):
    """Does blocks() give every device the block JAX gives it for the same mesh and spec?"""
    mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    ids = np.asarray(mesh.device_ids).ravel()
    jax_index = {d.id: as_index(i, shape)
                 for d, i in NamedSharding(mesh, P(*spec)).devices_indices_map(shape).items()}
    found = blocks(shape, MESH, spec)
    assert [b.device for b in found] == list(range(8))
    for b in found:
        assert b.index == jax_index[int(ids[b.device])]
        assert b.mesh_coords == (b.device // 2, b.device % 2)


def test_block_shape_and_bytes_follow_the_dtype():
    """Are the block shape and bytes those of one device's share, for the dtype given?"""
    (first, *_) = blocks((8, 6), MESH, ("x", None), dtype="int8")
    assert first.shape == (2, 6) and first.nbytes == 12
    assert blocks((8, 6), MESH, ("x",), dtype="bfloat16")[0].nbytes == 24
    assert blocks((8, 6), MESH, ("x",))[0].nbytes == 48  # float32 by default


def test_replicated_blocks_share_an_index():
    """Do the devices along a mesh axis the spec leaves out hold the same block?"""
    found = blocks((8, 4), MESH, (None, "y"))
    by_index: dict = {}
    for b in found:
        by_index.setdefault(b.index, []).append(b.device)
    assert by_index == {((0, 8), (0, 2)): [0, 2, 4, 6], ((0, 8), (2, 4)): [1, 3, 5, 7]}


@pytest.mark.parametrize(
    ("shape", "spec", "message"),
    [
        ((8, 4), ("x", None, "y"), "the spec has 3 entries but the array has 2 dimensions"),
        ((8, 4), ("z",), "mesh has no axis 'z' (axes: 'x', 'y')"),
        ((6, 4), ("x",), "dimension 0 of size 6 does not split into 4 blocks over ('x',)"),
        ((8, 4), ("x", "x"), "axis 'x' is used twice"),
        ((8, 4), (("x", "y"), "y"), "axis 'y' is used twice"),
        ((8, 4), (3,), "spec entry 3 is not None, an axis name or a tuple of axis names"),
        ((8, -1), (), "the array shape should be a tuple of whole numbers"),
    ],
)
def test_invalid_layouts_say_what_is_wrong(shape, spec, message):
    """Does each kind of mistake raise a LayoutError whose message names it?"""
    with pytest.raises(LayoutError) as raised:
        blocks(shape, MESH, spec)
    assert str(raised.value).startswith(message)
    with pytest.raises(LayoutError):
        layout_figure(shape, MESH, spec)


def test_each_block_is_painted_in_its_devices_colour_where_it_lies():
    """Is device d's patch at its block's rows and columns, in device d's colour?"""
    fig = layout_figure((8, 4), MESH, ("x", "y"))
    found = patches(fig, "block-")
    for b in blocks((8, 4), MESH, ("x", "y")):
        (patch,) = found[f"block-{b.device}"]
        (r0, r1), (c0, c1) = b.index
        assert extent(patch) == (c0, r0, c1 - c0, r1 - r0)
        assert patch.get_facecolor() == to_rgba(device_colour(b.device))
    assert len(found["block-edge"]) == 8
    mesh_cells = patches(fig, "mesh-")
    assert sorted(mesh_cells) == [f"mesh-{d}" for d in range(8)]
    assert mesh_cells["mesh-3"][0].get_facecolor() == to_rgba(device_colour(3))
    assert (mesh_cells["mesh-3"][0].get_x(), mesh_cells["mesh-3"][0].get_y()) == (1, 1)


def test_a_replicated_block_is_striped_with_every_holder_and_labelled_with_them():
    """Is a block held by devices 0, 2, 4, 6 drawn as four stripes, one per holder, and
    labelled with all four ids?"""
    fig = layout_figure((8, 4), MESH, (None, "y"))
    found = patches(fig, "block-")
    stripes = [found[f"block-{d}"][0] for d in (0, 2, 4, 6)]
    assert [extent(s) for s in stripes] == [(k * 0.5, 0, 0.5, 8) for k in range(4)]
    assert [s.get_facecolor() for s in stripes] == [to_rgba(device_colour(d)) for d in (0, 2, 4, 6)]
    assert len(found["block-edge"]) == 2
    labels = sorted(t.get_text() for ax in fig.axes for t in ax.texts
                    if t.get_gid() == "block-label")
    assert labels == ["0,2,4,6", "1,3,5,7"]
    assert "4 copies of each (along 'x')" in fig.get_suptitle()
    assert "block per device: 8×2 = 64 bytes" in fig.get_suptitle()


def test_a_3d_array_gets_one_panel_per_block_of_its_leading_dimension():
    """Does a 3-D array split over 'x' on dimension 0 get 4 panels, each device in one?"""
    fig = layout_figure((8, 8, 4), MESH, ("x", None, "y"))
    panels = [ax for ax in fig.axes if ax.get_gid() == "array"]
    assert [ax.get_title() for ax in panels] == [f"[{a}:{a + 2}, :, :]" for a in (0, 2, 4, 6)]
    for k, ax in enumerate(panels):
        gids = sorted(p.get_gid() for p in ax.patches if p.get_gid().startswith("block-") and
                      p.get_gid() != "block-edge")
        assert gids == [f"block-{2 * k}", f"block-{2 * k + 1}"]


def test_a_1d_array_is_a_strip_cut_at_its_block_boundaries():
    """Is a 1-D array of 16 split 8 ways drawn as 8 patches of width 2 along one row?"""
    fig = layout_figure((16,), MESH, (("x", "y"),))
    found = patches(fig, "block-")
    assert [extent(found[f"block-{d}"][0]) for d in range(8)] == [
        (2 * d, 0, 2, 1) for d in range(8)
    ]


def test_too_many_panels_is_a_layout_error():
    """Is a layout that would need more than 16 panels refused with a message?"""
    with pytest.raises(LayoutError, match="one panel per block"):
        layout_figure((4, 8, 2, 2), {"a": 4, "b": 8}, ("a", "b"))


def test_draw_layout_draws_a_real_array_with_its_device_ids():
    """Does draw_layout of a placed array put each device's colour on the block JAX gave it?"""
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    x = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(mesh, P(None, "y")))
    fig = draw_layout(x)
    found = patches(fig, "block-")
    for shard in x.addressable_shards:
        (r0, r1), (c0, c1) = as_index(shard.index, x.shape)
        (patch,) = found[f"block-{shard.device.id}"]
        assert c0 <= patch.get_x() < c1 and (patch.get_y(), patch.get_height()) == (r0, r1 - r0)
        assert patch.get_facecolor() == to_rgba(device_colour(shard.device.id))
    assert "float32[8,4] with P(None, 'y')" in fig.get_suptitle()


def test_draw_layout_needs_a_named_sharding():
    """Is an array on a single device refused with a message that says how to place it?"""
    with pytest.raises(LayoutError, match="NamedSharding"):
        draw_layout(jax.numpy.zeros(4))


def test_a_drawing_shows_itself_as_a_png():
    """Does a drawing display as PNG in a notebook without pyplot?"""
    assert layout_figure((4,), {"x": 2}, ("x",))._repr_png_().startswith(b"\x89PNG")
