"""What a notebook service (Colab, Kaggle, a JupyterHub image) lacks for the course's helpers.

The set-up cell of every notebook installs the course's own package without its dependencies
where it is not importable, then runs ``python -m grader.install``: it installs, at the
versions ``uv.lock`` holds, only what a kernel needs and the service does not have. A JAX that
is there already is never replaced: the lessons run on the service's own JAX.

Standard library only: it runs before anything else is installed.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

#: What the course's helpers import in a kernel (module name: the requirement lines of
#: requirements.txt, markers included, so that pip picks the line for this Python).
#: tests/test_environment.py checks that they are the lock's.
KERNEL_NEEDS: dict[str, tuple[str, ...]] = {
    "jax": ("jax==0.10.2", "jaxlib==0.10.2"),
    "numpy": (
        "numpy==2.4.6 ; python_full_version < '3.12'",
        "numpy==2.5.5 ; python_full_version >= '3.12'",
    ),
    "matplotlib": ("matplotlib==3.11.2",),
    "ipywidgets": ("ipywidgets==8.1.9",),
    # jax.debug.visualize_array_sharding's tables (lesson 1): JAX does not depend on it.
    "rich": ("rich==15.0.0",),
    # Lesson 11's checkpoints. Colab's image has it already (its flax depends on it); where it
    # is missing, pip keeps the service's JAX: orbax-checkpoint asks only jax>=0.6.
    "orbax": ("orbax-checkpoint==0.12.8",),
}

NOTHING_MISSING = "the course's helpers have what they need: nothing installed"
INSTALLING = "installing what this kernel lacks: {names}"


def missing(needs: dict[str, tuple[str, ...]] = KERNEL_NEEDS) -> list[str]:
    """The requirement lines of every module in ``needs`` that cannot be imported here."""
    return [line for module, lines in needs.items()
            if importlib.util.find_spec(module) is None for line in lines]


def main() -> int:
    """Install what is missing with this Python's pip; say what was done."""
    lines = missing()
    if not lines:
        print(NOTHING_MISSING)
        return 0
    print(INSTALLING.format(names=", ".join(sorted({line.split("=")[0] for line in lines}))))
    # --no-warn-conflicts: the course was installed without its dependencies on purpose, and pip
    # would otherwise report every grading tool it lacks, and the service's JAX, as conflicts.
    return subprocess.call([sys.executable, "-m", "pip", "install", "-q", "--no-warn-conflicts",
                            *lines])


if __name__ == "__main__":
    sys.exit(main())
