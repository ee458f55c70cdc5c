"""No notebook asserts on a program's raw text: a claim about a compiled (or lowered) program
reads it through the course's one reader, :mod:`grader.framework.hlo` (which the lessons import as
:mod:`grader.lessons.hlo`).

Raw text differs between backends where the program does not: XLA:GPU prints an all-reduce as
an ``all-reduce-start`` / ``all-reduce-done`` pair, calls a library for a matmul where the CPU
prints ``dot(``, and names instructions after their opcodes. An assert that searches the text
holds on the backend its author ran and fails on the next; the reader knows those forms.

What counts as raw text, read by following the notebook's code (every code cell, in order, one
namespace): the result of ``.as_text()``, ``.as_hlo_text()`` or ``compiled_text(...)``, and
everything computed from it other than through a reader (a name bound to it, a method called
on it, a function it is passed to, a container holding it, a loop over it, the result of a
function the notebook defines that returns it, or of a call given such a function, such as
``cluster.run``). An assertion (``assert``, or a call to a function whose name starts with
``assert``) may not use raw text. The reader's functions, called on raw text, give values that
are not raw text.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import nbformat
import pytest

from grader.framework import hlo
from grader.grading.similarity import without_magics

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("exercises/*.ipynb"),
                    *ROOT.glob("solutions/*.ipynb"), ROOT / "start_here.ipynb"])
#: What gives a program's raw text: methods of a lowered or compiled program, and the reader's
#: one function that returns text rather than reading it.
SOURCES = {"as_text", "as_hlo_text", "compiled_text"}
READERS = {name for name, value in vars(hlo).items() if not name.startswith("_")
           and (inspect.isfunction(value) or inspect.isclass(value))
           and value.__module__ == hlo.__name__} - SOURCES


def _called(node: ast.Call) -> str:
    function = node.func
    return (function.attr if isinstance(function, ast.Attribute)
            else function.id if isinstance(function, ast.Name) else "")


class RawText(ast.NodeVisitor):
    """Follows raw program text through one notebook's code and records each assertion that
    uses it, as (cell index, line, the assertion's source)."""

    def __init__(self) -> None:
        self.names: set[str] = set()  # names bound to raw text
        self.returning: set[str] = set()  # functions the notebook defines that return it
        self.found: list[tuple[int, int, str]] = []
        self.cell, self.source = 0, ""

    def raw(self, node: ast.AST | None) -> bool:
        """Does the value of ``node`` carry raw program text?"""
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Call):
            called = _called(node)
            if called in READERS:
                return False
            if called in SOURCES or called in self.returning:
                return True
            arguments = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(a, ast.Name) and a.id in self.returning for a in arguments):
                return True  # cluster.run(a function returning raw text)
            return self.raw(node.func) or any(self.raw(a) for a in arguments)
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        return any(self.raw(child) for child in ast.iter_child_nodes(node))

    def bind(self, target: ast.AST, raw: bool) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                (self.names.add if raw else self.names.discard)(node.id)

    def visit_Assign(self, node: ast.Assign) -> None:
        raw = self.raw(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name) or not raw:
                self.bind(target, raw)
            else:  # an element or attribute of a container takes raw text: the container holds it
                self.bind(target, True)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self.raw(node.value):
            self.bind(node.target, True)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.bind(node.target, self.raw(node.value))
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.bind(node.target, self.raw(node.value))
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self.bind(node.target, self.raw(node.iter))
        self.generic_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.bind(node.target, self.raw(node.iter))
        self.generic_visit(node)

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self.bind(node.optional_vars, self.raw(node.context_expr))
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        outer = set(self.names)
        self.names -= {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        self.generic_visit(node)
        returns = any(self.raw(n.value) for n in ast.walk(node)
                      if isinstance(n, (ast.Return, ast.Yield)))
        (self.returning.add if returns else self.returning.discard)(node.name)
        self.names = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assert(self, node: ast.Assert) -> None:
        self.report(node, node.test)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _called(node).startswith("assert"):
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                self.report(node, argument)
        self.generic_visit(node)

    def report(self, statement: ast.AST, value: ast.AST) -> None:
        if self.raw(value):
            self.found.append((self.cell, statement.lineno,
                               ast.get_source_segment(self.source, statement) or ""))

    def read(self, cells: list[str]) -> list[tuple[int, int, str]]:
        """Follow ``cells``, one code cell's source each, in order."""
        for self.cell, self.source in enumerate(cells):
            self.visit(ast.parse(self.source))
        return self.found


def code_cells(path: Path) -> list[str]:
    """The code cells of a notebook, indexed as in the notebook (other cells are empty), with
    IPython's magics and shell escapes blanked."""
    notebook = nbformat.read(path, as_version=4)
    return [without_magics(cell.source) if cell.cell_type == "code" else ""
            for cell in notebook.cells]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_notebook_asserts_on_a_programs_raw_text(path):
    """Does every assertion of the notebook read programs through grader.lessons.hlo?"""
    found = RawText().read(code_cells(path))
    assert found == [], "\n".join(f"cell {cell}, line {line}: {text}"
                                  for cell, line, text in found)


# What the rule must refuse and what it must let through, each as a notebook's cells.
REFUSED = {
    "a search of the compiled text": ['hlo = jax.jit(f).lower(x).compile().as_text()',
                                      'assert "all-reduce(" in hlo'],
    "a count, in one expression": ['assert compiled.as_text().count(" dot(") == 3'],
    "a local helper's result": ['largest = lambda t: max(re.findall("[0-9]+", t))',
                                'text = compiled_text(f, x)', 'assert largest(text) == 4'],
    "a line of the text": ['for line in compiled_text(f, x).splitlines():\n'
                           '    assert "-start(" not in line'],
    "a container holding it": ['d = {"dots": lowered.as_text().count("dot_general")}',
                               'assert d["dots"] == 2'],
    "an element bound later": ['found = {}', 'found["x"] = compiled_text(f, x)',
                               'assert "all-gather" in found["x"]'],
    "a child process's text": ['def child():\n    return {"hlo": compiled_text(f, x)}',
                               '[result] = cluster.run(child)', 'assert "dot(" in result["hlo"]'],
    "numpy's assertions": ['t = compiled_text(f, x)',
                           'np.testing.assert_equal(t.count("fusion"), 2)'],
}
ALLOWED = {
    "the reader's counts": ['hlo = compiled_text(f, x)',
                            'assert count_collectives(hlo)["all-reduce"] == 1'],
    "the reader's instructions": ['assert [c.op for c in collectives_in_hlo(hlo)] == []'],
    "a name bound again": ['text = compiled_text(f, x)', 'text = "a" * 3', 'assert "a" in text'],
    "a parameter of the same name": ['hlo = compiled_text(f, x)',
                                     'def f(hlo):\n    assert hlo > 0'],
    "text shown, not asserted": ['hlo = compiled_text(f, x)', 'print(hlo.count("dot("))'],
    "a child's reading": ['def child():\n    return len(collectives(f, x))',
                          '[n] = cluster.run(child)', 'assert n == 1'],
}


@pytest.mark.parametrize("cells", REFUSED.values(), ids=REFUSED)
def test_the_rule_refuses_each_way_of_reading_raw_text(cells):
    """Is an assertion on raw text found, however the text reached it?"""
    assert len(RawText().read(cells)) == 1


@pytest.mark.parametrize("cells", ALLOWED.values(), ids=ALLOWED)
def test_the_rule_lets_the_readers_results_through(cells):
    """Is an assertion on what the reader gives, or on no program's text, left alone?"""
    assert RawText().read(cells) == []
