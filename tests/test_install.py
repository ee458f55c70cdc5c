"""The set-up cell on a notebook service: the course's helpers installed where they are
missing, with the lock's versions of what the kernel lacks, and the service's own JAX kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernels import all_passed, execute, plain_env, unexpected_errors

from grader import course, devices, install
from grader.authoring.generate import setup_cell
from grader.course import SOURCE_ENV

ROOT = Path(__file__).resolve().parent.parent


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


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> Path:
    """pip's download cache, shared by this file's services: each installs every wheel anew,
    but downloads it once."""
    return tmp_path_factory.mktemp("pip-cache")


def service(tmp_path: Path, jax_version: str, wheels: Path, kernel: bool = True
            ) -> tuple[str, dict[str, str]]:
    """A notebook service's Python with its own JAX (and Jupyter's kernel, if ``kernel``),
    and nothing of the course: a fresh environment, its Python and the environment to run it
    in (the course's install taken from this checkout, through the set-up cell's own
    variable)."""
    env = plain_env(tmp_path / "home") | {SOURCE_ENV: str(ROOT), "PIP_CACHE_DIR": str(wheels)}
    venv = tmp_path / "service"
    subprocess.run([sys._base_executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "-q", f"jax=={jax_version}",
                    f"jaxlib=={jax_version}", *(["ipykernel", "nbclient"] if kernel else [])],
                   check=True, timeout=600, env=env)
    return python, env


@pytest.mark.slow
@pytest.mark.parametrize("jax_version", [devices.OLDEST_JAX, devices.NEWEST_JAX])
def test_a_notebook_service_with_its_own_jax_runs_a_lesson_and_passes_every_check(
        tmp_path, jax_version, wheels):
    """On a service with the oldest or the newest JAX the course holds on (the README's range)
    and no course, run from a folder outside the repository: does the set-up cell install the
    course from where COURSE_SOURCE says and what the kernel lacks, at the lock's versions,
    keep the service's JAX, and then does lesson 1 run clean and every solved exercise of
    lesson 3 pass its check()?"""
    python, env = service(tmp_path, jax_version, wheels)
    lacking = "import importlib.util as u; print([u.find_spec(m) for m in {names}])"
    names = ["matplotlib", "ipywidgets", "rich", "orbax", "grader"]
    before = subprocess.run([python, "-c", lacking.format(names=names)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=True, timeout=120).stdout
    assert before.strip() == str([None] * len(names))
    cell = setup_cell()
    assert f'os.environ.get("{SOURCE_ENV}", published)' in cell
    folder = tmp_path / "notebooks"
    folder.mkdir()
    shutil.copyfile(ROOT / "notebooks" / "01_sharding.ipynb", folder / "01_sharding.ipynb")
    shutil.copyfile(ROOT / "solutions" / "03_collectives.ipynb", folder / "03_collectives.ipynb")
    said = execute(python, folder, ["01_sharding.ipynb", "03_collectives.ipynb"], env)
    first = said["01_sharding.ipynb"][0]
    assert first["source"] == cell  # what pip and grader.install print reaches the log only
    assert f"8 CPU devices (JAX {jax_version}; no GPU or TPU found)." in first["printed"]
    assert "This course needs" not in first["printed"]
    assert unexpected_errors(said) == []
    lesson_3 = [e.name for e in course.EXERCISES if e.lesson == "03_collectives"]
    assert all_passed(said["03_collectives.ipynb"], lesson_3) == []
    versions = subprocess.run(
        [python, "-c", "import jax, matplotlib, ipywidgets, rich, orbax.checkpoint as ocp; "
                       "from importlib.metadata import version; "
                       "print(jax.__version__, matplotlib.__version__, ipywidgets.__version__, "
                       "version('rich'), ocp.__version__)"],
        capture_output=True, text=True, env=env, check=True, timeout=120).stdout.split()
    locked = locked_lines()
    assert versions == [jax_version, *(locked[name][0].split("==")[1] for name in (
        "matplotlib", "ipywidgets", "rich", "orbax-checkpoint"))]
    # Run again, as a student reopening the notebook: nothing is fetched.
    again = subprocess.run([python, "-c", cell], cwd=folder, env=env, capture_output=True,
                           text=True, timeout=300)
    assert again.returncode == 0 and "installing" not in again.stdout, again.stderr


@pytest.mark.slow
def test_a_service_with_a_jax_older_than_the_course_holds_on_is_told_which_it_needs(
        tmp_path, wheels):
    """On a service whose JAX is older than the oldest the course holds on (the release before
    it), does the set-up cell say so in one line, first, naming the JAX the course needs?"""
    older = "0.9.2"
    assert devices.too_old(older) and not devices.too_old(devices.OLDEST_JAX)
    python, env = service(tmp_path, older, wheels, kernel=False)
    done = subprocess.run([python, "-c", setup_cell()], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if not line.startswith("installing")]
    assert said[0] == devices.LINE_JAX_TOO_OLD.format(oldest=devices.OLDEST_JAX, version=older)
