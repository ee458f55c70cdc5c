"""Set-up: one list of dependencies in two files, the pinned JAX, the documented commands."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
ENVIRONMENT = yaml.safe_load((ROOT / "environment.yml").read_text())


def conda_pip_entries() -> list[str]:
    return next(d["pip"] for d in ENVIRONMENT["dependencies"] if isinstance(d, dict))


def test_environment_yml_lists_exactly_the_pyproject_dependencies():
    """Does the conda route install the same packages as pip (plus the course itself)?"""
    pip = conda_pip_entries()
    assert "-e ." in pip
    assert sorted(e for e in pip if e != "-e .") == sorted(PYPROJECT["project"]["dependencies"])


def test_environment_yml_uses_conda_forge_and_the_same_python():
    """Is the conda Python the one pyproject.toml requires?"""
    assert ENVIRONMENT["channels"] == ["conda-forge"]
    conda = [d for d in ENVIRONMENT["dependencies"] if isinstance(d, str)]
    assert "python=3.11" in conda and "pip" in conda
    assert PYPROJECT["project"]["requires-python"] == ">=3.11,<3.12"


def test_the_installed_jax_is_the_pinned_one():
    """Is the suite running on the JAX version the course pins?"""
    pins = dict(d.split("==") for d in PYPROJECT["project"]["dependencies"] if "==" in d)
    assert pins["jax"] == pins["jaxlib"] == version("jax") == version("jaxlib")


def test_readme_quick_start_and_ci_use_the_make_targets():
    """Does the README give the three commands, and does CI run the README's test command?"""
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in ("lab", "test", "grade"):
        assert f"make {target}" in readme
        assert f"\n{target}: " in makefile
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    assert "conda env create -f environment.yml" in readme
