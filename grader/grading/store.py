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
import io
import json
import os
import tokenize
from collections.abc import Iterable
from pathlib import Path

import jax

from grader.course import PACKAGE
from grader.framework.results import StudentResult
from grader.grading import safe, submission, texts
from grader.grading.outputs import STORE, TEMPORARY, write_atomic
from grader.grading.submission import files_of

#: Files are hashed this many bytes at a time, so that a large one is never held whole.
CHUNK = 2**20


def fingerprint(paths: Iterable[Path], *extra: str, root: Path | None = None,
                as_code: bool = False) -> str:
    """A hash of files (their names, relative to ``root`` when given, and bytes) and extra
    strings. A symbolic link is hashed as where it points, never followed; a file that cannot
    be read, as the reason. ``as_code``: a Python file is hashed as its tokens, comments and
    blank lines left out."""
    digest = hashlib.sha256()
    for text in extra:
        digest.update(text.encode() + b"\0")
    for path in sorted(paths):
        name = path.relative_to(root) if root else path
        digest.update(os.fsencode(name) + b"\0")
        try:
            if path.is_symlink():
                digest.update(b"link to " + os.fsencode(os.readlink(path)))
            elif as_code and path.suffix == ".py":
                digest.update(_tokens(path.read_bytes()))
            else:
                with open(path, "rb") as handle:
                    while chunk := handle.read(CHUNK):
                        digest.update(chunk)
        except OSError as exc:
            digest.update(f"unreadable: {exc.strerror}".encode())
        digest.update(b"\0")
    return digest.hexdigest()


def grader_parts(solutions: Path, settings: str) -> dict[str, str]:
    """A fingerprint of each part of what the grading depends on besides the submission
    (wherever the course lies), by what to call it when it changes. The grader's Python is
    fingerprinted as code: a comment changed changes nothing, so regrades nobody."""
    code = [p for p in PACKAGE.rglob("*") if p.is_file() and p.suffix in (".py", ".json")]
    parts = {"the hidden tests": PACKAGE / "hidden", "the public tests": PACKAGE / "public",
             "the hints": PACKAGE / "hints"}
    rest = [p for p in code if not any(p.is_relative_to(f) for f in parts.values())]
    return {**{name: fingerprint([p for p in code if p.is_relative_to(folder)], root=PACKAGE,
                                 as_code=True) for name, folder in parts.items()},
            "the grader's code": fingerprint(rest, root=PACKAGE, as_code=True),
            "the solutions": fingerprint(files_of(solutions), root=solutions),
            "JAX's version": jax.__version__, "the limits or the exercises": settings}


def grader_fingerprint(solutions: Path, settings: str) -> str:
    """One fingerprint of :func:`grader_parts`."""
    return combined(grader_parts(solutions, settings))


def combined(parts: dict[str, str]) -> str:
    """One fingerprint of the parts of a grader."""
    return fingerprint([], *(f"{name}={value}" for name, value in parts.items()))


def _tokens(source: bytes) -> bytes:
    """Python source as its tokens, without comments and blank lines (its bytes if it does
    not tokenize)."""
    try:
        return b"\0".join(f"{t.type}:{t.string}".encode()
                           for t in tokenize.tokenize(io.BytesIO(source).readline)
                           if t.type not in (tokenize.COMMENT, tokenize.NL))
    except (tokenize.TokenError, SyntaxError):
        return source


class Store:
    """The per-student results of one output folder."""

    def __init__(self, out: Path, grader_print: str, parts: dict[str, str] | None = None
                 ) -> None:
        self.folder = out / STORE
        self.grader_print = grader_print
        #: What the grader is made of (:func:`grader_parts`), stored with each result so that
        #: a regrade can say what changed.
        self.parts = parts if parts is not None else {"the grader": grader_print}
        self.files: dict[str, str] = {}  # student -> the fingerprint of their files alone
        self.written: dict[str, str] = {}  # student -> the text this grader stored

    def _path(self, student: str) -> Path:
        return self.folder / f"{student}.json"

    def submission_print(self, entry: Path) -> str:
        """The fingerprint of a submission (its files, named relative to the submissions
        folder, so that how that folder was spelled does not matter) and of the grader."""
        files = files_of(entry)
        self.files[submission.student_name(entry)] = fingerprint(files, root=entry.parent)
        return fingerprint(files, self.grader_print, root=entry.parent)

    def _stored(self, student: str) -> tuple[str, dict]:
        text = self._path(student).read_text()
        return text, json.loads(text, parse_constant=_refuse)  # NaN could not be written back

    def get(self, student: str, seen: str) -> StudentResult | None:
        """The stored result, if it was graded from the submission whose fingerprint is
        ``seen`` (taken before grading) by this grader."""
        try:
            text, data = self._stored(student)
            if data["fingerprint"] != seen:
                return None
            result = StudentResult.from_json(student, data["result"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        self.written[student] = text
        return result

    def stale(self, student: str) -> tuple[str, StudentResult | None] | None:
        """Why the result stored for ``student``, which :meth:`get` did not return, is graded
        again (after :meth:`submission_print` of their entry), and that result if it can be
        read; None if none was stored."""
        try:
            _, data = self._stored(student)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return texts.STALE_UNREADABLE, None
        try:
            old = StudentResult.from_json(student, data["result"])
        except (KeyError, TypeError, ValueError):
            old = None
        parts = data.get("parts") if isinstance(data, dict) else None
        if not isinstance(parts, dict):
            return texts.STALE_OLDER_GRADER, old
        why = [texts.STALE_FILES] if data.get("files") != self.files.get(student) else []
        why += [texts.STALE_PART.format(part=name) for name, value in self.parts.items()
                if parts.get(name) != value]
        return ", ".join(why) or texts.STALE_UNREADABLE, old

    def put(self, student: str, result: StudentResult, seen: str) -> None:
        """Store a result graded from the submission whose fingerprint, taken before grading,
        is ``seen``, atomically (a reader sees the old file or the new one, whole)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(safe.tree({"fingerprint": seen, "files": self.files.get(student),
                                     "parts": self.parts, "result": result.to_json()}),
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
