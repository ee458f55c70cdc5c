"""Set-up: one list of dependencies, locked once for every supported Python, installed as
locked; the Pythons make accepts; the pinned JAX; the documented commands."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
ENVIRONMENT = yaml.safe_load((ROOT / "environment.yml").read_text())
#: Where make learns which Pythons it may use and which uv it fetches (the course's Makefile
#: and a student bundle's both include it).
MAKEFILE = (ROOT / "setup.mk").read_text()
#: Both make files: the course's targets are found in one or the other.
TARGETS = (ROOT / "Makefile").read_text() + MAKEFILE
#: The uv of this environment (pyproject's test extra): it reads the lock as `make` does.
UV = Path(sys.executable).parent / "uv"
#: How `make lock` exports the lock for the conda route.
EXPORT = ["export", "--frozen", "--no-hashes", "--no-emit-project"]


def make_variable(name: str) -> str:
    (value,) = re.findall(rf"^{name} := (.*)$", MAKEFILE, re.M)
    return value.strip()


SUPPORTED = make_variable("SUPPORTED").split()


def uv(*args: str) -> subprocess.CompletedProcess:
    if not UV.exists():
        pytest.fail(f"{UV} is missing: install the dev extra (make installs it)", pytrace=False)
    env = os.environ | {"UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1"}
    return subprocess.run([str(UV), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_make_supports_the_pythons_pyproject_allows():
    """Are make's SUPPORTED versions exactly the minor versions pyproject's requires-python
    admits (3.10 and 3.14 refused), listed in its classifiers, with ruff's target the
    oldest?"""
    allowed = SpecifierSet(PYPROJECT["project"]["requires-python"])
    admitted = [f"3.{minor}" for minor in range(6, 20) if f"3.{minor}.0" in allowed]
    assert sorted(SUPPORTED, key=lambda v: int(v.split(".")[1])) == admitted
    classifiers = [c.rsplit(" :: ", 1)[1] for c in PYPROJECT["project"]["classifiers"]
                   if c.startswith("Programming Language :: Python :: 3.")]
    assert sorted(classifiers) == sorted(SUPPORTED)
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py" + admitted[0].replace(".", "")
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in SUPPORTED


def test_the_lock_agrees_with_pyproject():
    """Does uv find uv.lock up to date with pyproject.toml (a dependency added, removed or
    re-pinned without `make lock` fails here), without asking the network?"""
    done = uv("lock", "--check", "--offline")
    assert done.returncode == 0, done.stderr


def test_requirements_txt_is_the_lock_exported():
    """Is requirements.txt, which the conda route installs, exactly what `make lock` exports
    from uv.lock?"""
    done = uv(*EXPORT)
    assert done.returncode == 0, done.stderr
    body = [line for line in done.stdout.splitlines() if not line.startswith("#")]
    committed = (ROOT / "requirements.txt").read_text().splitlines()
    assert [line for line in committed if not line.startswith("#")] == body


def test_environment_yml_installs_the_lock_on_a_supported_python():
    """Does the conda route take a supported Python from conda-forge, then the exported lock
    and the course itself, and nothing else?"""
    assert ENVIRONMENT["channels"] == ["conda-forge"]
    conda = [d for d in ENVIRONMENT["dependencies"] if isinstance(d, str)]
    pythons = [d.split("=", 1)[1] for d in conda if d.startswith("python=")]
    assert len(pythons) == 1 and pythons[0] in SUPPORTED
    assert "pip" in conda
    pip = next(d["pip"] for d in ENVIRONMENT["dependencies"] if isinstance(d, dict))
    assert pip == ["-r requirements.txt", "-e ."]


#: The extras the course's make installs (its Makefile's EXTRAS): not the nbgrader extra,
#: which only `make bench-nbgrader` adds.
COURSE_EXTRAS = re.findall(r"^EXTRAS := (.*)$", TARGETS, re.M)[0].split()


def test_this_environment_holds_exactly_the_locked_versions():
    """Is every package the lock gives this Python (with the extras make installs) installed
    at the locked version: what make installed is what CI tested?"""
    assert COURSE_EXTRAS == ["--extra", "grade", "--extra", "test"]
    done = uv(*EXPORT, *COURSE_EXTRAS)
    assert done.returncode == 0, done.stderr
    wrong = []
    for line in done.stdout.splitlines():
        if not line.strip() or line.startswith(("#", " ")):
            continue
        requirement = Requirement(line)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        (locked,) = [s.version for s in requirement.specifier]
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            installed = None
        if installed != locked:
            wrong.append(f"{requirement.name}: locked {locked}, installed {installed}")
    assert wrong == []


def test_a_student_install_holds_no_grading_or_test_tooling():
    """Does a student's install (pyproject's dependencies, no extra) leave out every package
    only grading or the tests name, and does every module of a student bundle import only the
    standard library, the course and what that install brings (lazy imports included)?"""
    from importlib.metadata import packages_distributions, requires

    from grader.authoring import release

    def name(requirement: str) -> str:
        return re.sub(r"[-_.]+", "-", Requirement(requirement).name).lower()

    base = {name(d) for d in PYPROJECT["project"]["dependencies"]}
    extras = {name(d) for group in PYPROJECT["project"]["optional-dependencies"].values()
              for d in group}
    assert base.isdisjoint(extras)
    installed, todo = set(), list(base)
    while todo:  # what the student install brings: the dependencies, and theirs
        found = todo.pop()
        if found in installed:
            continue
        installed.add(found)
        for line in requires(found) or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(name(line))
    provided = packages_distributions()
    grader_only = tuple(release.GRADER_ONLY) + ("grader/hidden",)
    wrong = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        where = path.relative_to(ROOT).as_posix()
        if where.startswith(grader_only):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) and not node.level
                     else [])
            for module in filter(None, names):
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in ("grader", "__future__"):
                    continue
                if not {name(d) for d in provided.get(top, [])} & installed:
                    wrong.append(f"{where} imports {module}")
    assert wrong == []


def test_make_fetches_the_uv_the_test_extra_pins():
    """Is the uv that make bootstraps the version pyproject's test extra (and so the lock)
    holds?"""
    pins = [Requirement(d) for d in PYPROJECT["project"]["optional-dependencies"]["test"]]
    (pinned,) = [str(r.specifier) for r in pins if r.name == "uv"]
    assert pinned == "==" + make_variable("UV_VERSION")


def test_the_installed_jax_is_the_pinned_one():
    """Is the suite running on the JAX version the course pins?"""
    pins = dict(d.split("==") for d in PYPROJECT["project"]["dependencies"] if "==" in d)
    assert pins["jax"] == pins["jaxlib"] == version("jax") == version("jaxlib")


def test_readme_quick_start_and_ci_use_the_make_targets():
    """Does the README give the three commands, and does CI run the README's test command?"""
    readme = (ROOT / "README.md").read_text()
    for target in ("lab", "test", "grade"):
        assert f"make {target}" in readme
        assert f"\n{target}: " in TARGETS
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "conda env create -f environment.yml" in readme


# --- which Python make builds .venv/ with ------------------------------------------------------
def find_python(tmp_path: Path, path: list[Path], *settings: str) -> subprocess.CompletedProcess:
    """``make -s python`` with only ``path`` to look in (and make itself), and no .venv/."""
    tools = tmp_path / "tools"
    tools.mkdir(exist_ok=True)
    if not (tools / "make").exists():
        (tools / "make").symlink_to(shutil.which("make"))
    env = {"PATH": os.pathsep.join(map(str, [tools, *path])), "HOME": str(tmp_path)}
    return subprocess.run(["make", "-s", "--no-print-directory", "python",
                           f"VENV={tmp_path / 'no-venv'}", *settings], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)


def fake_python(folder: Path, name: str, minor: int) -> Path:
    """A stand-in ``name`` that answers as Python 3.``minor`` does when make asks."""
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / name
    fake.write_text(f"#!/bin/sh\necho 3.{minor} {folder / 'real'}{minor}\n")
    fake.chmod(0o755)
    return fake


def test_make_takes_the_newest_supported_python_that_runs(tmp_path):
    """With only python3.13 on the PATH, or python3.11 and a python3.12 that does not run
    (a pyenv shim of a version not selected), does make pick the one that runs?"""
    only = tmp_path / "only"
    fake_python(only, "python3.13", 13)
    done = find_python(tmp_path, [only])
    assert (done.returncode, done.stdout.strip()) == (0, f"{only}/real13"), done.stderr
    mixed = tmp_path / "mixed"
    fake_python(mixed, "python3.11", 11)
    shim = "#!/bin/sh\necho 'pyenv: python3.12: command not found' >&2\nexit 127\n"
    (mixed / "python3.12").write_text(shim)
    (mixed / "python3.12").chmod(0o755)
    done = find_python(tmp_path, [mixed])
    assert (done.returncode, done.stdout.strip()) == (0, f"{mixed}/real11"), done.stderr


def test_this_python_is_one_make_would_take(tmp_path):
    """Does make accept the interpreter running these tests when named?"""
    done = find_python(tmp_path, [], f"PYTHON={sys.executable}")
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == Path(sys._base_executable).resolve()


def one_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0 and done.stdout == ""
    ours = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert len(ours) == 1, done.stderr
    return ours[0]


def test_no_supported_python_is_one_line(tmp_path):
    """With no Python on the PATH but an old one, is make's refusal one line that says how
    to name one?"""
    old = tmp_path / "old"
    fake_python(old, "python3.10", 10)
    (old / "python3").symlink_to(old / "python3.10")
    line = one_line(find_python(tmp_path, [old]))
    assert line.startswith(f"make: no Python {', '.join(SUPPORTED)} found")
    assert "make PYTHON=" in line


def test_an_unsuitable_python_named_is_one_line(tmp_path):
    """Is PYTHON naming an unsupported version, or nothing that runs, one line saying which?"""
    old = fake_python(tmp_path / "old", "python3.10", 10)
    line = one_line(find_python(tmp_path, [], f"PYTHON={old}"))
    assert line == f"make: PYTHON={old} is Python 3.10; the course runs on Python " \
                   f"{', '.join(SUPPORTED)}"
    line = one_line(find_python(tmp_path, [], "PYTHON=python9"))
    assert line == "make: PYTHON=python9 does not run"


def test_a_process_the_tests_start_fails_on_a_deprecation_warning():
    """Do the processes the tests start (notebook kernels among them) turn a
    DeprecationWarning of their own code into an error, as tests/conftest.py asks?"""
    code = "import warnings; warnings.warn('old', DeprecationWarning)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "DeprecationWarning: old" in done.stderr


#: Run as a worker runs (``python -I``, in the sandbox where there is one, as its user): import
#: what a worker, a verifier, a tester and a launched process of lesson 6 import, start JAX's
#: backend, and list the environment's source files Python compiled on the way.
COMPILES_OF_A_WORKER = """
import os, sys
environment = os.path.realpath(sys.prefix) + os.sep
compiled = []
def hook(event, args):
    if event == "compile" and isinstance(args[1], str) and args[1].endswith(".py") \\
            and os.path.realpath(args[1]).startswith(environment):
        compiled.append(args[1])
sys.addaudithook(hook)
import grader.workers.worker, grader.workers.verifier, grader.workers.tester
import grader.workers.launched, grader.framework.cases, grader.framework.probes
import grader.wire, grader.workers.replay
import jax, jax.numpy
jax.devices()
print(len(compiled), *compiled[:5])
"""


def test_a_worker_compiles_no_module_the_environment_already_had(tmp_path):
    """Workers and launched processes run read-only and write no bytecode: does the installed
    environment hold the bytecode of everything they import (make installs it compiled), so
    that none of them compiles JAX again at every start?"""
    from grader.workers.sandbox import Sandbox

    home = tmp_path / "home"
    home.mkdir()
    command = Sandbox().launch([sys.executable, "-I", "-B", "-c", COMPILES_OF_A_WORKER],
                               str(home))
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=home)
    assert done.returncode == 0, done.stderr[-2000:]
    count, *first = done.stdout.split()
    assert count == "0", (f"a worker compiled {count} of the environment's modules, e.g. "
                          f"{first}: install it with its bytecode (make does: uv sync "
                          "--compile-bytecode)")
