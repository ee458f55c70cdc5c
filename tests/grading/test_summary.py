"""The summary of a batch: the failure rates behind the figure, the table, and the PNG."""

from __future__ import annotations

import io
import re

import pytest
from matplotlib.colors import to_rgba
from PIL import Image

from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import summary
from grader.grading.summary import Tally

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def exercise(name: str, status: str, points: float = 0, max_points: float = 4) -> ExerciseResult:
    """One exercise worth ``max_points``, in one test with this status and points."""
    return ExerciseResult(name, [TestResult("t", points, max_points, status)])


def student(name: str, **outcomes: tuple[str, float]) -> StudentResult:
    return StudentResult(name, {ex: exercise(ex, status, points)
                                for ex, (status, points) in outcomes.items()})


PASSED = ("passed", 4)
# Four students, five exercises in course order: what each of them got.
CLASS = [
    student("ann", halo_difference=PASSED, distributed_dot=PASSED, nan_mean_var=("not found", 0),
            fixed_pmap_port=PASSED, pmean_update_step=("crashed", 0)),
    student("bob", halo_difference=("partial", 2), distributed_dot=PASSED,
            nan_mean_var=("not found", 0), fixed_pmap_port=PASSED,
            pmean_update_step=("not found", 0)),
    student("cid", halo_difference=("failed", 0), distributed_dot=("timeout", 0),
            nan_mean_var=("not found", 0), fixed_pmap_port=PASSED,
            pmean_update_step=("not found", 0)),
    student("dee", halo_difference=("not found", 0), distributed_dot=("not attempted", 0),
            nan_mean_var=("not found", 0), fixed_pmap_port=PASSED,
            pmean_update_step=("not attempted", 0)),
]


def test_failure_rates_count_only_students_who_handed_the_exercise_in():
    """Are passed, partly, failed and not handed in counted per exercise, the rate taken over
    those who handed it in, the most failed first, and an exercise nobody handed in left out?"""
    assert summary.tallies(CLASS) == [
        Tally("pmean_update_step", passed=0, partial=0, failed=1, absent=3),
        Tally("halo_difference", passed=1, partial=1, failed=1, absent=1),
        Tally("distributed_dot", passed=2, partial=0, failed=1, absent=1),
        Tally("fixed_pmap_port", passed=4, partial=0, failed=0, absent=0),
    ]
    rates = [t.failure_rate for t in summary.tallies(CLASS)]
    assert rates == [1.0, 2 / 3, 1 / 3, 0.0]


def test_equal_rates_put_more_failures_first_then_course_order():
    """With equal failure rates, does the exercise more students failed come first, and with
    equal counts too, the one that comes first in the course?"""
    two = [student("a", halo_difference=("failed", 0), distributed_dot=("failed", 0),
                   nan_mean_var=("failed", 0)),
           student("b", halo_difference=("not found", 0), distributed_dot=("failed", 0),
                   nan_mean_var=("not found", 0))]
    assert [t.exercise for t in summary.tallies(two)] == [
        "distributed_dot", "halo_difference", "nan_mean_var"]


def test_most_failed_leaves_out_exercises_nobody_failed_and_stops_at_the_limit():
    """Does the list of the most failed exercises hold only exercises someone failed, at most
    ``shown`` of them?"""
    assert [t.exercise for t in summary.most_failed(CLASS)] == [
        "pmean_update_step", "halo_difference", "distributed_dot"]
    assert [t.exercise for t in summary.most_failed(CLASS, shown=1)] == ["pmean_update_step"]


def test_the_markdown_table_gives_every_count():
    """Does summary.md state the spread of the totals and one row per exercise handed in?"""
    text = summary.markdown(CLASS, figure="summary.png")
    assert ("4 student(s), total points out of 20: mean 7.5, median 7, lowest 4, highest 12; "
            "0 with full marks") in text
    assert "![Score distribution and the exercises most students failed](summary.png)" in text
    exercises = text.split("## Tests")[0]
    rows = [line for line in exercises.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `pmean_update_step` | 1 | 0 | 0 | 3 | 100% |",
        "| `halo_difference` | 1 | 1 | 1 | 1 | 67% |",
        "| `distributed_dot` | 1 | 0 | 2 | 1 | 33% |",
        "| `fixed_pmap_port` | 0 | 0 | 4 | 0 | 0% |",
    ]


def test_each_test_failed_is_listed_with_the_hint_most_of_its_failures_got():
    """Per test over the class: who failed it (of those who handed the exercise in), who
    passed it, and the commonest hint, most failed first; not handed in counts nowhere."""
    def dot(name, values, hint, how):
        return StudentResult(name, {"distributed_dot": ExerciseResult("distributed_dot", [
            TestResult("values", 2 * (values == "passed"), 2, values, hint=hint),
            TestResult("how", 2 * (how == "passed"), 2, how, hidden=True)])})

    forgot, shape = "did you forget the psum | pmean?", "mind the shape"
    batch = [dot("ann", "failed", forgot, "failed"), dot("bob", "failed", forgot, "passed"),
             dot("cid", "failed", shape, "passed"), dot("dee", "passed", None, "passed"),
             StudentResult("eve", {"distributed_dot": exercise("distributed_dot",
                                                               "not attempted")})]
    assert summary.test_tallies(batch) == [
        summary.TestTally("distributed_dot", "values", False, 1, 3, forgot, 2),
        summary.TestTally("distributed_dot", "how", True, 3, 1, None, 0)]
    text = summary.markdown(batch, figure="summary.png")
    rows = [line for line in text.split("## Tests")[1].splitlines() if line.startswith("| `")]
    assert rows == [
        "| `distributed_dot` | `values` |  | 3 | 1 | did you forget the psum \\| pmean? (2 of 3) |",
        "| `distributed_dot` | `how` | yes | 1 | 3 |  |"]


def test_the_terminal_text_lists_the_most_failed():
    """Does the command line's summary name the most failed exercises with their counts?"""
    assert summary.text(CLASS).splitlines() == [
        "4 student(s), total points out of 20: mean 7.5, median 7, lowest 4, highest 12; "
        "0 with full marks",
        "most failed (of the students who handed the exercise in):",
        "  pmean_update_step: 1 of 1 (100%) without full marks (1 failed, 0 partly)",
        "  halo_difference: 2 of 3 (67%) without full marks (1 failed, 1 partly)",
        "  distributed_dot: 1 of 3 (33%) without full marks (1 failed, 0 partly)",
    ]


def test_a_class_that_passed_everything_and_an_empty_class_say_so():
    """Are a batch without failures and a batch without students described, not blank?"""
    perfect = [student("ann", halo_difference=PASSED)]
    assert summary.text(perfect).splitlines()[1] == (
        "every student who handed an exercise in got full marks for it")
    assert summary.text([]) == "no student in this batch handed anything in"
    assert "no exercise was handed in" in summary.markdown([], figure="summary.png")


def test_hand_ins_that_could_not_be_read_are_named_in_the_terminal_and_the_markdown():
    """Are students whose hand-in could not be read (a corrupt notebook, nothing to grade)
    named with the reason, where they looked like any zero before; and is a reason holding
    HTML shown as text (safe.markdown)?"""
    corrupt = StudentResult("cy", {"halo_difference": exercise("halo_difference", "not found")},
                            unreadable=["cy.ipynb: not a valid notebook (invalid JSON)"])
    empty = StudentResult("eve", {"halo_difference": exercise("halo_difference", "not found")},
                          unreadable=["a **bold** <b>claim</b>"])
    lines = summary.text([*CLASS, corrupt, empty]).splitlines()
    assert lines[1:4] == [
        "2 hand-in(s) the grader could not read, whole or in part (their zeros are no "
        "answers):",
        "  cy: cy.ipynb: not a valid notebook (invalid JSON)",
        "  eve: a **bold** <b>claim</b>"]
    page = summary.markdown([*CLASS, corrupt, empty], figure="summary.png")
    assert "- cy: cy.ipynb: not a valid notebook (invalid JSON)" in page
    assert "<b>" not in page and "- eve: a **bold** &lt;b>claim&lt;/b>" in page
    assert "could not read" not in summary.text(CLASS)
    again = StudentResult.from_json("cy", corrupt.to_json())
    assert again.unreadable == corrupt.unreadable  # kept in results.json and the store


@pytest.mark.parametrize("points", [[4, 4, 4, 4], [0, 0, 4, 4], [0, 1, 2, 3, 4]])
def test_the_full_marks_label_covers_no_bar(points):
    """Is the full-marks line's label drawn clear of every bar, the full marks' bar too (it was
    drawn over it)?"""
    results = [student(f"s{i}", halo_difference=("passed" if p == 4 else "partial", p))
               for i, p in enumerate(points)]
    drawn = summary.figure(results)
    drawn.canvas.draw()
    axes = drawn.axes[0]
    label = axes.get_legend().get_window_extent()
    assert axes.get_legend().get_texts()[0].get_text() == "full marks: 4"
    bars = [bar for bar in axes.patches if bar.get_height() > 0]
    assert bars and not any(label.overlaps(bar.get_window_extent()) for bar in bars)


def read_png(data: bytes) -> Image.Image:
    assert data.startswith(PNG_SIGNATURE)
    image = Image.open(io.BytesIO(data))
    image.verify()  # the whole file is a well-formed PNG
    return Image.open(io.BytesIO(data))


def test_the_figure_is_a_valid_png_that_grows_with_the_exercises():
    """Is summary.png a well-formed PNG, taller when more exercises are listed?"""
    few = read_png(summary.png([student("ann", halo_difference=PASSED)]))
    many = read_png(summary.png(CLASS))
    assert few.format == many.format == "PNG"
    assert few.width == many.width == 1200
    assert many.height >= few.height >= 400


def test_the_figure_of_an_empty_batch_is_still_a_png():
    """Does a batch with no student (an empty slice) still give a readable figure?"""
    assert read_png(summary.png([])).size == (1200, 400)


def shown_colour(result: ExerciseResult) -> str:
    """The colour the notebook's feedback gives an exercise (its left border and status)."""
    page = result._repr_html_()
    border = re.search(r"border-left:6px solid (#[0-9a-fA-F]{6})", page).group(1)
    status = re.search(r'<span style="color:(#[0-9a-fA-F]{6});font-weight:bold">', page).group(1)
    assert border == status
    return border


@pytest.mark.parametrize(("status", "points", "bar"), [
    ("passed", 4, "passed"), ("partial", 2, "partial"), ("failed", 0, "failed"),
    ("timeout", 0, "failed"), ("crashed", 2, "failed"),
])
def test_the_summary_draws_each_exercise_in_the_colour_its_feedback_shows(status, points, bar):
    """Is a student's exercise counted in the summary bar whose colour is the colour the
    notebook's feedback shows for it (a crash with some points is red in both)?"""
    result = exercise("halo_difference", status, points)
    assert result.status == status
    assert summary.outcome(result) == bar
    figure = summary.figure([StudentResult("ann", {"halo_difference": result})])
    drawn = {p.get_gid(): p for ax in figure.axes for p in ax.patches if p.get_gid()}
    assert drawn[f"{bar}-halo_difference"].get_width() == 1.0
    assert drawn[f"{bar}-halo_difference"].get_facecolor() == to_rgba(shown_colour(result))
    legend = {t.get_text(): h for ax in figure.axes if ax.get_legend()
              for t, h in zip(ax.get_legend().texts, ax.get_legend().legend_handles,
                              strict=True)}
    label = {"partial": "partly"}.get(bar, bar)
    assert legend[label].get_facecolor() == to_rgba(shown_colour(result))


def test_an_exercise_not_found_is_not_handed_in_and_grey_in_both():
    """Is "not found" shown in the not-attempted grey in the feedback, not in the failure red,
    and counted as not handed in by the summary, as "not attempted" is?"""
    missing = exercise("halo_difference", "not found")
    stub = exercise("halo_difference", "not attempted")
    assert shown_colour(missing) == shown_colour(stub)
    assert shown_colour(missing) != shown_colour(exercise("halo_difference", "failed"))
    assert summary.outcome(missing) == summary.outcome(stub) == "absent"
    row = ExerciseResult("halo_difference", [TestResult("t", 0, 4, "not found")])._repr_html_()
    assert f'<span style="color:{shown_colour(stub)}">not found</span>' in row
