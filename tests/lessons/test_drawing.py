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

from grader.lessons.drawing import (
    LayoutError,
    blocks,
    draw_layout,
    layout_figure,
    processes_figure,
    processes_summary,
    strategies_figure,
    strategies_summary,
)
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
        ((6, 4), ("x",), "dimension 0 of size 6 does not split into 4 blocks over 'x'"),
        ((8, 6), (None, ("x", "y")),
         "dimension 1 of size 6 does not split into 8 blocks over 'x' and 'y'"),
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


def placed_strategies():
    """A weight and a bias under two strategies: copied on every device of a 1-D mesh, and
    split over 'model' of a 4 x 2 mesh (the weight's columns, the bias)."""
    flat = jax.make_mesh((8,), ("data",), axis_types=(AxisType.Auto,))
    grid = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)
    w, b = np.zeros((4, 8), np.float32), np.zeros(8, np.float32)
    return {
        "copied": {"w": jax.device_put(w, NamedSharding(flat, P())),
                   "b": jax.device_put(b, NamedSharding(flat, P()))},
        "split": {"w": jax.device_put(w, NamedSharding(grid, P(None, "model"))),
                  "b": jax.device_put(b, NamedSharding(grid, P("model")))},
    }


def test_each_strategy_is_a_row_of_its_arrays_blocks_painted_by_their_holders():
    """Is each strategy a row and each array a column, every block of it striped with the
    devices JAX put it on, titled with its spec and bytes per device, and each row labelled
    with the bytes one device holds of all its arrays; and does the summary say the same?"""
    strategies = placed_strategies()
    fig = strategies_figure(strategies)
    panels = {ax.get_gid(): ax for ax in fig.axes}
    assert sorted(panels) == ["strategy-0-0", "strategy-0-1", "strategy-1-0", "strategy-1-1"]
    for row, arrays in enumerate(strategies.values()):
        for col, x in enumerate(arrays.values()):
            ax = panels[f"strategy-{row}-{col}"]
            holders = {}
            for shard in x.addressable_shards:
                holders.setdefault(as_index(shard.index, x.shape)[-1], []).append(shard.device.id)
            drawn = {}
            for patch in ax.patches:
                if (patch.get_gid() or "").startswith("block-") and patch.get_gid() != "block-edge":
                    device = int(patch.get_gid().removeprefix("block-"))
                    assert patch.get_facecolor() == to_rgba(device_colour(device))
                    column = next(c for c in holders if c[0] <= patch.get_x() < c[1])
                    drawn.setdefault(column, []).append(device)
            assert {c: sorted(d) for c, d in drawn.items()} == {
                c: sorted(d) for c, d in holders.items()}
    titles = [panels[f"strategy-{r}-{c}"].get_title() for r in (0, 1) for c in (0, 1)]
    assert titles == ["w P(): 128 B each", "b P(): 32 B each",
                      "w P(None, 'model'): 64 B each", "b P('model'): 16 B each"]
    assert panels["strategy-1-0"].get_ylabel() == "split\n80 B per device"
    assert strategies_summary(strategies) == (
        "copied: w P() 4x8, b P() 8; 160 bytes per device\n"
        "split: w P(None, 'model') 4x4, b P('model') 4; 80 bytes per device")
    assert fig._repr_png_().startswith(b"\x89PNG")


def test_strategies_that_place_different_arrays_or_none_are_refused():
    strategies = placed_strategies()
    with pytest.raises(LayoutError, match="the same arrays"):
        strategies_figure({"copied": strategies["copied"],
                           "w only": {"w": strategies["split"]["w"]}})
    with pytest.raises(LayoutError, match="placed arrays by name"):
        strategies_figure({})
    cube = jax.device_put(np.zeros((2, 2, 8), np.float32),
                          NamedSharding(jax.make_mesh((8,), ("d",)), P(None, None, "d")))
    with pytest.raises(LayoutError, match="at most 2 dimensions"):
        strategies_figure({"cube": {"x": cube}})


# A mesh axis of 4 positions over 2 processes, as each reports its blocks: process 1's devices
# have ids of their own (2048, ...), and each device holds one row of the array.
SPANNING = [{"position": i, "device": i if i < 2 else 2046 + i, "process": i // 2,
             "rows": (i, i + 1)} for i in range(4)]


def test_a_mesh_over_processes_shows_each_position_its_device_and_its_process():
    """Is each mesh position a cell in its position's colour, labelled with its device and rows;
    is each process a band over exactly its positions; and does the summary say the same?"""
    fig = processes_figure(list(reversed(SPANNING)))  # in any order, as processes report
    found = {p.get_gid(): p for p in fig.axes[0].patches}
    texts_ = {t.get_gid(): t.get_text() for t in fig.axes[0].texts}
    for b in SPANNING:
        cell = found[f"position-{b['position']}"]
        assert (cell.get_x(), cell.get_width()) == (b["position"], 1)
        assert cell.get_facecolor() == to_rgba(device_colour(b["position"]))
        assert texts_[f"position-label-{b['position']}"] == (
            f"device\n{b['device']}\nrow {b['rows'][0]}")
    for process, (left, right) in enumerate(((0, 2), (2, 4))):
        band = found[f"process-{process}"]
        assert left < band.get_x() < band.get_x() + band.get_width() < right
        assert texts_[f"process-label-{process}"] == f"process {process}: 2 local devices"
    assert fig.axes[0].get_title(loc="left") == "one mesh, 'data': 4, over 2 processes"
    assert processes_summary(SPANNING) == (
        "mesh 'data': 4: process 0 positions [0, 1], devices [0, 1], rows [(0, 1), (1, 2)]; "
        "process 1 positions [2, 3], devices [2048, 2049], rows [(2, 3), (3, 4)]")


def test_a_mesh_over_processes_needs_every_position_once():
    with pytest.raises(LayoutError, match="one block per position"):
        processes_figure(SPANNING[:1] + SPANNING[2:])


def test_a_drawing_shows_itself_as_a_png():
    """Does a drawing display as PNG in a notebook without pyplot?"""
    assert layout_figure((4,), {"x": 2}, ("x",))._repr_png_().startswith(b"\x89PNG")


def test_a_drawings_png_keeps_every_device_colour_in_a_third_of_the_bytes():
    """Is a drawing's PNG an image of at most 256 colours in which each of the sixteen devices
    keeps its exact colour, and at most half the size of the same figure in full colour?"""
    import io

    from PIL import Image

    from grader.palette import DEVICE_COLOURS

    fig = layout_figure((16, 8), {"x": 4, "y": 4}, ("x", "y"))
    png = fig._repr_png_()
    image = Image.open(io.BytesIO(png))
    assert image.mode == "P" and len(image.getcolors(256) or []) <= 256
    shown = {rgb for _, rgb in image.convert("RGB").getcolors(256)}
    assert {tuple(int(h[i:i + 2], 16) for i in (1, 3, 5)) for h in DEVICE_COLOURS} <= shown
    full = io.BytesIO()
    fig.savefig(full, format="png", dpi=100, bbox_inches="tight")
    assert len(png) <= len(full.getvalue()) / 2


# --- draw_layout on the arrays JAX places -----------------------------------------------------
def panel_of(fig, lead_index):
    """The array panel that shows the block of the leading dimensions ``lead_index``."""
    panels = [ax for ax in fig.axes if ax.get_gid() == "array"]
    if not lead_index:
        (panel,) = panels
        return panel
    title = "[" + ", ".join([f"{a}:{b}" for a, b in lead_index] + [":", ":"]) + "]"
    (panel,) = [ax for ax in panels if ax.get_title() == title]
    return panel


def assert_every_device_is_drawn_on_the_block_jax_gives_it(x):
    """Each device's patch lies on the rows and columns of its shard, in the panel of its
    shard's leading dimensions, in the device's colour; and the device sits in the mesh panel
    at its position in the mesh."""
    fig = draw_layout(x)
    lead = max(x.ndim - 2, 0)
    for shard in x.addressable_shards:
        device = shard.device.id
        index = as_index(shard.index, x.shape)
        rows = index[-2] if x.ndim >= 2 else (0, 1)
        c0, c1 = index[-1]
        panel = panel_of(fig, index[:lead])
        (patch,) = [p for p in panel.patches if p.get_gid() == f"block-{device}"]
        assert c0 <= patch.get_x() and patch.get_x() + patch.get_width() <= c1 + 1e-9
        assert (patch.get_y(), patch.get_y() + patch.get_height()) == rows
        assert patch.get_facecolor() == to_rgba(device_colour(device))
    mesh = x.sharding.mesh
    grid = np.asarray(mesh.device_ids).reshape(-1, mesh.devices.shape[-1])
    (mesh_panel,) = [ax for ax in fig.axes if ax.get_gid() == "mesh"]
    cells = {p.get_gid(): p for p in mesh_panel.patches}
    for (r, c), device in np.ndenumerate(grid):
        assert (cells[f"mesh-{device}"].get_x(), cells[f"mesh-{device}"].get_y()) == (c, r)
    return fig


@pytest.fixture(scope="module")
def shuffled():
    """A 4 x 2 mesh whose devices are not in id order."""
    order = [3, 6, 0, 5, 1, 7, 2, 4]
    return jax.sharding.Mesh(np.array(jax.devices())[order].reshape(4, 2), ("x", "y"),
                             axis_types=(AxisType.Auto,) * 2)


@pytest.mark.parametrize(("shape", "spec"), [
    ((4, 8, 6), ("x", None, "y")),  # 3-D: a panel per block of dimension 0
    ((2, 8, 4), ("y", "x")),  # 3-D, the last dimension whole
    ((4, 8, 6), (None, ("x", "y"))),  # 3-D, dimension 0 whole: one panel
    ((16, 4), (("x", "y"),)),  # a tuple of axes, 'x' major
    ((16, 4), (("y", "x"),)),  # a tuple of axes, 'y' major
    ((8, 6), (None, "y")),  # copies along 'x'
    ((8, 6), ()),  # copies everywhere
    ((16,), (("x", "y"),)),  # 1-D
])
@pytest.mark.parametrize("mesh_name", ["ordered", "shuffled"])
def test_draw_layout_paints_each_device_on_the_block_jax_gives_it(shape, spec, mesh_name,
                                                                  shuffled):
    """For 3-D arrays, tuple-of-axes specs and replicated axes, on a mesh in id order and on
    a mesh whose devices are shuffled, is every device's colour on the block JAX gives it?"""
    mesh = shuffled if mesh_name == "shuffled" else jax.make_mesh(
        (4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    x = jax.device_put(np.zeros(shape, np.float32), NamedSharding(mesh, P(*spec)))
    assert_every_device_is_drawn_on_the_block_jax_gives_it(x)


def test_a_shuffled_mesh_labels_each_replicated_block_with_its_real_holders(shuffled):
    """With copies along 'x' on a shuffled mesh, is each column block labelled with the ids
    of the devices that really hold it, in stripes of their colours?"""
    x = jax.device_put(np.zeros((8, 4), np.float32), NamedSharding(shuffled, P(None, "y")))
    fig = assert_every_device_is_drawn_on_the_block_jax_gives_it(x)
    holders: dict = {}
    for shard in x.addressable_shards:
        holders.setdefault(as_index(shard.index, x.shape), []).append(shard.device.id)
    labels = sorted(t.get_text() for ax in fig.axes for t in ax.texts
                    if t.get_gid() == "block-label")
    assert labels == sorted(",".join(map(str, sorted(ids))) for ids in holders.values())
    assert labels == ["0,1,2,3", "4,5,6,7"]  # column y=0 holds 3, 0, 1, 2


# --- the palette ------------------------------------------------------------------------------
def lab(colour):
    """CIE L*a*b* (D65) of a matplotlib colour, or of linear RGB given as a tuple of floats."""
    if isinstance(colour, str):
        rgb = to_rgba(colour)[:3]
        colour = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ np.asarray(colour)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def ciede2000(lab1, lab2):
    """The CIEDE2000 colour difference (Sharma, Wu and Dalal's formulation)."""
    (l1, a1, b1), (l2, a2, b2) = lab1, lab2
    c_mean = (np.hypot(a1, b1) + np.hypot(a2, b2)) / 2
    g = 0.5 * (1 - np.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    a1, a2 = (1 + g) * a1, (1 + g) * a2
    c1, c2 = np.hypot(a1, b1), np.hypot(a2, b2)
    h1, h2 = np.degrees(np.arctan2(b1, a1)) % 360, np.degrees(np.arctan2(b2, a2)) % 360
    dh = 0.0 if c1 * c2 == 0 else (h2 - h1 + 180) % 360 - 180
    h_mean = (h1 + h2) / 2 if c1 * c2 == 0 or abs(h1 - h2) <= 180 else (h1 + h2 + 360) / 2 % 360
    big_dh = 2 * np.sqrt(c1 * c2) * np.sin(np.radians(dh / 2))
    l_mean, c_mean = (l1 + l2) / 2, (c1 + c2) / 2
    t = (1 - 0.17 * np.cos(np.radians(h_mean - 30)) + 0.24 * np.cos(np.radians(2 * h_mean))
         + 0.32 * np.cos(np.radians(3 * h_mean + 6)) - 0.20 * np.cos(np.radians(4 * h_mean - 63)))
    s_l = 1 + 0.015 * (l_mean - 50) ** 2 / np.sqrt(20 + (l_mean - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_mean, 1 + 0.015 * c_mean * t
    r_t = (-np.sin(np.radians(60 * np.exp(-(((h_mean - 275) / 25) ** 2))))
           * 2 * np.sqrt(c_mean**7 / (c_mean**7 + 25**7)))
    terms = ((l2 - l1) / s_l, (c2 - c1) / s_c, big_dh / s_h)
    return float(np.sqrt(terms[0] ** 2 + terms[1] ** 2 + terms[2] ** 2
                         + r_t * terms[1] * terms[2]))


def test_ciede2000_agrees_with_the_published_test_data():
    """Does the test's own colour difference give Sharma, Wu and Dalal's published values?"""
    assert round(ciede2000((50, 2.6772, -79.7751), (50, 0, -82.7485)), 4) == 2.0425
    assert round(ciede2000((50, 2.5, 0), (73, 25, -18)), 4) == 27.1492
    assert round(ciede2000((2.0776, 0.0795, -1.135), (0.9033, -0.0636, -0.5514)), 4) == 0.9082


def test_sixteen_devices_have_sixteen_clearly_different_colours():
    """Are the colours of devices 0 to 15 pairwise at least 15 apart in CIEDE2000 (about
    'clearly different at a glance'), none of them the grey of a sum or an empty cell?"""
    colours = [device_colour(d) for d in range(16)]
    for i in range(16):
        for j in range(i + 1, 16):
            difference = ciede2000(lab(colours[i]), lab(colours[j]))
            assert difference >= 15, (i, j, colours[i], colours[j], difference)
        assert ciede2000(lab(colours[i]), lab("#e4e4e4")) >= 12
    assert device_colour(16) == device_colour(0)


#: Machado, Oliveira and Fernandes (2009), severity 1: linear RGB as seen with protanopia and
#: deuteranopia.
COLOUR_BLIND = {
    "protanopia": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}


@pytest.mark.parametrize("vision", COLOUR_BLIND)
def test_the_first_eight_devices_stay_apart_for_red_green_colour_blindness(vision):
    """With protanopia or deuteranopia simulated, are devices 0 to 7 (the course's usual 8)
    still at least 10 apart in CIEDE2000?"""
    def seen(colour):
        rgb = to_rgba(colour)[:3]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
        return lab(tuple(np.clip(COLOUR_BLIND[vision] @ np.array(linear), 0, 1)))

    for i in range(8):
        for j in range(i + 1, 8):
            assert ciede2000(seen(device_colour(i)), seen(device_colour(j))) >= 10, (i, j)
