"""The set-up cell on a notebook service: the course's helpers installed where they are
missing, with the lock's versions of what the kernel lacks, and the service's own JAX kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader import install
from grader.authoring.generate import setup_cell
from grader.course import BRANCH, REPOSITORY

ROOT = Path(__file__).resolve().parent.parent
#: A JAX the registry serves that is not the lock's: the service's own.
SERVICE_JAX = "0.10.1"


def locked_lines() -> dict[str, list[str]]:
    """requirements.txt's requirement lines (the lock exported), by distribution name."""
    lines: dict[str, list[str]] = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith((" ", "#")):
            lines.setdefault(line.split("==")[0], []).append(line.strip())
    return lines


def test_what_a_kernel_lacks_is_installed_at_the_locks_versions():
    """Is every requirement line of KERNEL_NEEDS a line of requirements.txt, and does it
    carry every line the lock has for that distribution (one per Python where they differ)?"""
    locked = locked_lines()
    for module, lines in install.KERNEL_NEEDS.items():
        for distribution in {line.split("==")[0] for line in lines}:
            assert sorted(line for line in lines if line.startswith(f"{distribution}==")) \
                == sorted(locked[distribution]), module


def test_only_the_modules_that_cannot_be_imported_are_missing():
    """Does missing() list the lines of a module absent here and none of one present?"""
    needs = {"numpy": ("numpy==1",), "no_such_module_here": ("no-such==1", "its-friend==2")}
    assert install.missing(needs) == ["no-such==1", "its-friend==2"]


@pytest.mark.slow
def test_the_set_up_cell_installs_the_helpers_and_keeps_the_services_jax(tmp_path):
    """In a fresh environment with another JAX and no course (a notebook service), does the
    set-up cell install the course, add what the kernel lacks at the lock's versions, keep the
    service's JAX, and run the lessons' device set-up on it?"""
    # pip's own settings (its index) kept; not the test's warnings-as-errors or device set-up.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONWARNINGS", "JAX_PLATFORMS", "VIRTUAL_ENV")} | {"HOME": str(tmp_path)}
    venv = tmp_path / "service"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", f"jax=={SERVICE_JAX}",
                    f"jaxlib=={SERVICE_JAX}"], check=True, timeout=300, env=env)
    # The cell as every notebook has it, fetching this checkout instead of GitHub.
    cell = setup_cell()
    assert f"git+{REPOSITORY}@{BRANCH}" in cell
    cell = cell.replace(f"git+{REPOSITORY}@{BRANCH}", str(ROOT))
    done = subprocess.run([python, "-c", cell + "\nfrom grader import check\nprint(check)"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert ("installing what this kernel lacks: ipywidgets, matplotlib, orbax-checkpoint"
            in done.stdout)
    assert f"8 CPU devices (JAX {SERVICE_JAX}; no GPU or TPU found)." in done.stdout
    assert "<function check" in done.stdout
    assert "conflict" not in done.stderr and "Warning" not in done.stderr, done.stderr
    versions = subprocess.run(
        [python, "-c", "import jax, matplotlib, ipywidgets, orbax.checkpoint as ocp; "
                       "print(jax.__version__, matplotlib.__version__, ipywidgets.__version__, "
                       "ocp.__version__)"],
        capture_output=True, text=True, env=env, check=True, timeout=120).stdout.split()
    locked = locked_lines()
    assert versions == [SERVICE_JAX, locked["matplotlib"][0].split("==")[1],
                        locked["ipywidgets"][0].split("==")[1],
                        locked["orbax-checkpoint"][0].split("==")[1]]
    # Run again, as a student reopening the notebook: nothing is fetched.
    again = subprocess.run([python, "-c", cell], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "installing" not in again.stdout, again.stderr
