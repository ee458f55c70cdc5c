"""The grader's HTML pages as a browser lays them out: nothing cut off at a laptop's width."""

from __future__ import annotations

from grader.grading import similarity


def test_the_similarity_page_keeps_both_panes_in_view_whatever_the_lines(browser, tmp_path):
    """A function with a very long line made the page 2,139 px wide and cut the second pane
    off (issue 34): at 1280 px, is the page no wider than the window, each pane within it,
    and the long line scrolled inside its own pane?"""
    long = "def f(x):\n    return " + "x + " * 300 + "1\n"
    pair = similarity.Pair("distributed_dot", ("ann", "bob"), (1.0, 0.9), 300, (1.0, 1.0), 6,
                           (long, "def f(y):\n    return y\n"), (((0, 40),), ()))
    path = tmp_path / "similarity.html"
    path.write_text(similarity.page([pair], "similarity.html"))
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        page.goto(path.as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        panes = page.locator(".sides > div")
        assert panes.count() == 2
        for index in range(2):
            box = panes.nth(index).bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= 1280
        long_pre = page.locator("pre").first
        assert long_pre.evaluate("e => e.scrollWidth > e.clientWidth")  # it scrolls itself
    finally:
        page.close()
