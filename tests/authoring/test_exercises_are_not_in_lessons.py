"""No exercise is a lesson's code retyped: the body of every reference solution must ask for
something the lessons did not write out.

Code is compared after normalising it, so that renaming variables does not hide a copy:

- each statement becomes one line; an assignment, a return or an expression statement stands
  for its value alone (``y = f(x)``, ``return f(x)`` and ``f(x)`` read the same); a compound
  statement (``if``, ``for``, ``with``, ...) is a line naming it, followed by its body;
- every name bound in the solution function or anywhere in the lesson notebook (assigned, a
  parameter, a loop variable, a function's name) becomes one placeholder, ``_``;
- strings, numbers, attributes and the names nothing binds (``jax``, ``P``,
  ``NamedSharding``: imports and builtins) are kept, since they are what a solution asks JAX
  to do.

A solution is a retyped lesson when its sequence of normalised statements appears,
contiguously and in order, among the statements of one lesson code cell or of the body of
one function a lesson defines.

A second, looser check measures how much of each solution a lesson cell holds, with the
fingerprints the grader's similarity report uses (names and strings normalised, see
:mod:`grader.grading.similarity`): the share of the solution's fingerprints found in the
closest lesson cell. Above :data:`CLOSE` a pair must be one a person read and accepted
(:data:`REVIEWED`) or an exercise waiting to be replaced (:data:`TO_REPLACE`); the closest
pairs are printed with the test's output (``pytest -rP``).
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader import course

#: One placeholder for every name the code binds.
PLACEHOLDER = "_"
#: IPython magics and shell lines, which are not Python.
MAGIC = re.compile(r"(?m)^[ \t]*[%!].*$")
BEGIN = "# BEGIN SOLUTION"

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


def parse_cell(source: str) -> ast.Module:
    """A code cell's syntax tree, its magic and shell lines left out."""
    return ast.parse(MAGIC.sub("", source))


def bound_names(tree: ast.AST) -> set[str]:
    """Every name ``tree`` binds: assigned or deleted, a parameter, a function or class name.
    Imports are not counted, so ``jax`` and ``P`` stay as they are written."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


#: Around a name in a normalised line until it is known whether the name is bound; no
#: Python code prints this character bare (a string holding it prints it escaped).
MARK = "\x00"
_MARKED = re.compile(f"{MARK}([^{MARK}]*){MARK}")


class _Marked(ast.NodeTransformer):
    """Marks every name, and replaces every parameter and every defined function's name by
    the placeholder; drops annotations (they do not change what code does)."""

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(f"{MARK}{node.id}{MARK}", node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return ast.copy_location(ast.arg(PLACEHOLDER), node)

    def _function(self, node: FunctionNode) -> FunctionNode:
        self.generic_visit(node)
        node.name, node.returns = PLACEHOLDER, None
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = _function


def _line(node: ast.AST) -> str:
    """``node`` printed back with its names marked (the tree itself is unchanged)."""
    return ast.unparse(_Marked().visit(copy.deepcopy(node)))


def _is_docstring(statement: ast.stmt) -> bool:
    return (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str))


def marked(body: Sequence[ast.stmt]) -> list[str]:
    """The statements of ``body`` as lines (see the module's docstring), compound statements
    followed by the lines of their bodies, docstrings left out, every name still marked."""
    lines: list[str] = []
    for statement in body:
        if _is_docstring(statement):
            continue
        value = getattr(statement, "value", None)
        if isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return,
                                  ast.Expr)) and value is not None:
            lines.append(_line(value))
        elif hasattr(statement, "body"):
            head = type(statement).__name__
            for field in ("test", "iter", "items", "subject"):
                part = getattr(statement, field, None)
                if isinstance(part, ast.AST):
                    head += " " + _line(part)
                elif part:  # a with statement's items
                    head += " " + ", ".join(_line(item.context_expr) for item in part)
            lines.append(head)
            lines += marked(statement.body)
            for handler in getattr(statement, "handlers", []):
                lines += marked(handler.body)
            for case in getattr(statement, "cases", []):
                lines += marked(case.body)
            lines += marked(getattr(statement, "orelse", []))
            lines += marked(getattr(statement, "finalbody", []))
        else:
            lines.append(_line(statement))
    return lines


def resolved(lines: Iterable[str], local: set[str] | frozenset[str]) -> list[str]:
    """Marked lines with the names of ``local`` replaced by the placeholder, the others
    written as they were."""
    return [_MARKED.sub(lambda m: PLACEHOLDER if m[1] in local else m[1], line)
            for line in lines]


def normalised(body: Sequence[ast.stmt], local: set[str] | frozenset[str]) -> list[str]:
    """The statements of ``body`` in the normal form, the names of ``local`` (the bound ones)
    replaced by the placeholder."""
    return resolved(marked(body), local)


def contains(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    """Whether ``needle`` appears in ``haystack`` as a contiguous run, in order."""
    size = len(needle)
    return any(list(haystack[i:i + size]) == list(needle)
               for i in range(len(haystack) - size + 1))


@dataclass(frozen=True)
class Lesson:
    """A lesson notebook's code: one syntax tree per code cell, and the names it binds."""

    name: str
    bound: frozenset[str]
    runs: tuple[tuple[str, ...], ...]
    """The marked statements of every code cell and of every function's body."""

    @classmethod
    def from_sources(cls, name: str, sources: Iterable[str]) -> Lesson:
        cells = [parse_cell(source) for source in sources]
        runs = []
        for cell in cells:
            runs.append(tuple(marked(cell.body)))
            runs += [tuple(marked(node.body)) for node in ast.walk(cell)
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return cls(name, frozenset(set().union(*map(bound_names, cells))), tuple(runs))

    @classmethod
    def read(cls, path: Path) -> Lesson:
        notebook = nbformat.read(path, as_version=4)
        return cls.from_sources(path.stem, [c.source for c in notebook.cells
                                            if c.cell_type == "code"])

    def sequences(self, local: set[str] | frozenset[str]) -> list[list[str]]:
        """The normalised statements of every code cell and of every function's body."""
        return [resolved(run, local) for run in self.runs]


def solution_functions(source: str) -> list[FunctionNode]:
    """The functions of a solution cell whose body holds a marked solution."""
    tree = ast.parse(source)
    return [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and BEGIN in (ast.get_source_segment(source, node) or "")]


def retyped_in(function: FunctionNode, lesson: Lesson) -> bool:
    """Whether the body of ``function`` is, once normalised, a run of statements of one of the
    lesson's cells or functions."""
    local = bound_names(function) | lesson.bound
    body = normalised(function.body, local)
    return bool(body) and any(contains(sequence, body) for sequence in lesson.sequences(local))


def retyped_solutions(solutions: Iterable[tuple[str, str]], lessons: Sequence[Lesson]
                      ) -> list[str]:
    """``"<function> in <lesson>"`` for every solution (notebook name, cell source) whose body
    a lesson already holds."""
    return [f"{function.name} in {lesson.name}"
            for _, source in solutions for function in solution_functions(source)
            for lesson in lessons if retyped_in(function, lesson)]


# --- the course --------------------------------------------------------------------------
def course_solutions() -> list[tuple[str, str]]:
    return [(path.name, cell.source) for path in sorted(course.SOLUTIONS.glob("*.ipynb"))
            for cell in nbformat.read(path, as_version=4).cells
            if cell.cell_type == "code" and BEGIN in cell.source]


def test_every_exercise_is_found_in_the_solutions():
    """Does the check see the solution of every exercise the course declares (so that an
    exercise it cannot read is not passed over)?"""
    found = {f.name for _, source in course_solutions() for f in solution_functions(source)}
    assert {e.name for e in course.EXERCISES} <= found


def test_no_solution_is_a_lesson_retyped():
    """Does every exercise ask for more than a lesson's cell or function with the names
    changed?"""
    lessons = [Lesson.read(p) for p in sorted(course.LESSON_NOTEBOOKS.glob("*.ipynb"))]
    assert lessons, "no lessons"
    assert retyped_solutions(course_solutions(), lessons) == []


# --- how much of a solution a lesson cell holds, fingerprinted ----------------------------
#: A solution whose share of fingerprints found in one lesson cell reaches this was read.
CLOSE = 0.45
#: A solution with fewer fingerprints than this is a line or two, which some lesson cell
#: always resembles (a pair of PartitionSpecs, a formula): not compared.
FEWEST = 20
#: Pairs above CLOSE that were read and are a new step all the same, and why.
REVIEWED = {
    "allreduce_from_ppermute": "lesson 9's ring passes blocks with ppermute; the exercise builds "
                               "a reduction out of that loop, which no lesson does",
    "moe_two_experts_per_device": "lesson 10's layer with one expert per device; two per "
                                  "device change every buffer's shape and the routing",
}
#: Exercises that are a lesson cell again (issue 32), to be replaced: when one is, its name
#: leaves this list, or the test fails.
TO_REPLACE: set[str] = set()


def closest_cells(solutions: Iterable[tuple[str, str]], lessons: dict[str, Sequence[str]]
                  ) -> list[tuple[float, str, str]]:
    """(share, solution, lesson cell) for every solution function with at least FEWEST
    fingerprints: the share of them found in the lesson code cell that holds the most, the
    closest first."""
    from copydetect import compare_files

    from grader.grading import similarity

    cells = [(f"{name} code cell {i + 1}", similarity._fingerprint(similarity.normalised(tree)))
             for name, sources in lessons.items() for i, source in enumerate(sources)
             if (tree := similarity._parse(source)) is not None]
    found = []
    for _, source in solutions:
        for function in solution_functions(source):
            print_ = similarity._fingerprint(similarity.normalised(function))
            if len(print_.hashes) < FEWEST:
                continue
            share, cell = max(((float(compare_files(print_, other)[1][0]), name)
                               for name, other in cells), default=(0.0, ""))
            found.append((share, function.name, cell))
    return sorted(found, reverse=True)


def test_every_solution_close_to_a_lesson_cell_was_read():
    """Is every solution that a lesson cell largely holds (fingerprinted, names and strings
    normalised) either reviewed as a new step or listed to be replaced, and no other?"""
    lessons = {p.stem: [c.source for c in nbformat.read(p, as_version=4).cells
                        if c.cell_type == "code"]
               for p in sorted(course.LESSON_NOTEBOOKS.glob("*.ipynb"))}
    closest = closest_cells(course_solutions(), lessons)
    print("the closest solutions to a lesson cell (share of fingerprints found in it):")
    for share, name, cell in closest[:12]:
        print(f"  {share:.2f}  {name:28} {cell}")
    close = {name for share, name, _ in closest if share >= CLOSE}
    assert close - REVIEWED.keys() - TO_REPLACE == set()  # a new one: read it
    assert TO_REPLACE - close == set()  # replaced: take it off the list
    assert REVIEWED.keys() <= close  # no longer close: take it off


def test_a_renamed_padded_copy_is_close_and_a_new_step_is_not():
    """Does the fingerprint check find a lesson function copied with new names and a useless
    statement added, and pass one that does something else with the same calls?"""
    lesson = {"lesson": [
        "def count_above(block, threshold):\n"
        "    local = jnp.sum(block > threshold)\n"
        "    total = jax.lax.psum(local, 'data')\n"
        "    return jax.lax.pcast(total, 'data', to='varying')\n"]}
    copied = solution("hits = jnp.sum(arr > grid)\nunused = 0\n"
                      "everyone = jax.lax.psum(hits, 'data')\n"
                      "return jax.lax.pcast(everyone, 'data', to='varying')")
    other = solution("order = jnp.argsort(arr)\nlargest = jax.lax.pmax(arr.max(), 'data')\n"
                     "return jnp.where(order < grid, arr / largest, 0.0)")
    shares = {name: share for share, name, _ in closest_cells(
        [("copied", copied.replace("exercise", "copied")),
         ("other", other.replace("exercise", "other"))], lesson)}
    print(shares)
    assert shares["copied"] >= CLOSE > shares["other"]


# --- the check itself ----------------------------------------------------------------------
LESSON_CELLS = [
    "%matplotlib inline\nimport jax\nfrom jax.sharding import NamedSharding\n"
    "from jax.sharding import PartitionSpec as P",
    'mesh = jax.make_mesh((4, 2), ("x", "y"))\nx = jax.numpy.ones((8, 4))\n'
    'x_xy = jax.device_put(x, NamedSharding(mesh, P("x", "y")))\nprint(x_xy.sharding)',
    "def stored_bytes(arr):\n    total = 0\n    for shard in arr.addressable_shards:\n"
    "        total += shard.data.nbytes\n    return total",
]


def solution(body: str, params: str = "arr, grid") -> str:
    """A solution cell whose function has ``body`` (indented by four spaces) as solution."""
    inner = "".join(f"    {line}\n" for line in body.splitlines())
    return (f'def exercise({params}):\n    """What to do."""\n    {BEGIN}\n{inner}'
            "    # END SOLUTION\n")


@pytest.mark.parametrize("body", [
    'return jax.device_put(arr, NamedSharding(grid, P("x", "y")))',
    'm = jax.make_mesh((4, 2), ("x", "y"))\nreturn jax.numpy.ones((8, 4))',
    "n = 0\nfor piece in arr.addressable_shards:\n    n += piece.data.nbytes\nreturn n",
], ids=["a-cell-line-renamed", "two-cell-lines-renamed", "a-function-body-renamed"])
def test_a_renamed_copy_of_a_lesson_is_caught(body):
    """Is a lesson's line, or a lesson function's body, caught with its names changed?"""
    lesson = Lesson.from_sources("lesson", LESSON_CELLS)
    assert retyped_solutions([("s", solution(body))], [lesson]) == ["exercise in lesson"]


@pytest.mark.parametrize("body", [
    'return jax.device_put(arr, NamedSharding(grid, P("y", "x")))',
    'spec = P(*reversed(arr.sharding.spec))\nreturn jax.device_put(arr, NamedSharding(grid, spec))',
    "n = 0\nfor piece in arr.addressable_shards:\n    n += piece.data.nbytes\n"
    "    print(piece.device)\nreturn n",
], ids=["another-spec", "unrelated-code", "a-function-body-with-more"])
def test_code_the_lessons_do_not_hold_passes(body):
    """Does code that differs in a string, an attribute or a statement pass?"""
    lesson = Lesson.from_sources("lesson", LESSON_CELLS)
    assert retyped_solutions([("s", solution(body))], [lesson]) == []


def test_the_normal_form_keeps_what_a_solution_asks_of_jax():
    """Are bound names one placeholder, and strings, attributes and imported names kept?"""
    tree = ast.parse('y = jax.device_put(x, NamedSharding(m, P("x")))\nreturn_value = y.T')
    assert normalised(tree.body, bound_names(tree) | {"x", "m"}) == [
        "jax.device_put(_, NamedSharding(_, P('x')))", "_.T"]
