"""Reading submissions: which students there are, and the code each one handed in.

An entry of the submissions folder is one student: a folder (its notebooks and ``.py`` files,
read in name order) or a single ``.ipynb`` or ``.py`` file. A notebook contributes its code
cells in order. Anything unreadable becomes a problem in that student's feedback, never an
exception.

Submissions are read here, in the grader's own process, so a symbolic link is never followed:
a link to the reference solutions in a submission (unzip recreates links) would otherwise
hand them in.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from grader import messages as msg
from grader.grading import texts
from grader.workers.run import Source

SUFFIXES = (".ipynb", ".py")
#: A file larger than this is not read.
MAX_FILE_BYTES = 20 * 1024 * 1024
#: A notebook with more code cells than this is not run (each cell is one request to a worker,
#: run again whenever a worker is replaced).
MAX_CODE_CELLS = 2000


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
    if entry.is_symlink():
        why = texts.FILE_SYMLINK
        submission.problems.append(msg.MSG_FILE_UNREADABLE.format(file=entry.name, why=why))
        return submission
    for file in _files(entry):
        label = str(file.relative_to(entry)) if entry.is_dir() else file.name
        try:
            submission.sources += read_sources(file, label)
        except (OSError, ValueError) as exc:
            submission.problems.append(msg.MSG_FILE_UNREADABLE.format(file=label, why=exc))
    return submission


def _files(entry: Path) -> list[Path]:
    """The files of an entry that hold code (and the links that would, to be refused), hidden
    files and folders left out. Links to folders are not followed."""
    if not entry.is_dir():
        return [entry]
    return sorted(
        p
        for p in entry.rglob("*")
        if not any(part.startswith(".") for part in p.relative_to(entry).parts)
        and (
            (p.suffix in SUFFIXES and (p.is_symlink() or p.is_file()))
            or (p.is_symlink() and p.is_dir())
        )
    )


def read_sources(file: Path, label: str) -> list[Source]:
    """The code in one file: a ``.py`` file whole, a notebook cell by cell."""
    try:
        text = read_file(file).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(texts.FILE_NOT_TEXT.format(error=exc.reason, at=exc.start)) from None
    if "\x00" in text:
        raise ValueError(texts.FILE_BINARY)
    if file.suffix == ".py":
        return [Source(label, label, text)]
    if not text.strip():
        raise ValueError(texts.NOTEBOOK_EMPTY)
    return notebook_sources(text, label)


def read_file(file: Path) -> bytes:
    """The bytes of a regular file, never through a symbolic link, at most MAX_FILE_BYTES."""
    if file.is_symlink():
        raise ValueError(texts.FILE_SYMLINK)
    descriptor = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise ValueError(texts.FILE_NOT_REGULAR)
        if found.st_size > MAX_FILE_BYTES:
            template = texts.NOTEBOOK_TOO_LARGE if file.suffix == ".ipynb" else texts.FILE_TOO_LARGE
            raise ValueError(template.format(mib=MAX_FILE_BYTES / 2**20))
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew after it was measured
        raise ValueError(texts.FILE_TOO_LARGE.format(mib=MAX_FILE_BYTES / 2**20))
    return data


def notebook_sources(text: str, label: str) -> list[Source]:
    """The code cells of a notebook (nbformat 4), in order."""
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(texts.NOTEBOOK_INVALID_JSON.format(error=exc)) from None
    if not isinstance(notebook, dict):
        raise ValueError(texts.NOTEBOOK_NOT_OBJECT)
    if notebook.get("nbformat") != 4:
        raise ValueError(texts.NOTEBOOK_FORMAT.format(found=notebook.get("nbformat")))
    if not isinstance(notebook.get("cells"), list):
        raise ValueError(texts.NOTEBOOK_NO_CELLS)
    sources = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        code = cell.get("source", "")
        if isinstance(code, list):
            code = "".join(str(line) for line in code)
        if not isinstance(code, str):
            raise ValueError(texts.NOTEBOOK_CELL_UNREADABLE.format(number=number))
        sources.append(Source(label, f"{label}, cell {number}", code))
        if len(sources) > MAX_CODE_CELLS:
            raise ValueError(texts.NOTEBOOK_TOO_MANY_CELLS.format(most=MAX_CODE_CELLS))
    return sources
