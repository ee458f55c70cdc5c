"""Results kept as each submission finishes, so that an interrupted batch can resume.

``OUT/.results/<student>.json`` holds one student's result with a fingerprint of what it was
graded from: the submission's files and the grader itself (its code, tests, solutions, JAX
version and limits). Running the same command again reuses a stored result only when both
fingerprints still match. Each file is written atomically. Workers never see ``OUT`` in the
sandbox; without it, a submission could rewrite these files while the batch runs, so once the
batch is graded every entry is written again from what the grader holds in memory
(:meth:`Store.settle`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import jax

from grader.course import PACKAGE
from grader.framework.results import StudentResult
from grader.grading import safe, texts
from grader.grading.outputs import STORE, TEMPORARY, write_atomic
from grader.grading.submission import walk

#: Files are hashed this many bytes at a time, so that a large one is never held whole.
CHUNK = 2**20


def fingerprint(paths: Iterable[Path], *extra: str, root: Path | None = None) -> str:
    """A hash of files (their names, relative to ``root`` when given, and bytes) and extra
    strings. A symbolic link is hashed as where it points, never followed; a file that cannot
    be read, as the reason."""
    digest = hashlib.sha256()
    for text in extra:
        digest.update(text.encode() + b"\0")
    for path in sorted(paths):
        name = path.relative_to(root) if root else path
        digest.update(os.fsencode(name) + b"\0")
        try:
            if path.is_symlink():
                digest.update(b"link to " + os.fsencode(os.readlink(path)))
            else:
                with open(path, "rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
        except OSError as exc:
            digest.update(f"unreadable: {exc.strerror}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


def files_of(entry: Path) -> list[Path]:
    """Every file and link of a submission (links are not followed), as far as
    :func:`grader.grading.submission.walk` reads it."""
    if not entry.is_dir() or entry.is_symlink():
        return [entry]
    return [p for p in walk(entry)[0] if p.is_symlink() or p.is_file()]


def grader_fingerprint(solutions: Path, settings: str) -> str:
    """What the grading depends on besides the submission (wherever the course lies)."""
    code = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in (".py", ".json")]
    answers = fingerprint(files_of(solutions), root=solutions)
    return fingerprint(code, jax.__version__, settings, answers, root=PACKAGE)


class Store:
    """The per-student results of one output folder."""

    def __init__(self, out: Path, grader_print: str) -> None:
        self.folder = out / STORE
        self.grader_print = grader_print
        self.written: dict[str, str] = {}  # student -> the text this grader stored

    def _path(self, student: str) -> Path:
        return self.folder / f"{student}.json"

    def submission_print(self, entry: Path) -> str:
        """The fingerprint of a submission (its files, named relative to the submissions
        folder, so that how that folder was spelled does not matter) and of the grader."""
        return fingerprint(files_of(entry), self.grader_print, root=entry.parent)

    def get(self, student: str, seen: str) -> StudentResult | None:
        """The stored result, if it was graded from the submission whose fingerprint is
        ``seen`` (taken before grading) by this grader."""
        try:
            text = self._path(student).read_text()
            data = json.loads(text, parse_constant=_refuse)  # NaN could not be written back
            if data["fingerprint"] != seen:
                return None
            result = StudentResult.from_json(student, data["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.written[student] = text
        return result

    def put(self, student: str, result: StudentResult, seen: str) -> None:
        """Store a result graded from the submission whose fingerprint, taken before grading,
        is ``seen``, atomically (a reader sees the old file or the new one, whole)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(safe.tree({"fingerprint": seen, "result": result.to_json()}),
                          allow_nan=False)
        write_atomic(self._path(student), text)
        self.written[student] = text

    def settle(self) -> list[str]:
        """Write again every entry of this run whose file no longer holds what was stored
        (only a submission running without the sandbox could have changed it); returns the
        students whose entry was restored."""
        restored = []
        for student, text in self.written.items():
            try:
                intact = self._path(student).read_text() == text
            except (OSError, ValueError):
                intact = False
            if not intact:
                self.folder.mkdir(parents=True, exist_ok=True)
                write_atomic(self._path(student), text)
                restored.append(student)
        return restored


def remove_leftovers(folder: Path) -> None:
    """Remove what a killed :func:`write_atomic` left in ``folder``: temporary files of
    processes that no longer run."""
    for leftover in folder.glob(f".*{TEMPORARY}"):
        pid = leftover.name.removesuffix(TEMPORARY).rsplit(".", 1)[-1]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            leftover.unlink(missing_ok=True)


def _refuse(constant: str) -> None:
    raise ValueError(texts.NOT_JSON.format(constant=constant))
