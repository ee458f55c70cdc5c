"""The package's two sides: what a student's bundle holds never imports what only grading
uses, and no module imports itself round a circle."""

from __future__ import annotations

import ast
from pathlib import Path

from grader.authoring import release

ROOT = Path(__file__).resolve().parent.parent
#: The modules only grading uses, as dotted names: release's GRADER_ONLY and the hidden tests.
GRADING_SIDE = tuple(p.removesuffix(".py").replace("/", ".")
                     for p in (*release.GRADER_ONLY, "grader/hidden"))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path, root: Path) -> set[str]:
    """Every module of the course ``path`` imports, at its top or inside a function (lazy),
    as dotted names: ``from grader import x`` names ``grader.x`` where that is a module."""
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package that many levels up
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name == "grader" or name.startswith("grader.")}


def test_nothing_in_a_students_bundle_imports_the_grading_side(tmp_path):
    """Does no module of a released bundle import (lazily or not) a module of the workers,
    batch grading, authoring, the command line or the hidden tests, none of which the bundle
    holds?"""
    bundle = tmp_path / "bundle"
    release.release(bundle)
    modules = sorted(bundle.joinpath("grader").rglob("*.py"))
    assert any(p.name == "check.py" for p in modules)
    crossing = [f"{p.relative_to(bundle)} imports {name}" for p in modules
                for name in sorted(imported(p, bundle))
                if name == "grader.hidden" or name.startswith(GRADING_SIDE)]
    assert crossing == []


def test_the_rule_sees_a_lazy_import_across_the_line(tmp_path):
    """Does the walk find an import inside a function, and the ``from grader import`` and
    relative forms, so that the test above can fail?"""
    module = tmp_path / "grader" / "lessons" / "late.py"
    module.parent.mkdir(parents=True)
    module.write_text("def f():\n    from grader.workers.verifier import against\n"
                      "    from grader import grading\n    from ..hidden import prng\n")
    names = imported(module, tmp_path)
    assert {"grader.workers.verifier", "grader.grading", "grader.hidden.prng"} <= names


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module in ``graph`` (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_of_the_package_imports_itself_round_a_circle():
    """Counting lazy imports, does no group of the package's modules import each other in a
    loop (a sign that what two modules share belongs lower)?"""
    paths = sorted((ROOT / "grader").rglob("*.py"))
    known = {module_name(p, ROOT) for p in paths}
    graph = {module_name(p, ROOT): {n for n in imported(p, ROOT) if n in known}
             - {module_name(p, ROOT)} for p in paths}
    for name in graph:  # a package's __init__ is not a step of a circle through its modules
        graph[name] = {n for n in graph[name] if not name.startswith(n + ".")}
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles(graph) == []
