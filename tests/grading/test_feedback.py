"""The feedback a student reads: Markdown and an HTML page, the same result in both."""

from __future__ import annotations

from html.parser import HTMLParser

from grader import messages as msg
from grader.framework.results import ExerciseResult, Late, StudentResult, TestResult
from grader.grading import feedback
from grader.palette import FAILURE_COLOUR, status_colour


def result() -> StudentResult:
    halo = ExerciseResult("halo_difference", [
        TestResult("values", 2, 2, msg.PASSED, devices=[8]),
        TestResult("sharding", 0, 2, msg.FAILED, "the result's layout differs", devices=[8, 2],
                   got="P(None)", want="P('i')", hidden=True,
                   hint="<b>keep</b> the output split: out_specs=P('i')")])
    dot = ExerciseResult("distributed_dot", [
        TestResult("values", 0, 3, msg.FAILED, "`x` | wrong", got="1.0", want="2.0")])
    psum = ExerciseResult("nan_mean_var", [TestResult("values", 1, 1, msg.PASSED)])
    absent = ExerciseResult("row_group_sums", [
        TestResult("values", 0, 1, msg.NOT_FOUND, msg.MSG_NOT_FOUND.format(
            name="row_group_sums"))])
    return StudentResult("eve<script>", {e.name: e for e in (halo, dot, psum, absent)},
                         problems=["lab.ipynb, cell 3 raised <ValueError>"],
                         late=Late("2027-01-31T10:00:00+00:00", "2027-01-30T00:00:00+00:00",
                                   2, 20.0))


class Page(HTMLParser):
    """The text of a page, and whether it holds any script."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text: list[str] = []
        self.tags: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_page_shows_each_exercise_with_yours_expected_and_the_hint():
    page = feedback.page(result())
    parsed = Page(page)
    words = " ".join(" ".join(parsed.text).split())
    assert "script" not in parsed.tags  # the student's name is text, not markup
    assert "Feedback for eve<script>" in words
    assert "Total: 2.4 / 9 points (3 earned, less 0.6 for handing in 2 day(s) late: 20%)" in words
    assert "Handed in 2027-01-31T10:00:00+00:00, due 2027-01-30T00:00:00+00:00: late." in words
    for text in ("P(None)", "P('i')", "the result's layout differs",
                 "<b>keep</b> the output split", "lab.ipynb, cell 3 raised <ValueError>",
                 "`x` | wrong"):
        assert text in words, text
    for name in ("halo_difference", "distributed_dot", "nan_mean_var", "row_group_sums"):
        assert f'<section id="{name}">' in page


def test_partial_credit_is_not_shown_as_a_failure():
    """Is a partly passed exercise drawn in the partial colour with its own mark, in the page
    and in the Markdown, and a wholly failed one as a failure?"""
    page = feedback.page(result())
    row = page[page.index('href="#halo_difference"'):].split("</tr>")[0]
    assert status_colour(msg.PARTIAL) in row and FAILURE_COLOUR not in row
    assert feedback.html_mark(msg.PARTIAL) in row
    failed = page[page.index('href="#distributed_dot"'):].split("</tr>")[0]
    assert FAILURE_COLOUR in failed and feedback.html_mark(msg.FAILED) in failed
    assert feedback.html_mark(msg.PARTIAL) != feedback.html_mark(msg.FAILED)
    # drawn, not emoji, which show as empty boxes where no emoji font is installed
    assert not any(m in page for m in (*feedback._MARK.values(), feedback.FAILURE_MARK))
    text = feedback.markdown(result())
    assert f"| `halo_difference` | {feedback.mark(msg.PARTIAL)} partial | 2 / 4 |" in text
    assert f"| `distributed_dot` | {feedback.FAILURE_MARK} failed | 0 / 3 |" in text
    assert f"| `row_group_sums` | {feedback.mark(msg.NOT_FOUND)} not found | 0 / 1 |" in text
    assert feedback.mark(msg.PARTIAL) != feedback.FAILURE_MARK


def test_the_markdown_gives_the_total_after_the_penalty_and_keeps_tables_whole():
    """Is the late total spelled out, and can a student's message not break the Markdown
    (backticks and pipes made harmless)?"""
    text = feedback.markdown(result())
    assert "**Total: 2.4 / 9 points (3 earned, less 0.6 for handing in 2 day(s) late: 20%)**" in (
        text)
    assert "- ❌ test `values`: 'x' \\| wrong" in text
