"""The explorers' models, and their widgets driven by setting the controls' values as JupyterLab
does when a learner moves them."""

from __future__ import annotations

import pytest

from grader.lessons import texts
from grader.lessons.collective_drawing import collective_figure, steps
from grader.lessons.drawing import LayoutError, blocks, layout_figure
from grader.lessons.explorer import (
    OMIT,
    LayoutState,
    StepperState,
    bubble_explorer,
    bubble_view,
    collective_stepper,
    figure_png,
    layout_explorer,
    layout_view,
    parse_shape,
    spec_choices,
    stepper_view,
)

MESH = {"x": 4, "y": 2}


def layout_error(shape, mesh, spec) -> str:
    """The message grader.lessons.drawing gives for a layout that does not exist."""
    with pytest.raises(LayoutError) as e:
        blocks(shape, mesh, spec)
    return str(e.value)


def shown_error(explorer) -> str:
    return explorer.message.value


# --- the layout explorer's model ------------------------------------------------------------
@pytest.mark.parametrize("text, shape", [
    ("8, 6", (8, 6)), ("(8, 6)", (8, 6)), ("8 6", (8, 6)), ("8x6", (8, 6)), ("16", (16,)),
    (" 4,2,6 ", (4, 2, 6)),
])
def test_shapes_are_read_as_a_learner_types_them(text, shape):
    """Are the usual ways of writing a shape understood?"""
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", "8, six", "8.5, 6", "1, 2, 3, 4", "0, 4", "-2, 4", "65"])
def test_shapes_that_are_not_one_to_three_sizes_are_refused_in_words(text):
    """Is a shape the explorer cannot draw refused with a message, not a traceback?"""
    with pytest.raises(ValueError, match="should be"):
        parse_shape(text)


def test_each_spec_entry_may_be_none_an_axis_or_an_ordered_pair():
    """Are all the entries a PartitionSpec can have on a 2-axis mesh offered?"""
    assert spec_choices(["x", "y"]) == [None, "x", "y", ("x", "y"), ("y", "x")]


def test_a_valid_choice_gives_the_blocks_of_grader_draw():
    """Does the model show exactly the blocks grader.lessons.drawing works out?"""
    view = layout_view(LayoutState((("x", 4), ("y", 2)), "8, 6", ("x", None, OMIT), "int8"))
    assert view.ok and view.error is None
    assert view.spec == ("x", None)
    assert list(view.blocks) == blocks((8, 6), MESH, ("x", None), dtype="int8")
    assert view.code == (
        "mesh = jax.make_mesh((4, 2), ('x', 'y'))\n"
        "x = jax.device_put(jnp.zeros((8, 6), jnp.int8), NamedSharding(mesh, P('x', None)))"
    )


@pytest.mark.parametrize("axes, shape, spec", [
    ((("x", 4), ("y", 2)), "8, 6", ("x", "y")),
    ((("x", 4), ("y", 2)), "8, 6, 2", (("y", "x"), None)),
    ((("data", 8),), "16", ("data",)),
    ((("a", 2), ("b", 2), ("c", 2)), "4, 2", ("c",)),
])
def test_the_code_shown_makes_the_layout_shown(axes, shape, spec):
    """Run the code the explorer shows: does JAX put the same block on every mesh position?"""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    view = layout_view(LayoutState(axes, shape, spec))
    made: dict = {"jax": jax, "jnp": jnp, "NamedSharding": NamedSharding, "P": P}
    exec(view.code, made)
    x, devices = made["x"], made["mesh"].devices
    placed = {d.id: idx for d, idx in x.sharding.devices_indices_map(x.shape).items()}
    for block in view.blocks:
        index = placed[devices[block.mesh_coords].id]
        assert tuple(s.indices(n)[:2] for s, n in zip(index, x.shape, strict=True)) == block.index


@pytest.mark.parametrize("state, message", [
    (LayoutState((("x", 4), ("x", 2)), "8, 6", ("x",)), texts.EXPLORER_AXIS_TWICE.format(name="x")),
    (LayoutState((("1x", 4),), "8", ("x",)), texts.EXPLORER_AXIS_NAME.format(i=0, name="1x")),
    (LayoutState((("x", 8), ("y", 4)), "8", ("x",)),
     texts.EXPLORER_TOO_MANY_DEVICES.format(n=32, max=16)),
    (LayoutState((("x", 4),), "8, 6", (OMIT, "x", OMIT)),
     texts.EXPLORER_SPEC_GAP.format(i=0, omit=OMIT)),
    (LayoutState((("x", 4),), "8, 6, 4, 2", ("x",)),
     texts.EXPLORER_SHAPE.format(max=3, text="8, 6, 4, 2")),
])
def test_a_choice_the_explorer_cannot_draw_is_explained(state, message):
    """Do a bad mesh, a spec with a gap and a bad shape each get their own message?"""
    view = layout_view(state)
    assert not view.ok and view.blocks == ()
    assert view.error == message


@pytest.mark.parametrize("spec", [("x", None, None), ("z",), ("x", ("y", "x"))])
def test_a_layout_that_does_not_exist_shows_the_layout_error(spec):
    """Too many entries, an unknown axis, an axis used twice: is grader.lessons.drawing's reason
    shown?"""
    view = layout_view(LayoutState((("x", 4), ("y", 2)), "8, 6", spec))
    assert view.error == layout_error((8, 6), MESH, spec)


# --- the layout explorer's widget -----------------------------------------------------------
def test_the_starting_choice_is_drawn_with_its_blocks():
    """Does a new explorer show the drawing of its starting layout and one row per device?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    assert explorer.view.ok and explorer.message.value == ""
    assert explorer.image.value == figure_png(layout_figure((8, 6), MESH, ("x", "y")))
    assert explorer.image.layout.display is None
    assert explorer.shards.value.count("<tr>") == 1 + 8
    assert "no copies" in explorer.shards.value
    assert "P(&#x27;x&#x27;, &#x27;y&#x27;)" in explorer.code.value
    assert [d.value for d in explorer.spec_entries] == ["'x'", "'y'", OMIT]


def test_a_spec_entry_is_offered_for_each_dimension_of_the_array_only():
    """Does a 2-D array get two dropdowns, named by the dimension they split, and a 3-D one
    (typed in) a third, which its spec then uses?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    shown = [d.description for d in explorer.spec_entries if d.layout.display != "none"]
    assert shown == ["dim 0", "dim 1"]
    explorer.spec_entries[2].value = "None"  # hidden: not part of a 2-D array's spec
    assert explorer.view.ok and explorer.view.spec == ("x", "y")
    explorer.shape.value = "8, 6, 2"
    assert [d.layout.display for d in explorer.spec_entries] == [None, None, None]
    assert explorer.view.spec == ("x", "y", None)
    explorer.shape.value = "8"
    assert explorer.view.spec == ("x",)


def test_choosing_none_for_a_dimension_redraws_with_copies():
    """Does changing a spec dropdown replace the drawing with that of the new layout?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    before = explorer.image.value
    explorer.spec_entries[1].value = "None"
    assert explorer.view.spec == ("x", None)
    assert explorer.image.value != before
    assert explorer.image.value == figure_png(layout_figure((8, 6), MESH, ("x", None)))
    assert "2 copies of each block" in explorer.shards.value


def test_an_uneven_split_hides_the_drawing_and_says_why():
    """Does a shape that does not divide show grader.lessons.drawing's message instead of a
    drawing, and does fixing it bring the drawing back?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    explorer.shape.value = "6, 6"
    why = layout_error((6, 6), MESH, ("x", "y"))
    assert not explorer.view.ok
    assert texts.EXPLORER_CANNOT.format(why=why).replace("'", "&#x27;") in shown_error(explorer)
    assert explorer.image.layout.display == "none" and explorer.shards.value == ""
    explorer.shape.value = "12, 6"
    assert explorer.view.ok and explorer.message.value == ""
    assert explorer.image.layout.display is None
    assert explorer.image.value == figure_png(layout_figure((12, 6), MESH, ("x", "y")))


def test_a_renamed_axis_leaves_the_spec_naming_the_old_one_until_it_is_chosen_again():
    """After renaming mesh axis 'y', does the explorer say the spec names a missing axis, and
    offer the new name?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    explorer.axis_names[1].value = "model"
    assert explorer.view.error == layout_error((8, 6), {"x": 4, "model": 2}, ("x", "y"))
    assert explorer.spec_entries[1].value == "'y'"
    assert "'model'" in explorer.spec_entries[1].options
    explorer.spec_entries[1].value = "'model'"
    assert explorer.view.ok and explorer.view.mesh == {"x": 4, "model": 2}


def test_a_third_mesh_axis_copies_the_blocks_along_it():
    """Does adding a mesh axis show its controls, offer it in the spec, and copy the blocks
    along it while the spec leaves it out?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    assert explorer.children[3].layout.display == "none"  # the row of axis 2
    explorer.n_axes.value = 3
    explorer.axis_sizes[2].value = 2
    assert explorer.children[3].layout.display is None
    assert explorer.view.mesh == {"x": 4, "y": 2, "z": 2}
    assert {"'z'", "('x', 'z')", "('z', 'y')"} <= set(explorer.spec_entries[0].options)
    assert "2 copies of each block" in explorer.shards.value
    explorer.axis_sizes[2].value = 4
    assert explorer.view.error == texts.EXPLORER_TOO_MANY_DEVICES.format(n=32, max=16)


def test_the_dtype_changes_the_bytes_each_device_holds():
    """Is the per-device size recomputed for a new dtype?"""
    explorer = layout_explorer((8, 6), MESH, ("x", "y"))
    assert {b.nbytes for b in explorer.view.blocks} == {4 * 2 * 3}
    explorer.dtype.value = "int8"
    assert {b.nbytes for b in explorer.view.blocks} == {2 * 3}
    assert explorer.image.value == figure_png(layout_figure((8, 6), MESH, ("x", "y"), dtype="int8"))


def test_a_partition_spec_and_a_one_axis_mesh_of_sixteen_are_accepted_as_a_start():
    """Can a lesson start the explorer from a real PartitionSpec on a 16-device mesh?"""
    from jax.sharding import PartitionSpec as P

    explorer = layout_explorer((32, 4), {"data": 16}, P("data"))
    assert explorer.n_axes.value == 1 and explorer.axis_sizes[0].value == 16
    assert explorer.view.ok and {b.shape for b in explorer.view.blocks} == {(2, 4)}
    assert [d.value for d in explorer.spec_entries] == ["'data'", OMIT, OMIT]


def test_the_explorer_refuses_a_starting_choice_it_has_no_controls_for():
    """Is a 4-axis mesh or a 4-entry spec refused when the explorer is made?"""
    with pytest.raises(ValueError, match="1 to 3 axes"):
        layout_explorer((8,), {"a": 1, "b": 1, "c": 1, "d": 1}, ())
    with pytest.raises(ValueError, match="up to 3 entries"):
        layout_explorer((8,), MESH, (None, None, None, None))


# --- the collective stepper -------------------------------------------------------------------
def test_the_stepper_starts_at_the_first_step_and_next_draws_the_following_one():
    """Does 'next' move one device on, with the drawing of grader.lessons.collective_drawing for
    that step?"""
    stepper = collective_stepper("psum", 4)
    assert stepper.view.step == 0 and stepper.back.disabled and not stepper.next.disabled
    assert stepper.image.value == figure_png(collective_figure("psum", 4, step=0))
    stepper.next.click()
    assert stepper.view.step == 1 and stepper.step.value == 2
    assert stepper.caption.value == f"<b>psum on 4 devices: step 2 of {steps('psum', 4)}</b>"
    assert stepper.image.value == figure_png(collective_figure("psum", 4, step=1))
    stepper.back.click()
    assert stepper.view.step == 0


def test_the_last_step_disables_next():
    """Can a learner step past the end? (They should not.)"""
    stepper = collective_stepper("ppermute", 2)
    for _ in range(5):
        stepper.next.click()
    assert stepper.view.step == steps("ppermute", 2) - 1
    assert stepper.next.disabled and not stepper.back.disabled


def test_another_collective_or_device_count_starts_again_at_step_one():
    """Does changing the collective or the device count reset the step and the slider's end?"""
    stepper = collective_stepper("psum", 4)
    stepper.next.click()
    stepper.kind.value = "all_to_all"
    assert stepper.view.step == 0
    assert stepper.image.value == figure_png(collective_figure("all_to_all", 4, step=0))
    stepper.n_devices.value = 8
    assert stepper.step.max == steps("all_to_all", 8)
    assert "all_to_all on 8 devices" in stepper.caption.value


def test_the_stepper_model_keeps_the_step_within_the_collective():
    """Is a step past either end shown as the nearest real step?"""
    assert stepper_view(StepperState("psum", 4, 99)).step == steps("psum", 4) - 1
    assert stepper_view(StepperState("psum", 4, -1)).step == 0
    with pytest.raises(ValueError, match="unknown collective"):
        stepper_view(StepperState("allreduce", 4, 0))


@pytest.mark.parametrize("kind", ["broadcast", "scatter", "reduce", "gather"])
def test_the_stepper_offers_the_collectives_of_message_passing_too(kind):
    """Can a learner choose broadcast, scatter, reduce and gather in the stepper, and does
    each step show grader.lessons.collective_drawing's drawing of that step?"""
    stepper = collective_stepper("psum", 4)
    assert kind in stepper.kind.options
    stepper.kind.value = kind
    assert stepper.view.step == 0 and stepper.step.max == steps(kind, 4)
    stepper.next.click()
    assert stepper.caption.value == f"<b>{kind} on 4 devices: step 2 of {steps(kind, 4)}</b>"
    assert stepper.image.value == figure_png(collective_figure(kind, 4, step=1))
    assert collective_stepper(kind, 8).image.value == figure_png(
        collective_figure(kind, 8, step=0))


def test_where_a_widget_cannot_be_drawn_its_text_says_what_it_is_and_to_run_the_cell():
    """A notebook opened before its cells run (or a page that renders notebooks) shows a
    widget's text: is it a sentence, not the widget's repr, in the code and in the lessons'
    stored outputs?"""
    import json

    from grader.course import ROOT

    for widget, text, lesson in (
            (layout_explorer((8, 6), MESH, ("x", None)), texts.EXPLORER_AS_TEXT, "01_sharding"),
            (collective_stepper("psum", 4), texts.STEPPER_AS_TEXT, "03_collectives"),
            (bubble_explorer(4, 4), texts.BUBBLE_AS_TEXT, "08_pipeline")):
        assert widget._repr_mimebundle_()["text/plain"] == text and "run this cell" in text
        cells = json.loads((ROOT / "notebooks" / f"{lesson}.ipynb").read_text())["cells"]
        stored = [output["data"]["text/plain"] for cell in cells
                  for output in cell.get("outputs", [])
                  if "application/vnd.jupyter.widget-view+json" in output.get("data", {})]
        assert stored and all("".join(shown) == text for shown in stored), stored


@pytest.mark.parametrize(("stages", "microbatches"), [(1, 1), (2, 3), (4, 4), (8, 32)])
def test_the_bubble_shown_is_the_idle_share_of_gpipes_schedule(stages, microbatches):
    """Is the bubble the explorer gives, read from the schedule it draws, (n - 1) / (m + n - 1)
    for n stages and m microbatches?"""
    view = bubble_view(stages, microbatches)
    assert view.bubble == pytest.approx((stages - 1) / (microbatches + stages - 1))
    assert f"{microbatches + stages - 1} ticks" in view.caption


def test_the_bubble_explorer_keeps_its_sizes_within_range():
    assert (bubble_view(0, 99).stages, bubble_view(0, 99).microbatches) == (1, 32)
    assert bubble_view(9, 1).stages == 8


def test_moving_the_microbatches_redraws_the_schedule_and_its_bubble():
    """Does the explorer start on the schedule it is given, and does moving the microbatches
    slider draw GPipe's schedule for the new size, with its bubble in the caption?"""
    from grader.lessons.schedule_drawing import gpipe_forward, schedule_figure

    explorer = bubble_explorer(4, 4)
    assert "4 stages x 4 microbatches: 7 ticks, bubble 42.9%" in explorer.caption.value
    explorer.microbatches.value = 16
    assert "4 stages x 16 microbatches: 19 ticks, bubble 15.8%" in explorer.caption.value
    assert explorer.image.value == figure_png(schedule_figure(
        {"GPipe forward, 16 microbatches": gpipe_forward(4, 16)}, 4))
