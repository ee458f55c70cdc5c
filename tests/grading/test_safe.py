"""Hostile names and messages at every output: each is shown as text, none runs, none stops
the batch (issue 29, "inputs that stop the batch or reach the instructor's tools").

The class below is graded with the stand-in for the workers (tests/stand_in.py): what is under
test is what grading writes, not what a worker measures."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import stand_in

from grader import assignments
from grader.framework.results import ExerciseResult, StudentResult, TestResult
from grader.grading import export, grade, outputs, safe, store, submission
from grader.grading.roster import Person

COLLECTIVES = assignments.find("03_collectives")
#: Entry names as they would arrive (file stems), and the points the stand-in gives each.
HOSTILE = {
    "=HYPERLINK(\"evil\")": 4,  # a formula, in a spreadsheet
    "@SUM(1+1)": 3,
    "\x1b[31mred\x1b[0m": 2,  # a terminal escape
    "<img src=x onerror=alert(1)>": 1,  # HTML, in Markdown
    "ann": 4,
}


# --- one function per output ---------------------------------------------------------------
def test_text_is_valid_utf8_whatever_the_bytes_or_surrogates():
    """An undecodable byte of a file name (a surrogate escape) and a lone surrogate become a
    visible escape; anything else is left as it is."""
    assert safe.text(os.fsdecode(b"caf\xe9")) == "caf\\udce9"
    assert safe.text("a\ud800b") == "a\\ud800b"
    assert safe.text("café ✓") == "café ✓"
    assert safe.text("\ud800").encode("utf-8")


def test_a_line_shows_every_control_and_invisible_character_as_an_escape():
    """Escapes, newlines, a bidi override and a zero-width space are written out."""
    assert safe.line("\x1b[31mred\nx\u202eevil\u200b") == "\\x1b[31mred\\x0ax\\u202eevil\\u200b"
    assert safe.line("plain text, café") == "plain text, café"


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_a_csv_cell_never_starts_a_formula(start):
    """OWASP's rule: a cell starting with = + - @ gets a quote first (a tab or carriage return
    is written out as an escape); numbers stay numbers."""
    cell = safe.csv_cell(start + "cmd|' /C calc'!A0")
    assert not cell.startswith(safe.FORMULA_STARTS) and "\n" not in cell and "\r" not in cell
    assert cell[0] in "'\\"
    assert [safe.csv_cell(v) for v in ("-2.5", "+3", "1e-3", "4")] == ["-2.5", "+3", "1e-3", "4"]


def test_markdown_shows_html_and_markup_as_typed():
    """No tag, link, code or table cell can come from the text."""
    shown = safe.markdown("<script>x</script> [a](http://x) *b* `c` | d")
    assert "<" not in shown
    assert shown == "&lt;script>x&lt;/script> \\[a\\](http://x) *b* 'c' \\| d"
    assert safe.markdown("allreduce_from_ppermute") == "allreduce_from_ppermute"


def test_a_tree_of_json_makes_every_string_and_key_valid_text():
    assert safe.tree({"a\ud800": ["x\udcff", 1, None, {"k": "\ud800"}]}) == {
        "a\\ud800": ["x\\udcff", 1, None, {"k": "\\ud800"}]}


# --- a class with hostile names ------------------------------------------------------------
def hostile_class(folder: Path) -> Path:
    stand_in.make_class(folder, HOSTILE)
    with open(os.fsencode(folder) + b"/caf\xe9.py", "w") as handle:  # a zip made on Windows
        handle.write("3")
    return folder


def test_hostile_names_are_graded_and_written_as_text_everywhere(tmp_path, monkeypatch):
    """A name that is not UTF-8, formulas, terminal escapes and HTML: is every student graded
    with the exact points, and does each output hold them as text: the gradebook and every
    export with no cell a spreadsheet runs, Markdown with no raw HTML, valid UTF-8 JSON, and
    the terminal table with no escape character?"""
    stand_in.use(monkeypatch)
    out = tmp_path / "out"
    # on the roster with ids, so that every LMS export holds them (display names: the names),
    # by the names they are graded under
    names = [safe.line(name) for name in HOSTILE] + ["caf\\udce9"]
    roster = {name: Person(name, f"s{i}", name, f"{i}@example.org")
              for i, name in enumerate(names)}
    results = grade.grade(hostile_class(tmp_path / "class"), out, jobs=1,
                          work=grade.Work(COLLECTIVES, roster=roster))
    points = {r.student: r.total for r in results}
    assert points == {"=HYPERLINK(\"evil\")": 4, "@SUM(1+1)": 3, "\\x1b[31mred\\x1b[0m": 2,
                      "<img src=x onerror=alert(1)>": 1, "ann": 4, "caf\\udce9": 3}
    with (out / "gradebook.csv").open(newline="", encoding="utf-8") as handle:
        rows = {row["student"]: row["total"] for row in csv.DictReader(handle)}
    assert rows == {"'=HYPERLINK(\"evil\")": "4", "'@SUM(1+1)": "3",
                    "\\x1b[31mred\\x1b[0m": "2", "<img src=x onerror=alert(1)>": "1",
                    "ann": "4", "caf\\udce9": "3"}
    for form in export.FORMATS:
        done = export.export(out, form)
        where, count = done.where, done.count
        assert count == 6
        with where.open(newline="", encoding="utf-8") as handle:
            cells = [c for row in csv.reader(handle) for c in row]
        assert not [c for c in cells if c.startswith(safe.FORMULA_STARTS)
                    and not c.lstrip("+-").replace(".", "").isdigit()], form
    report = (out / "results.json").read_bytes().decode("utf-8")
    assert "\\u001b" not in report and "\\udce9" not in report.replace("\\\\udce9", "")
    page = (out / "feedback" / "<img src=x onerror=alert(1)>.md").read_text()
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)>" in page
    summary = (out / "summary.md").read_text()
    assert "<img" not in summary
    from grader.grading import report as terminal
    assert "\x1b" not in terminal.table(results)


def test_a_lone_surrogate_in_a_message_costs_nothing_else(tmp_path):
    """A test message holding a lone surrogate and HTML (a submission's exception text): are
    that student's and the next student's feedback, results.json and the store all written,
    the surrogate shown as an escape?"""
    bad = TestResult("values", 0, 4, "failed", "raised ValueError: \ud800<b>bold</b>",
                     got="\ud800", want="[1]")
    results = [StudentResult("ann", {"halo_difference": ExerciseResult("halo_difference", [bad])}),
               StudentResult("bob", {"halo_difference": ExerciseResult("halo_difference", [
                   TestResult("values", 4, 4, "passed", "")])})]
    out = tmp_path / "out"
    outputs.write(out, results, outputs.Batch("grader", {"exercise": 60}, outputs.Shard(),
                                              ("ann", "bob"), exercises=("halo_difference",)))
    ann = (out / "feedback" / "ann.md").read_bytes().decode("utf-8")
    assert "\\ud800" in ann and "<b>" not in ann
    assert "\\ud800" in (out / "feedback" / "ann.html").read_bytes().decode("utf-8")
    assert (out / "feedback" / "bob.md").exists()
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["students"]["ann"]
    store.Store(out, "grader").put("ann", results[0], "print")
    assert "\\ud800" in next((out / outputs.STORE).iterdir()).read_text(encoding="utf-8")


def test_a_folder_nested_too_deep_is_that_students_problem(tmp_path):
    """A submission 1,200 folders deep (which overflowed the recursive walk and stopped every
    batch): is it read down to MAX_DEPTH, with the reason among its problems, and
    fingerprinted?"""
    folder = tmp_path / "ben"
    (folder / "top.py").parent.mkdir(parents=True)
    (folder / "top.py").write_text("x = 1\n")
    here = os.getcwd()
    try:
        os.chdir(folder)
        for _ in range(1200):
            os.mkdir("d")
            os.chdir("d")
        Path("deep.py").write_text("y = 2\n")
    finally:
        os.chdir(here)
    try:
        loaded = submission.load(folder)
        assert [s.label for s in loaded.sources] == ["top.py"]
        assert loaded.problems == [f"ben: folders nested deeper than {submission.MAX_DEPTH}; "
                                   "the files below them were not read"]
        assert store.fingerprint(submission.files_of(folder))
    finally:
        remove_deep(folder / "d")  # pytest's own clean-up of tmp_path walks it recursively


def remove_deep(top: Path) -> None:
    """Remove a chain of nested folders without recursion."""
    here = os.getcwd()
    try:
        os.chdir(top)
        depth = 0
        while os.path.isdir("d"):
            os.chdir("d")
            depth += 1
        for _ in range(depth + 1):
            for name in os.listdir("."):
                os.rmdir(name) if os.path.isdir(name) else os.unlink(name)
            os.chdir("..")
        os.rmdir(top)
    finally:
        os.chdir(here)


def test_a_submission_with_too_many_files_is_not_read(tmp_path, monkeypatch):
    """More entries than MAX_ENTRIES: nothing is read, and the reason is given."""
    monkeypatch.setattr(submission, "MAX_ENTRIES", 5)
    folder = tmp_path / "cy"
    folder.mkdir()
    for i in range(6):
        (folder / f"f{i}.py").write_text("")
    loaded = submission.load(folder)
    assert loaded.sources == []
    assert loaded.problems == ["cy: more than 5 files and folders; none of them was read"]
