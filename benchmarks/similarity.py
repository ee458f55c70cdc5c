"""How long the similarity report of a batch takes, by class size.

    .venv/bin/python benchmarks/similarity.py [--students 20 50 100]

Each student hands in a complete answer to every exercise of lesson 3 (the assignment with the
most exercises): tests/alternatives.py, written apart from the reference solutions (which the
report sets aside), with every local name renamed for that student, so that every pair is
compared in full and flagged: the worst case, where the order-of-statements measure runs on
every pair. Prints, per class size, the wall time of
``similarity.find`` (what ``grade`` adds to a batch), the pairs compared and flagged, and the
time per pair. Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import ast
import tempfile
import time
from pathlib import Path

from grader import assignments
from grader.course import ROOT, SOLUTIONS
from grader.grading import similarity

ANSWERS = ROOT / "tests" / "alternatives.py"
ASSIGNMENT = "03_collectives"


class _Rename(ast.NodeTransformer):
    """Every name the solutions bind inside a function, suffixed (module names kept)."""

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id not in ("jax", "jnp", "np", "P", "Mesh", "NamedSharding", "partial"):
            node.id = f"{node.id}_{self.suffix}"
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = f"{node.arg}_{self.suffix}"
        return node


def a_class(folder: Path, students: int, exercises: tuple[str, ...]) -> dict[str, Path]:
    tree = ast.parse(ANSWERS.read_text())
    functions = [node for node in tree.body
                 if isinstance(node, ast.FunctionDef) and node.name in exercises]
    entries = {}
    for k in range(students):
        renamed = [_Rename(f"s{k}").visit(ast.parse(ast.unparse(f))) for f in functions]
        path = folder / f"student{k:03d}.py"
        path.write_text("\n\n".join(ast.unparse(t) for t in renamed))
        entries[path.stem] = path
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, nargs="+", default=[20, 50, 100])
    args = parser.parse_args()
    exercises = assignments.find(ASSIGNMENT).exercises
    similarity.find({}, exercises, SOLUTIONS)  # imports and the course's fingerprints, once
    print(f"{len(exercises)} exercises of {ASSIGNMENT}")
    for students in args.students:
        with tempfile.TemporaryDirectory() as folder:
            entries = a_class(Path(folder), students, exercises)
            start = time.perf_counter()
            pairs = similarity.find(entries, exercises, SOLUTIONS)
            seconds = time.perf_counter() - start
        compared = len(exercises) * students * (students - 1) // 2
        print(f"{students:4d} students: {seconds:7.2f} s, {compared} pairs compared, "
              f"{len(pairs)} flagged, {1e6 * seconds / max(compared, 1):.0f} µs per pair")


if __name__ == "__main__":
    main()
