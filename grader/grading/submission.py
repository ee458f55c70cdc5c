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
from grader.grading import safe, texts
from grader.workers.run import Source

SUFFIXES = (".ipynb", ".py")
#: A file larger than this is not read.
MAX_FILE_BYTES = 20 * 1024 * 1024
#: A notebook with more code cells than this is not run (each cell is one request to a worker,
#: run again whenever a worker is replaced).
MAX_CODE_CELLS = 2000
#: A notebook is parsed only if its JSON holds at most this many containers and items (every
#: ``{``, ``[`` and ``,`` counted before parsing): parsing costs about 36 bytes of the
#: grader's memory for each, so a 20 MiB file of ``[{},{},...]`` would take 0.5 GiB; this
#: bounds it at about 70 MiB, twenty times what a notebook of 20 MiB of text outputs needs.
MAX_NOTEBOOK_ITEMS = 2_000_000
#: A submission's folders are read this many levels down, no further.
MAX_DEPTH = 32
#: A submission with more files and folders than this is not read at all.
MAX_ENTRIES = 10_000


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
    """The student an entry is, as every output shows it: the folder's or file's name on one
    line of valid UTF-8 (bytes that are not UTF-8 and control characters written as escapes)."""
    return safe.line(entry.name if entry.is_dir() else entry.stem)


def files_of(entry: Path) -> list[Path]:
    """Every file and link of a submission (links are not followed), as far as
    :func:`walk` reads it."""
    if not entry.is_dir() or entry.is_symlink():
        return [entry]
    return [p for p in walk(entry)[0] if p.is_symlink() or p.is_file()]


def walk(entry: Path) -> tuple[list[Path], str | None]:
    """Every file, folder and link under the folder ``entry``, links not followed, and why
    the walk stopped early (None if it did not): folders below :data:`MAX_DEPTH` levels are
    left out, and past :data:`MAX_ENTRIES` entries nothing is kept."""
    found: list[Path] = []
    stopped = None
    folders = [(entry, 0)]
    while folders:
        folder, depth = folders.pop()
        try:
            with os.scandir(folder) as listing:
                children = list(listing)
        except OSError:
            continue  # unreadable: its files are not graded, as if absent
        for child in children:
            found.append(Path(child.path))
            if len(found) > MAX_ENTRIES:
                return [], texts.TOO_MANY_FILES.format(name=safe.line(entry.name),
                                                       most=MAX_ENTRIES)
            if child.is_dir(follow_symlinks=False):
                if depth + 1 < MAX_DEPTH:
                    folders.append((Path(child.path), depth + 1))
                else:
                    stopped = texts.TOO_DEEP.format(name=safe.line(entry.name), most=MAX_DEPTH)
    return sorted(found), stopped


def load(entry: Path) -> Submission:
    """Read one entry of the submissions folder."""
    submission = Submission(student_name(entry), entry)
    if entry.is_symlink():
        why = texts.FILE_SYMLINK
        submission.problems.append(msg.MSG_FILE_UNREADABLE.format(file=safe.line(entry.name),
                                                                  why=why))
        return submission
    files, stopped = _files(entry)
    if stopped:
        submission.problems.append(stopped)
    for file in files:
        label = safe.line(file.relative_to(entry) if entry.is_dir() else file.name)
        try:
            submission.sources += read_sources(file, label)
        except (OSError, ValueError) as exc:
            submission.problems.append(msg.MSG_FILE_UNREADABLE.format(file=label, why=exc))
    if not files and not submission.problems:
        submission.problems.append(texts.NOTHING_TO_GRADE)
    return submission


def _files(entry: Path) -> tuple[list[Path], str | None]:
    """The files of an entry that hold code (and the links that would, to be refused), hidden
    files and folders left out, and why the walk stopped early. Links to folders are not
    followed."""
    if not entry.is_dir():
        return [entry], None
    found, stopped = walk(entry)
    return [
        p
        for p in found
        if not any(part.startswith(".") for part in p.relative_to(entry).parts)
        and (
            (p.suffix in SUFFIXES and (p.is_symlink() or p.is_file()))
            or (p.is_symlink() and p.is_dir())
        )
    ], stopped


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
    if text.count("{") + text.count("[") + text.count(",") > MAX_NOTEBOOK_ITEMS:
        raise ValueError(texts.NOTEBOOK_TOO_MANY_ITEMS.format(most=MAX_NOTEBOOK_ITEMS))
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
