"""The README and the pages of docs/: a short README that leads to a page per audience, and
links that all lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
#: A Markdown link to a file of the repository, with its anchor if any: `[text](path#anchor)`.
LINK = re.compile(r"\]\((?!https?://|mailto:)([^)#\s]*)(?:#([^)\s]*))?\)")


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces
    as hyphens."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_the_readme_is_short_and_leads_to_every_page():
    """Can the README be read in two minutes (at most 120 lines), and does it link every page
    of docs/?"""
    text = README.read_text()
    assert len(text.splitlines()) <= 120
    linked = {target for target, _ in LINK.findall(text)}
    assert {f"docs/{page.name}" for page in PAGES} <= linked
    assert {"students.md", "instructors.md", "grading.md", "maintainers.md"} <= {
        page.name for page in PAGES}


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_link_leads_to_a_file_and_a_heading_that_exist(page):
    """Does every relative link of the page name a file of the repository, and its anchor a
    heading of that file?"""
    for target, anchor in LINK.findall(page.read_text()):
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{page.name} links to a missing #{anchor}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_leads_back_to_the_readme(page):
    """Does each page of docs/ link back to the README?"""
    assert "(../README.md)" in page.read_text()


def test_no_page_counts_the_exercises():
    """Does no page give a number of exercises that the next one added would make wrong (the
    README's "table of the 61 exercises", "The 45 exercises whose function must work"),
    except in a dated measurement, whose paragraph says when it was made ("on 2026-11-28 ...
    23 of the 61 exercises")?"""
    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    paragraphs = [(page.name, " ".join(p.split())) for page in pages
                  for p in page.read_text().split("\n\n")]
    counted = [(name, m) for name, text in paragraphs if not re.search(r"\d{4}-\d\d-\d\d", text)
               for m in re.findall(r"\b(?:the|The|other|all|of) \d+ exercises\b", text)]
    assert counted == []


def test_the_jax_range_the_pages_state_is_the_one_the_tests_run():
    """Do the README and docs/students.md state the JAX range that grader/devices.py holds,
    which tests/test_install.py runs from a fresh environment at both ends?"""
    from grader.devices import NEWEST_JAX, OLDEST_JAX

    stated = f"JAX {OLDEST_JAX} to {NEWEST_JAX}"
    assert f"**{stated}**" in " ".join(README.read_text().split())
    students = " ".join((ROOT / "docs" / "students.md").read_text().split())
    assert f"hold on **{stated}**" in students
    install = (ROOT / "tests" / "test_install.py").read_text()
    assert "[devices.OLDEST_JAX, devices.NEWEST_JAX]" in install


#: A code block of the docs that quotes a file names it after its language: ```python PATH.
QUOTE = re.compile(r"^( *)```\w+ (\S+)\n(.*?)^\1```$", re.S | re.M)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_quoted_excerpt_is_still_in_its_file(page):
    """Is every code block a page presents as a file's text (a worked example's pieces)
    found, word for word, in that file?"""
    for indent, path, block in QUOTE.findall(page.read_text()):
        excerpt = "\n".join(line.removeprefix(indent) for line in block.splitlines())
        assert excerpt.strip() and excerpt in (ROOT / path).read_text(), (page.name, path)
