"""``python -m grader release DIR``: the bundle students get.

Lessons, exercise notebooks, the package with ``check`` and the public tests, and what installs
it; no solution and no hidden test (``tests/authoring/test_release.py`` proves it on a real bundle).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.course import ROOT

#: What a student bundle holds, relative to the course root.
INCLUDED = ("notebooks", "exercises", "grader", "pyproject.toml", "environment.yml", "Makefile",
            "README.md")
#: Never in a bundle, wherever it sits.
EXCLUDED = ("hidden", "__pycache__", "*.pyc", ".ipynb_checkpoints")


class ReleaseError(Exception):
    """The bundle cannot be written there."""


def release(destination: Path, root: Path = ROOT) -> list[str]:
    """Write the student bundle to an empty or new folder; return what it holds."""
    if destination.exists() and any(destination.iterdir()):
        raise ReleaseError(f"{destination} is not empty")
    destination.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns(*EXCLUDED)
    for name in INCLUDED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=ignore)
        else:
            shutil.copy2(source, destination / name)
    return sorted(str(p.relative_to(destination)) for p in destination.rglob("*") if p.is_file())
