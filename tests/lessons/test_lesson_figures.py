"""Every lesson draws its central idea from what its cells computed (issue 60): counted in the
stored outputs of the lessons as they are committed (executed), never an image stored in
Markdown."""

from __future__ import annotations

import re

import nbformat
import pytest

from grader import course
from grader.authoring.generate import LINKS_START

#: The lessons that do not draw yet; each drawn lesson leaves this set, and the test fails on
#: a lesson that draws while still listed here.
STILL_TO_DRAW = {"11_capstone"}


def figures(lesson: str) -> list[int]:
    """The indices of the code cells whose stored outputs hold an image."""
    cells = nbformat.read(course.LESSON_NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells
    return [i for i, c in enumerate(cells) if c.cell_type == "code"
            and any(k.startswith("image/") for o in c.outputs for k in o.get("data", {}))]


@pytest.mark.parametrize("lesson", course.LESSONS)
def test_each_lesson_draws_from_its_cells_or_is_listed_as_still_to_draw(lesson):
    """Does the lesson show at least one figure that one of its code cells drew, unless it is
    one of those still to draw, which show none?"""
    drawn = figures(lesson)
    assert bool(drawn) == (lesson not in STILL_TO_DRAW), drawn


@pytest.mark.parametrize("lesson", course.LESSONS)
def test_no_lesson_stores_a_picture_in_its_text(lesson):
    """Is no image attached to or embedded in a Markdown cell (the Colab and Kaggle badges
    apart), so that every picture a lesson shows is one its code drew?"""
    cells = nbformat.read(course.LESSON_NOTEBOOKS / f"{lesson}.ipynb", as_version=4).cells
    for cell in cells:
        if cell.cell_type != "markdown":
            continue
        assert not cell.get("attachments")
        text = "\n".join(line for line in cell.source.splitlines()
                         if not line.startswith(LINKS_START))
        assert not re.search(r"!\[|<img\b|data:image/", text), text[:200]
