"""First set-up time: what a new student waits for before the first lesson opens.

    python3 benchmarks/setup.py [--python python3.13] [--pip]

Copies the repository's committed files into a temporary folder (no .venv/, no build/) and
times ``make .venv/.installed`` there with empty caches (uv's and pip's), as on a machine that
never installed the course: uv fetched into build/uv/, then every package of uv.lock fetched
and installed. With ``--pip``, also the route the course took before the lock, for comparison:
a venv and ``pip install -e '.[grade,test]'``, which resolves every dependency anew.

It downloads everything each time (about 1 GB). Speed is measured here, never asserted in a
test.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="", help="the interpreter make is given "
                        "(default: the one make picks)")
    parser.add_argument("--pip", action="store_true",
                        help="also time pip install -e '.[grade,test]'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="course-setup-") as scratch:
        scratch = Path(scratch)
        copy, caches = scratch / "course", scratch / "caches"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(copy)], check=True)
        env = os.environ | {"UV_CACHE_DIR": str(caches / "uv"), "PIP_NO_CACHE_DIR": "1"}
        settings = [f"PYTHON={args.python}"] if args.python else []
        python = subprocess.run(["make", "-s", "python", *settings], cwd=copy, env=env,
                                check=True, capture_output=True, text=True).stdout.strip()
        seconds = timed(["make", ".venv/.installed", *settings], copy, env)
        print(f"{python}: make .venv/.installed, empty caches: {seconds:.1f} s")
        if args.pip:
            venv = scratch / "pip-venv"
            seconds = timed([python, "-m", "venv", str(venv)], copy, env)
            seconds += timed([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                              "-e", ".[grade,test]"], copy, env)
            print(f"{python}: venv + pip install -e '.[grade,test]', no cache: {seconds:.1f} s")


if __name__ == "__main__":
    sys.exit(main())
