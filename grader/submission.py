"""Reading submissions: which students there are, and the code each one handed in.

An entry of the submissions folder is one student: a folder (its notebooks and ``.py`` files,
read in name order) or a single ``.ipynb`` or ``.py`` file. A notebook contributes its code
cells in order. Anything unreadable becomes a problem in that student's feedback, never an
exception.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from grader import messages as msg
from grader.runner import Source

SUFFIXES = (".ipynb", ".py")
#: A file larger than this is not read.
MAX_FILE_BYTES = 20 * 1024 * 1024


@dataclass
class Submission:
    """One student's code."""

    student: str
    path: Path
    sources: list[Source] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def discover(folder: Path) -> list[Path]:
    """The entries of a submissions folder, one per student, in name order."""
    return sorted(
        p
        for p in folder.iterdir()
        if not p.name.startswith(".")
        and (p.is_dir() or (p.is_file() and p.suffix in SUFFIXES))
    )


def student_name(entry: Path) -> str:
    return entry.name if entry.is_dir() else entry.stem


def load(entry: Path) -> Submission:
    """Read one entry of the submissions folder."""
    submission = Submission(student_name(entry), entry)
    files = (
        sorted(
            p
            for p in entry.rglob("*")
            if p.suffix in SUFFIXES
            and p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(entry).parts)
        )
        if entry.is_dir()
        else [entry]
    )
    for file in files:
        label = str(file.relative_to(entry)) if entry.is_dir() else file.name
        try:
            submission.sources += read_sources(file, label)
        except (OSError, ValueError) as exc:
            submission.problems.append(msg.MSG_FILE_UNREADABLE.format(file=label, why=exc))
    return submission


def read_sources(file: Path, label: str) -> list[Source]:
    """The code in one file: a ``.py`` file whole, a notebook cell by cell."""
    if file.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES // 2**20} MiB")
    text = file.read_bytes().decode("utf-8-sig")  # UnicodeDecodeError is a ValueError
    if "\x00" in text:
        raise ValueError("it is a binary file, not code")
    if file.suffix == ".py":
        return [Source(label, label, text)]
    return notebook_sources(text, label)


def notebook_sources(text: str, label: str) -> list[Source]:
    """The code cells of a notebook (nbformat 4), in order."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"not a valid notebook (invalid JSON: {exc})") from None
    if not isinstance(notebook, dict):
        raise ValueError("not a valid notebook (not a JSON object)")
    if notebook.get("nbformat") != 4:
        raise ValueError(f"notebook format {notebook.get('nbformat')!r} is not supported (4 is)")
    if not isinstance(notebook.get("cells"), list):
        raise ValueError("not a valid notebook (no list of cells)")
    sources = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code = cell.get("source", "")
        if isinstance(code, list):
            code = "".join(str(line) for line in code)
        if not isinstance(code, str):
            raise ValueError(f"cell {number} has no readable source")
        sources.append(Source(label, f"{label}, cell {number}", code))
    return sources
