"""Reading submissions: which entries are students, and what code each one handed in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader.grading import submission, texts


def notebook(*cells, nbformat: int = 4) -> str:
    """A notebook's text; a cell is ("code" | "markdown", source as a string or a list)."""
    return json.dumps(
        {
            "nbformat": nbformat,
            "nbformat_minor": 5,
            "metadata": {},
            "cells": [
                {"cell_type": kind, "metadata": {}, "source": source}
                | ({"outputs": [], "execution_count": None} if kind == "code" else {})
                for kind, source in cells
            ],
        }
    )


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def sources(loaded: submission.Submission) -> list[tuple[str, str]]:
    return [(s.label, s.code) for s in loaded.sources]


# --- well-formed entries --------------------------------------------------------------------
def test_a_folder_gives_its_notebooks_and_py_files_in_name_order(tmp_path):
    """Does a folder contribute each file in name order, notebook cells labelled by number?"""
    entry = tmp_path / "alice"
    write(entry / "b_helpers.py", "B = 2\n")
    write(
        entry / "a.ipynb",
        notebook(("markdown", "# Title"), ("code", "x = 1"), ("code", ["y = 2\n", "z = 3"])),
    )
    write(entry / "sub" / "c.py", "C = 3\n")
    loaded = submission.load(entry)
    assert loaded.student == "alice" and loaded.problems == []
    assert sources(loaded) == [
        ("a.ipynb, cell 2", "x = 1"),
        ("a.ipynb, cell 3", "y = 2\nz = 3"),
        ("b_helpers.py", "B = 2\n"),
        (str(Path("sub") / "c.py"), "C = 3\n"),
    ]


def test_a_folder_skips_hidden_files_checkpoints_and_other_files(tmp_path):
    """Are dotfiles, .ipynb_checkpoints and non-code files inside a folder left out?"""
    entry = tmp_path / "bob"
    write(entry / "work.py", "w = 1\n")
    write(entry / ".secret.py", "raise SystemExit\n")
    write(entry / ".ipynb_checkpoints" / "work-checkpoint.ipynb", notebook(("code", "old")))
    write(entry / "notes.txt", "not code")
    write(entry / "data.json", "{}")
    loaded = submission.load(entry)
    assert sources(loaded) == [("work.py", "w = 1\n")]
    assert loaded.problems == []


@pytest.mark.parametrize("files", [(), ("notes.txt",), (".hidden.py", "data.json")])
def test_a_folder_with_nothing_to_grade_says_so(tmp_path, files):
    """Is a folder with no notebook or Python file (empty, other files, hidden code only) a
    problem that says so (it was graded 0 'on time' with no word)?"""
    entry = tmp_path / "eve"
    entry.mkdir()
    for name in files:
        write(entry / name, "x = 1\n")
    loaded = submission.load(entry)
    assert loaded.sources == []
    assert loaded.problems == [texts.NOTHING_TO_GRADE]


def test_a_single_py_file_is_one_source(tmp_path):
    """Is a single .py entry one source labelled with its file name, the student its stem?"""
    entry = write(tmp_path / "cy.py", "def f():\n    return 1\n")
    loaded = submission.load(entry)
    assert loaded.student == "cy"
    assert sources(loaded) == [("cy.py", "def f():\n    return 1\n")]


def test_a_single_notebook_gives_its_code_cells_only(tmp_path):
    """Does a notebook entry give its code cells in order, markdown and raw cells skipped?"""
    entry = write(
        tmp_path / "dan.ipynb",
        notebook(
            ("code", "import jax"),
            ("markdown", "x = 'markdown is not run'"),
            ("raw", "raw = 1"),
            ("code", ["def f(x):\n", "    return x\n"]),
        ),
    )
    loaded = submission.load(entry)
    assert loaded.student == "dan" and loaded.problems == []
    assert sources(loaded) == [
        ("dan.ipynb, cell 1", "import jax"),
        ("dan.ipynb, cell 4", "def f(x):\n    return x\n"),
    ]


def test_an_empty_py_file_is_an_empty_source_and_no_problem(tmp_path):
    """Is an empty .py file read as one empty piece of code, without a complaint?"""
    loaded = submission.load(write(tmp_path / "empty.py", ""))
    assert loaded.problems == []
    assert sources(loaded) == [("empty.py", "")]


def test_a_notebook_without_code_cells_gives_nothing_and_no_problem(tmp_path):
    """Does a valid notebook holding only markdown give no source and no complaint?"""
    loaded = submission.load(write(tmp_path / "prose.ipynb", notebook(("markdown", "hi"))))
    assert loaded.sources == [] and loaded.problems == []


# --- malformed entries: a problem, never an exception ---------------------------------------
MALFORMED = {
    "invalid-json": ("nb.ipynb", '{"cells": [', "invalid JSON"),
    "empty-notebook": ("nb.ipynb", "", "the file is empty"),
    "blank-notebook": ("nb.ipynb", " \n\n", "the file is empty"),
    "json-list": ("nb.ipynb", "[1, 2, 3]", "not a valid notebook"),
    "nbformat-3": ("nb.ipynb", notebook(("code", "x = 1"), nbformat=3), "save it again"),
    "nbformat-3-worksheets": (
        "nb.ipynb",
        json.dumps({"nbformat": 3, "worksheets": [{"cells": []}]}),
        "format 3 is not supported",
    ),
    "cell-source-not-text": (
        "nb.ipynb",
        json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 42}]}),
        "cell 1",
    ),
    "deeply-nested-json": ("nb.ipynb", "[" * 100_000, "not a valid notebook"),
    "nul-bytes": ("code.py", b"x = 1\x00\x00", "binary"),
    "invalid-utf8": ("code.py", b"x = '\xff\xfe'\n", "not UTF-8 text"),
    "binary-notebook": ("nb.ipynb", b"\x89PNG\r\n\x1a\n\x00\x00", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_an_unreadable_file_is_a_problem_not_an_exception(tmp_path, case):
    """Does an unreadable file give one problem naming it, and no code, without raising?"""
    name, content, reason = MALFORMED[case]
    loaded = submission.load(write(tmp_path / name, content))
    assert loaded.sources == []
    assert len(loaded.problems) == 1
    problem = loaded.problems[0]
    assert problem.startswith(f"{name}: ") and "nothing in it was graded" in problem
    assert reason in problem


def test_a_file_larger_than_the_limit_is_not_read(tmp_path, monkeypatch):
    """Is a file over MAX_FILE_BYTES refused, while one at the limit is read?"""
    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 10)
    entry = tmp_path / "eve"
    write(entry / "at_limit.py", "x = 12345\n")  # exactly 10 bytes
    write(entry / "over.py", "x = 123456\n")  # 11 bytes
    loaded = submission.load(entry)
    assert sources(loaded) == [("at_limit.py", "x = 12345\n")]
    assert len(loaded.problems) == 1 and loaded.problems[0].startswith("over.py: larger than")


def test_a_notebook_over_the_limit_is_told_to_clear_its_outputs(tmp_path, monkeypatch):
    """Does a notebook too large to read say how to make it smaller, and a .py file not?"""
    monkeypatch.setattr(submission, "MAX_FILE_BYTES", 10)
    entry = tmp_path / "gus"
    write(entry / "big.ipynb", notebook(("code", "x = 1")))
    write(entry / "big.py", "x = 1234567890\n")
    problems = submission.load(entry).problems
    limit = f"larger than {10 / 2**20:g} MiB"
    assert problems == [
        f"big.ipynb: {limit}: clear its outputs (Edit > Clear Outputs of All Cells), save, and "
        "hand it in again; nothing in it was graded",
        f"big.py: {limit}; nothing in it was graded",
    ]


def test_a_notebook_with_too_many_code_cells_is_not_run(tmp_path, monkeypatch):
    """Is a notebook with more than MAX_CODE_CELLS code cells refused whole, while one at the
    limit is read (markdown cells do not count)?"""
    monkeypatch.setattr(submission, "MAX_CODE_CELLS", 3)
    at_limit = notebook(*[("code", "x = 1")] * 3, ("markdown", "text"))
    over = notebook(*[("code", "x = 1")] * 4)
    entry = tmp_path / "hal"
    write(entry / "a.ipynb", at_limit)
    write(entry / "b.ipynb", over)
    loaded = submission.load(entry)
    assert [s.label for s in loaded.sources] == [f"a.ipynb, cell {n}" for n in (1, 2, 3)]
    assert loaded.problems == [
        "b.ipynb: more than 3 code cells: put the code in fewer cells; nothing in it was graded"
    ]


def test_a_notebook_of_millions_of_empty_values_is_refused_before_it_is_parsed(tmp_path):
    """A 20 MiB notebook of ``[{},{},...]`` in a cell's outputs would cost the grader 0.5 GiB
    once parsed: is it refused by counting, with the reason, while a notebook at the limit is
    read?"""
    def with_outputs(values: int) -> str:
        cell = {"cell_type": "code", "execution_count": None, "metadata": {},
                "source": "x = 1", "outputs": [{} for _ in range(values)]}
        return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                           "cells": [cell]}, separators=(",", ":"))
    entry = tmp_path / "ivy"
    fits = with_outputs(submission.MAX_NOTEBOOK_ITEMS // 2 - 10)  # "{}," is two of them
    assert fits.count("{") + fits.count("[") + fits.count(",") <= submission.MAX_NOTEBOOK_ITEMS
    write(entry / "a.ipynb", fits)
    write(entry / "b.ipynb", with_outputs(submission.MAX_NOTEBOOK_ITEMS // 2 + 10))
    loaded = submission.load(entry)
    assert [s.label for s in loaded.sources] == ["a.ipynb, cell 1"]
    assert loaded.problems == ["b.ipynb: over 2,000,000 JSON values: clear its outputs (Edit > "
                               "Clear Outputs of All Cells), save, and hand it in again; nothing "
                               "in it was graded"]


LINK = ("a symbolic link, which the grader does not follow: hand in the file itself, not a "
        "link; nothing in it was graded")


def test_links_in_a_folder_are_refused_not_followed(tmp_path):
    """Are links to a file or a folder outside the submission (the reference solutions, say)
    reported and never read, while the submission's own files are?"""
    outside = tmp_path / "solutions"
    write(outside / "answers.ipynb", notebook(("code", "def halo_difference(x):\n    return x")))
    write(outside / "more" / "helpers.py", "SECRET = 1\n")
    entry = tmp_path / "ivy"
    write(entry / "mine.py", "mine = 1\n")
    (entry / "answers.ipynb").symlink_to(outside / "answers.ipynb")
    (entry / "more").symlink_to(outside / "more", target_is_directory=True)
    (entry / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    loaded = submission.load(entry)
    assert sources(loaded) == [("mine.py", "mine = 1\n")]
    assert loaded.problems == [f"{name}: {LINK}" for name in ("answers.ipynb", "dangling.py",
                                                                "more")]


def test_an_entry_that_is_a_link_is_refused(tmp_path):
    """Is a whole entry that is a link (to a notebook or a folder) refused, not read?"""
    outside = write(tmp_path / "elsewhere" / "answers.ipynb", notebook(("code", "x = 1")))
    batch = tmp_path / "batch"
    batch.mkdir()
    (batch / "jo.ipynb").symlink_to(outside)
    (batch / "kim").symlink_to(outside.parent, target_is_directory=True)
    assert [p.name for p in submission.discover(batch)] == ["jo.ipynb", "kim"]
    for entry, label in ((batch / "jo.ipynb", "jo.ipynb"), (batch / "kim", "kim")):
        loaded = submission.load(entry)
        assert loaded.sources == [] and loaded.problems == [f"{label}: {LINK}"]


def test_a_fifo_named_like_code_does_not_hang_the_grader(tmp_path):
    """Is a named pipe called .py in a folder skipped instead of blocking the reader?"""
    import os

    entry = tmp_path / "lee"
    write(entry / "ok.py", "ok = 1\n")
    os.mkfifo(entry / "pipe.py")
    loaded = submission.load(entry)
    assert sources(loaded) == [("ok.py", "ok = 1\n")] and loaded.problems == []


def test_one_broken_file_does_not_cost_the_others(tmp_path):
    """In a folder, is a broken notebook reported while the good files are still read?"""
    entry = tmp_path / "fay"
    write(entry / "a_good.py", "ok = True\n")
    write(entry / "b_broken.ipynb", "{not json")
    write(entry / "c_good.ipynb", notebook(("code", "also = 1")))
    loaded = submission.load(entry)
    assert sources(loaded) == [("a_good.py", "ok = True\n"), ("c_good.ipynb, cell 1", "also = 1")]
    assert len(loaded.problems) == 1 and loaded.problems[0].startswith("b_broken.ipynb: ")


def test_a_notebook_with_one_bad_cell_contributes_nothing(tmp_path):
    """Is a notebook with an unreadable cell dropped whole, not run in part?"""
    text = json.dumps(
        {
            "nbformat": 4,
            "cells": [
                {"cell_type": "code", "source": "first = 1"},
                {"cell_type": "code", "source": None},
            ],
        }
    )
    loaded = submission.load(write(tmp_path / "half.ipynb", text))
    assert loaded.sources == [] and len(loaded.problems) == 1


# --- discover and student names -------------------------------------------------------------
def test_discover_lists_folders_notebooks_and_py_files_in_name_order(tmp_path):
    """Does discover give one entry per student, sorted, skipping dotfiles and other files?"""
    write(tmp_path / "zed.py", "")
    write(tmp_path / "ada" / "lab.ipynb", notebook())
    write(tmp_path / "ben.ipynb", notebook())
    write(tmp_path / ".hidden.ipynb", notebook())
    (tmp_path / ".git").mkdir()
    write(tmp_path / "README.md", "# submissions")
    write(tmp_path / "grades.csv", "a,b")
    write(tmp_path / "ben.ipynb.bak", "")
    found = submission.discover(tmp_path)
    assert [p.name for p in found] == ["ada", "ben.ipynb", "zed.py"]


def test_discover_on_an_empty_folder_finds_nobody(tmp_path):
    """Does an empty folder (or one with only non-code files) give no entries?"""
    assert submission.discover(tmp_path) == []
    write(tmp_path / "notes.txt", "")
    assert submission.discover(tmp_path) == []


def test_student_names_come_from_folder_names_and_file_stems(tmp_path):
    """Is a folder's student its full name (dots kept) and a file's student its stem?"""
    folder = tmp_path / "dan.v2"
    folder.mkdir()
    assert submission.student_name(folder) == "dan.v2"
    assert submission.student_name(write(tmp_path / "ben.ipynb", notebook())) == "ben"
    assert submission.student_name(write(tmp_path / "cy.py", "")) == "cy"
