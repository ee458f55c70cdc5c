"""``python -m grader.notebook_check NOTEBOOK...`` (``make check`` in a student bundle): the
public tests of every exercise of an exercise notebook, from a terminal.

The notebook's code cells run in order in this process, as a kernel would run them (what they
print is not shown; a cell that raises is named and skipped; their own ``check(...)`` calls
wait), then ``check`` runs once on each exercise of its lesson: the same tests as in
JupyterLab. Nothing here counts towards a grade.
"""

from __future__ import annotations

import contextlib
import io
import json
import linecache
import sys
from collections.abc import Sequence
from pathlib import Path

from grader import messages as msg
from grader.check import check, deferred
from grader.course import EXERCISES
from grader.devices import DEFAULT_DEVICES, use_cpu_devices


class NotChecked(Exception):
    """A notebook named that is no exercise notebook, or cannot be read: its one line."""


def check_notebook(path: Path) -> list[str]:
    """Run a notebook's code cells in order (what a cell prints is not shown; a cell that
    raises is named and skipped), then ``check`` each exercise of its lesson; returns the
    lines to print. Raises :class:`NotChecked` for a notebook that cannot be checked."""
    lesson = path.stem
    names = [e.name for e in EXERCISES if e.lesson == lesson]
    if not names:
        raise NotChecked(msg.CHECK_NOT_A_LESSON.format(path=path))
    try:
        cells = [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                 if c.get("cell_type") == "code"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NotChecked(msg.CHECK_UNREADABLE.format(path=path, why=exc)) from None
    lines, namespace = [f"{path}:"], {"__name__": "__main__"}
    for number, cell in enumerate(cells, start=1):
        source = cell.get("source", "")
        code = "".join(source) if isinstance(source, list) else str(source)
        where = f"{path.name}, code cell {number}"
        # kept where inspect finds it, as IPython keeps a cell: check sends a function's
        # source to the process of the grader's other device count
        linecache.cache[where] = (len(code), None, code.splitlines(True), where)
        try:
            with contextlib.redirect_stdout(io.StringIO()), deferred():
                exec(compile(code, where, "exec"), namespace)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - the student's cell, reported and skipped
            lines.append(msg.CHECK_CELL_RAISED.format(number=number, error=_one_line(exc)))
    passed = 0
    for name in names:
        found = namespace.get(name)
        if not callable(found):
            lines.append(f"  {name}: {msg.NOT_FOUND}")
            continue
        result = check(found)
        passed += result.status == msg.PASSED
        text = str(result)
        if result.status in (msg.PASSED, msg.NOT_ATTEMPTED, msg.NOT_FOUND):  # and its note
            text = "\n".join(line for i, line in enumerate(text.splitlines())
                             if i == 0 or line.lstrip().startswith("note:"))
        lines.append("  " + text.replace("\n", "\n  "))
    lines.append(msg.CHECK_SUMMARY.format(passed=passed, total=len(names)))
    return lines


def _one_line(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())[:300]


def main(argv: Sequence[str] | None = None) -> int:
    """The public tests of each exercise notebook named in ``argv``. Exits 2 if a notebook
    named could not be checked (missing, unreadable, not an exercise notebook), after the
    others, as the grader's commands do for input they cannot read; the tests' results,
    passed or not, are the notebook's lines, not an error."""
    paths = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print(msg.CHECK_USAGE, file=sys.stderr)
        return 2
    use_cpu_devices(DEFAULT_DEVICES)
    status = 0
    for path in paths:
        try:
            print("\n".join(check_notebook(path)), flush=True)
        except NotChecked as problem:
            print(problem, flush=True)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
