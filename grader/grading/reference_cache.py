"""The reference run, kept between batches: what the reference solutions measured and the
programs they compiled (:mod:`grader.workers.compiled`), stored once per grader and read by
every later batch of the same grader. A batch runs the reference again only when the grader
changed: its code, tests, hints, solutions, limits or exercises, JAX or Python.

- **Who writes.** Only a reference run that succeeded, in a folder of its own
  (``.building-*``) that becomes the entry in one rename: a failing or interrupted reference
  leaves no entry, and two batches that build the same entry at once keep the first. A run
  asked for (``grade --rerun-reference``) replaces the entry.
- **Who reads.** The grader reads the measurements (``reference.json``: the hidden tests'
  expected values, never in a worker's sandbox). Every worker and verifier of a later batch
  reads the compiled programs (``compiled/``), every tester the testers' (``tested/``: the
  hidden tests' own programs, which no worker sees), read-only and each entry sealed by its
  key, exactly as they read a batch's own (:mod:`grader.workers.compiled`).
- **What is trusted.** An entry is read only where this user owns the cache's folder, the
  entry and everything in it, and nobody else may write any of them; anything else (a
  damaged file, a folder another user could write) is passed over, and the batch runs its
  reference as before. The workers' user (``nobody``, for a grader started by root) must be
  able to reach the cache's folder to read its compiled programs: where it cannot (root's
  own home), nothing is kept and every batch runs its reference.

The folder is ``$GRADER_CACHE_DIR``, else ``$XDG_CACHE_HOME/jax-course-grader``, else
``~/.cache/jax-course-grader``; the newest :data:`KEEP` entries stay.
"""

from __future__ import annotations

import json
import os
import platform
import stat
import tempfile
from importlib import metadata
from pathlib import Path

from grader.grading import texts
from grader.grading.store import fingerprint
from grader.workers import compiled
from grader.workers.run import Run

#: Names the cache's folder, before the defaults.
FOLDER_ENV = "GRADER_CACHE_DIR"
#: Entries kept: one per grader, the newest first (a course changed thrice keeps three).
KEEP = 3
#: The file of an entry that holds the reference's measurements.
MEASURED = "reference.json"
#: An entry's folders of compiled programs: the workers' and verifiers', and the testers'.
FOLDERS = ("compiled", "tested")
_BUILDING = ".building-"


def default_folder() -> Path:
    """Where the cache lives unless the instructor says otherwise."""
    if os.environ.get(FOLDER_ENV):
        return Path(os.environ[FOLDER_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jax-course-grader"


def key(grader_print: str) -> str:
    """The entry of a grader (:func:`grader.grading.store.combined` of its parts), the Python
    and the jaxlib it runs on."""
    try:
        jaxlib = metadata.version("jaxlib")
    except metadata.PackageNotFoundError:
        jaxlib = "none"
    return fingerprint([], grader_print, platform.python_version(), jaxlib)[:32]


def _ours(path: Path) -> bool:
    """Whether ``path`` is this user's own, no link, and nobody else may write it."""
    try:
        found = path.lstat()
    except OSError:
        return False
    return (found.st_uid == os.geteuid() and not stat.S_ISLNK(found.st_mode)
            and not found.st_mode & 0o022)


class Reference:
    """The reference run of one batch: kept from an earlier batch (:attr:`wants`), or run by
    this one into :attr:`compiled` and :attr:`tested` (a new entry of the cache where it can
    hold one, else folders of this batch alone) and then kept (:meth:`keep`). :meth:`close`
    removes what was not kept."""

    def __init__(self, folder: Path | None, entry: str, rerun: bool = False) -> None:
        #: Why ``folder``, given, cannot hold the cache (a sentence), or None.
        self.refused = None if folder is None else self._refused(folder)
        self.folder = folder if self.refused is None else None
        self.entry = entry
        self.rerun = rerun
        self.wants: dict[int, Run] | None = None
        self._building: Path | None = None
        self._temporary: list[Path] = []  # what close() removes: this batch's alone
        if self.folder is not None and not rerun:
            self.wants = self._read()
        if self.wants is not None:
            self.compiled, self.tested = (self.folder / entry / f for f in FOLDERS)
        elif self.folder is not None:
            self._building = Path(tempfile.mkdtemp(prefix=_BUILDING, dir=self.folder))
            self._building.chmod(0o755)
            self._temporary = [self._building]
            self.compiled, self.tested = (self._building / f for f in FOLDERS)
            for made in (self.compiled, self.tested):
                made.mkdir(mode=0o755)
        else:
            self.compiled, self.tested = compiled.new_folder(), compiled.new_folder()
            self._temporary = [f for f in (self.compiled, self.tested) if f is not None]

    @staticmethod
    def _refused(folder: Path) -> str | None:
        """Why ``folder`` cannot hold the cache, or None: it must be made if missing, be this
        user's own, and be reachable by the workers' user (see
        :func:`grader.workers.compiled.reachable`)."""
        try:
            folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as exc:
            return texts.CACHE_NOT_MADE.format(why=exc.strerror or exc)
        if not _ours(folder):
            return texts.CACHE_NOT_OURS
        if not compiled.reachable(folder):
            return texts.CACHE_UNREACHABLE
        return None

    def _read(self) -> dict[int, Run] | None:
        entry = self.folder / self.entry
        if not all(_ours(p) for p in (entry, entry / MEASURED, *(entry / f for f in FOLDERS))):
            return None
        try:
            for folder in FOLDERS:
                if not all(_ours(found) for found in (entry / folder).iterdir()):
                    return None
            data = json.loads((entry / MEASURED).read_text())
            wants = {int(n): Run.from_json(run) for n, run in data.items()}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        os.utime(entry)  # the newest used, the last removed
        return wants

    def keep(self, wants: dict[int, Run]) -> None:
        """The reference run is done (and every one of its outcomes passed): nothing writes
        its compiled programs from now on; kept as the cache's entry where this batch built
        one (:attr:`compiled` and :attr:`tested` then name the entry's)."""
        for folder in (self.compiled, self.tested):
            if folder is not None:
                compiled.written(folder)
        if self._building is None or any(run.unfinished for run in wants.values()):
            return
        measured = self._building / MEASURED
        measured.write_text(json.dumps({str(n): run.to_json() for n, run in wants.items()}))
        measured.chmod(0o444)
        self._building.chmod(0o555)
        if self.rerun:  # asked to run it again: this run's measurements replace the entry's
            compiled.remove(self.folder / self.entry)
        try:
            self._building.rename(self.folder / self.entry)
        except OSError:  # another batch kept the same entry first: this one's goes
            return
        self._building, self._temporary = None, []
        self.compiled, self.tested = (self.folder / self.entry / f for f in FOLDERS)
        self._prune()

    def _prune(self) -> None:
        entries = sorted((p for p in self.folder.iterdir() if not p.name.startswith(".")
                          and p.is_dir() and _ours(p)),
                         key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            compiled.remove(old)

    def close(self) -> None:
        """Remove this batch's folders of compiled programs unless they are the cache's entry."""
        for folder in self._temporary:
            compiled.remove(folder)
