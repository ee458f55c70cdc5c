"""``python -m grader release DIR``: the bundle students get.

Lessons, exercise notebooks, what installs them, and of the package only what a student's
kernel uses: ``check`` with the test framework, the public tests and their hints, and the
lesson helpers the notebooks import. No solution, no hidden test, and none of the grader's own
machinery (its workers, batch grading, authoring, command line):
``tests/authoring/test_release.py`` proves it on a real bundle.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.authoring import texts
from grader.course import ROOT

#: What a student bundle holds, relative to the course root.
INCLUDED = ("start_here.ipynb", "notebooks", "exercises", "grader", "pyproject.toml", "uv.lock",
            "requirements.txt", "environment.yml", "Makefile", "README.md")
#: Never in a bundle, wherever it sits.
EXCLUDED = ("hidden", "__pycache__", "*.pyc", ".ipynb_checkpoints")
#: The grader's own parts, which no student's kernel imports: not in a bundle.
GRADER_ONLY = ("grader/workers", "grader/grading", "grader/authoring", "grader/cli.py",
               "grader/__main__.py")


class ReleaseError(Exception):
    """The bundle cannot be written there."""


def release(destination: Path, root: Path = ROOT) -> list[str]:
    """Write the student bundle to an empty or new folder; return what it holds."""
    if destination.exists() and any(destination.iterdir()):
        raise ReleaseError(texts.DESTINATION_NOT_EMPTY.format(destination=destination))
    destination.mkdir(parents=True, exist_ok=True)
    patterns = shutil.ignore_patterns(*EXCLUDED)

    def ignore(folder: str, names: list[str]) -> set[str]:
        where = Path(folder).relative_to(root)
        return set(patterns(folder, names)) | {
            name for name in names if (where / name).as_posix() in GRADER_ONLY}

    for name in INCLUDED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    return sorted(str(p.relative_to(destination)) for p in destination.rglob("*") if p.is_file())
