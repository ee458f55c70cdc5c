"""``python -m grader.authoring.execute NOTEBOOK ...`` (``make lessons``): run a lesson top to
bottom in a fresh kernel, from the repository's root, and save it executed, as nbval and the
tests expect it; its stored tracebacks name files relative to the repository and to the
environment (``site-packages/jax/...``), never the folders of the machine it ran on.

Cells tagged ``raises-exception`` may raise; an error anywhere else stops the run and saves
nothing.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
#: Where a file of an environment lies, up to the folder a reader knows it by: an installed
#: package's (``.../site-packages/``) or the standard library's (``.../lib/python3.11/``).
_ENVIRONMENT = re.compile(r"(?:/[^/\s\"'\\\x1b]+)+/(site-packages/|lib/python3\.\d+/)")


def scrubbed(text: str, root: Path = ROOT) -> str:
    """``text`` with the repository's folder and any environment's folder left out."""
    return _ENVIRONMENT.sub(r"\1", text).replace(f"{root}/", "")


def scrub(notebook: nbformat.NotebookNode, root: Path = ROOT) -> nbformat.NotebookNode:
    """The notebook with every traceback scrubbed (nbval compares no traceback)."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                output["traceback"] = [scrubbed(line, root) for line in output["traceback"]]
    return notebook


def execute(path: Path, timeout: int = 600) -> None:
    """Run the notebook at ``path`` and save it executed and scrubbed."""
    import nbclient

    from grader.authoring.generate import LANGUAGE_INFO

    notebook = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT)}}).execute()
    notebook.metadata["language_info"] = dict(LANGUAGE_INFO)  # not this kernel's version
    nbformat.write(scrub(notebook), path)


if __name__ == "__main__":
    for name in sys.argv[1:]:
        print(f"executing {name}", flush=True)
        execute(Path(name))
