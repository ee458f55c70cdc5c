"""Results kept as each submission finishes, so that an interrupted batch can resume.

``OUT/.results/<student>.json`` holds one student's result with a fingerprint of what it was
graded from: the submission's files and the grader itself (its code, tests, solutions, JAX
version and limits). Running the same command again reuses a stored result only when both
fingerprints still match. Each file is written atomically. Workers never see ``OUT``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

import jax

from grader.results import StudentResult

FOLDER = ".results"


def fingerprint(paths: Iterable[Path], *extra: str) -> str:
    """A hash of files (their relative names and bytes) and extra strings."""
    digest = hashlib.sha256()
    for text in extra:
        digest.update(text.encode() + b"\0")
    for path in sorted(paths):
        digest.update(str(path).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def files_of(entry: Path) -> list[Path]:
    return sorted(p for p in entry.rglob("*") if p.is_file()) if entry.is_dir() else [entry]


def grader_fingerprint(solutions: Path, settings: str) -> str:
    """What the grading depends on besides the submission."""
    package = Path(__file__).resolve().parent
    code = [p for p in package.rglob("*") if p.is_file() and p.suffix in (".py", ".json")]
    return fingerprint([*code, *files_of(solutions)], jax.__version__, settings)


class Store:
    """The per-student results of one output folder."""

    def __init__(self, out: Path, grader_print: str) -> None:
        self.folder = out / FOLDER
        self.grader_print = grader_print

    def _path(self, student: str) -> Path:
        return self.folder / f"{student}.json"

    def submission_print(self, entry: Path) -> str:
        return fingerprint(files_of(entry), self.grader_print)

    def get(self, student: str, entry: Path) -> StudentResult | None:
        """The stored result, if it was graded from this very submission by this grader."""
        try:
            data = json.loads(self._path(student).read_text())
            if data["fingerprint"] != self.submission_print(entry):
                return None
            return StudentResult.from_json(student, data["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, entry: Path, result: StudentResult) -> None:
        """Store a result atomically (a reader sees the old file or the new one, whole)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {"fingerprint": self.submission_print(entry), "result": result.to_json()}
        )
        write_atomic(self._path(result.student), text)


def write_atomic(path: Path, text: str) -> None:
    """Write a file so that it is never seen half-written."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
