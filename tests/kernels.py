"""Notebooks executed in the kernel of another environment (a student's bundle, a notebook
service's Python), as its JupyterLab would run them: what each code cell raised and what each
``check(...)`` showed, read back as data."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from grader import messages

#: Run by that environment's own Python, with ipykernel and nbclient (what JupyterLab brings).
_EXECUTE = """
import json, sys
import nbclient, nbformat
said = {}
for path in sys.argv[1:]:
    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": "."}}).execute()
    cells = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        errors = [f"{o.ename}: {o.evalue}"[:300] for o in cell.outputs if o.output_type == "error"]
        shown = [o.data["text/plain"] for o in cell.outputs if "text/plain" in o.get("data", {})]
        printed = "".join(o.text for o in cell.outputs if o.output_type == "stream")
        cells.append({"index": index, "source": cell.source, "errors": errors, "shown": shown,
                      "printed": printed,
                      "expected": "raises-exception" in cell.metadata.get("tags", [])})
    said[path] = cells
print(json.dumps(said))
"""


def plain_env(home: Path) -> dict[str, str]:
    """A terminal's environment with nothing of the course's or the test run's: no
    PYTHONPATH, virtual environment, make, device set-up or warning filters; Jupyter's and
    IPython's folders under ``home``."""
    dropped = ("PYTHONPATH", "VIRTUAL_ENV", "MAKELEVEL", "MAKEFLAGS", "MFLAGS", "JAX_PLATFORMS",
               "XLA_FLAGS", "PYTHONWARNINGS")
    return {k: v for k, v in os.environ.items() if k not in dropped} | {
        "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTER_DATA_DIR": str(home / "data"),
        "IPYTHONDIR": str(home / "ipython")}


def make(folder: Path, *args: str, env: dict[str, str],
         timeout: float = 600) -> subprocess.CompletedProcess:
    """``make ARGS`` in ``folder`` (a student's bundle), quiet, in ``env``."""
    return subprocess.run(["make", "-s", "--no-print-directory", *args], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout)


def execute(python: Path | str, folder: Path, notebooks: list[str],
            env: dict[str, str]) -> dict[str, list[dict]]:
    """Execute ``notebooks`` (paths from ``folder``) one after another, each in a fresh kernel
    of ``python``; per notebook, its code cells: index, source, errors, what was shown and
    printed, and whether the cell is tagged to raise."""
    ran = subprocess.run([str(python), "-c", _EXECUTE, *notebooks], cwd=folder, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return json.loads(ran.stdout.strip().splitlines()[-1])


def unexpected_errors(said: dict[str, list[dict]]) -> list[tuple]:
    """Cells that raised without being tagged to, and tagged cells that did not raise."""
    return [(path, c["index"], c["errors"]) for path, cells in said.items() for c in cells
            if bool(c["errors"]) != c["expected"]]


def checks_shown(cells: list[dict]) -> dict[str, str]:
    """What each ``check(name)`` cell showed first, by exercise name."""
    return {c["source"].strip()[len("check("):-1]: (c["shown"] or [""])[0] for c in cells
            if c["source"].strip().startswith("check(")}


def all_passed(cells: list[dict], exercises: list[str]) -> list[str]:
    """The ``check`` cells of ``exercises`` that are missing or did not show "passed"."""
    shown = checks_shown(cells)
    return [f"{name}: {shown.get(name, 'no check cell')!r}" for name in exercises
            if not shown.get(name, "").startswith(f"{name}: {messages.PASSED} (")]
