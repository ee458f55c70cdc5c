"""Pairs of submissions whose code for the same exercise is unusually alike.

For each exercise graded, each student's function (the last top-level ``def`` of that name in
what they handed in) is normalised and fingerprinted with copydetect: printed back from its
syntax tree (one layout and quoting, no comments, no docstrings), then reduced to its tokens
with every name replaced by one letter and every string by another, so renaming variables,
rewording comments or reflowing lines does not hide a copy. Fingerprints that the
course hands everyone are removed first: the exercise's stub, every code cell of the lessons,
and the reference solution (two students who both wrote the expected few lines are not
alike for that). Each pair is then scored by the share of each one's remaining code found in
the other's, and by the share of each one's statements found in the other's in the same
order (padding a copy with useless statements breaks its fingerprints, not that order). A pair
is listed when one of these shares reaches :data:`THRESHOLD` with enough in common
(:data:`MIN_SHARED` characters, or :data:`MIN_STATEMENTS` statements), so short answers that
everyone writes alike are never listed.

A function that holds the reference solution's own lines as they are written (names and
comments too, in order: :func:`copies`) is paired with the reference, :data:`REFERENCE`: the
solutions are public in the course's repository, and their statements alone are boilerplate.

It flags; it does not judge: the report shows the two functions side by side as the students
wrote them (names, comments and layout theirs), each statement marked whose normalised form was
found in the other, for a person to read. Student pairs come first; matches with the reference
come after them, one line per student in the summary.
"""

from __future__ import annotations

import ast
import html
import io
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import combinations
from pathlib import Path
from typing import Any

from grader import messages as msg
from grader.course import EXERCISE_NOTEBOOKS, LESSON_NOTEBOOKS
from grader.grading import safe, submission, texts
from grader.palette import STATUS_COLOURS

#: A pair is listed when one of its two shares of common code reaches this.
THRESHOLD = 0.8
#: ... and the two have at least this many characters of normalised code in common.
MIN_SHARED = 80
#: ... or one of the two has this share of its statements in the other's, in the same order,
#: and they have at least this many statements in common (padding a copy with useless
#: statements breaks up its fingerprints, not the order of what it copied).
MIN_STATEMENTS = 5
#: Fingerprints are hashes of this many characters of normalised code. Every one is kept (no
#: winnowing window), so the scores do not depend on the hash function, which Python salts
#: per process: the same class scores the same in every run and in every slice.
K = 25
WINDOW = 1
#: A function longer than this (normalised) is not compared: no exercise needs a tenth of it.
MAX_CHARACTERS = 20_000
#: A cell or file longer than this is not parsed: its syntax tree would cost the grader up to
#: about 500 bytes of memory per character (an 11 MiB file, gigabytes), and a function that
#: can be compared is a small part of this.
MAX_PARSED = 64 * 1024


@dataclass(frozen=True)
class Pair:
    """Two students' code for one exercise, and how much of it they share."""

    exercise: str
    students: tuple[str, str]
    #: For each of the two, the share of their (non-boilerplate) code found in the other's.
    shares: tuple[float, float]
    #: Characters of normalised code the two have in common.
    shared: int
    #: For each of the two, the share of their (non-boilerplate) statements found in the
    #: other's in the same order, and how many statements that is.
    order: tuple[float, float]
    statements: int
    code: tuple[str, str]
    #: For each of the two, the (start, end) character ranges of ``code`` found in the other.
    spans: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]
    #: For each of the two, the ranges of its lines written as the course's own code is
    #: (the stub, the lessons, the reference): set aside, neither counted nor marked as found.
    given: tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]] = ((), ())

    @property
    def score(self) -> float:
        return max(*self.shares, *self.order)

    def alike(self, threshold: float = THRESHOLD) -> bool:
        return ((max(self.shares) >= threshold and self.shared >= MIN_SHARED)
                or (max(self.order) >= threshold and self.statements >= MIN_STATEMENTS))

    def to_json(self) -> dict[str, Any]:
        return {"exercise": self.exercise, "students": list(self.students),
                "shares": list(self.shares), "shared": self.shared, "order": list(self.order),
                "statements": self.statements, "code": list(self.code),
                "spans": [[list(s) for s in side] for side in self.spans],
                "given": [[list(s) for s in side] for side in self.given]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Pair:
        a, b = data["students"]
        def ranges(sides: list) -> tuple:
            return tuple(tuple((int(s), int(e)) for s, e in side) for side in sides)

        return cls(str(data["exercise"]), (str(a), str(b)),
                   tuple(float(x) for x in data["shares"]), int(data["shared"]),
                   tuple(float(x) for x in data["order"]), int(data["statements"]),
                   tuple(str(c) for c in data["code"]), ranges(data["spans"]),
                   ranges(data.get("given", [[], []])))


def functions(sources: Iterable[submission.Source], names: Iterable[str]) -> dict[str, str]:
    """Each top-level function named in ``names`` (the last one defined wins, as when the
    cells run in order), as :func:`normalised` code; cells that do not parse, or are
    too long to (:data:`MAX_PARSED`), are skipped."""
    def printed(node: ast.AST, code: str) -> str | None:
        try:
            return normalised(node)
        except (RecursionError, MemoryError, ValueError):
            return None  # too deep to print back: nothing to compare

    return _defined(sources, names, printed)


def written(sources: Iterable[submission.Source], names: Iterable[str]) -> dict[str, str]:
    """Each top-level function named in ``names`` as it is written (comments, names and
    layout kept; the last one defined wins)."""
    return _defined(sources, names, lambda node, code: ast.get_source_segment(code, node))


def _defined(sources: Iterable[submission.Source], names: Iterable[str], read
             ) -> dict[str, str]:
    """``read(node, code)`` of each top-level function named in ``names`` (the last one
    defined wins), where it gives text of at most :data:`MAX_CHARACTERS`."""
    wanted = set(names)
    found: dict[str, str] = {}
    for source in sources:
        tree = _parse(source.code)
        for node in tree.body if tree else ():
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in wanted:
                text = read(node, without_magics(source.code))
                if text and len(text) <= MAX_CHARACTERS:
                    found[node.name] = text
    return found


def normalised(tree: ast.AST) -> str:
    """Code as Python prints it back from its syntax tree: one layout, one quoting, no
    comments and no docstrings (statements split by ``;`` on lines of their own), so that none
    of these hides a copy."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def _parse(code: str) -> ast.Module | None:
    """The syntax tree of ``code``, or None where it does not parse or is too long to parse
    (:data:`MAX_PARSED`)."""
    if len(code) > MAX_PARSED:
        return None
    try:
        return ast.parse(without_magics(code))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def without_magics(code: str) -> str:
    """IPython's ``%magic`` and ``!shell`` lines blanked, so that the rest parses."""
    return re.sub(r"(?m)^[ \t]*[%!].*$", "", code)


def find(entries: dict[str, Path], exercises: Sequence[str], solutions: Path,
         threshold: float = THRESHOLD) -> list[Pair]:
    """The pairs of students (``entries``: name -> entry of the submissions folder) whose
    code for one of ``exercises`` is alike, the most alike first."""
    from copydetect import compare_files  # slow to import: only when used

    given = [*submission.load(EXERCISE_NOTEBOOKS).sources,
             *submission.load(LESSON_NOTEBOOKS).sources, *submission.load(solutions).sources]
    boilerplate, common = _course("\n".join(
        normalised(tree) for s in given if (tree := _parse(s.code))))
    loaded = {name: submission.load(entry).sources for name, entry in sorted(entries.items())}
    codes = {name: functions(sources, exercises) for name, sources in loaded.items()}
    as_written = {name: written(sources, exercises) for name, sources in loaded.items()}
    pairs = copies(as_written, written(submission.load(solutions).sources, exercises),
                   written(submission.load(EXERCISE_NOTEBOOKS).sources, exercises), threshold)
    measured: dict[str, tuple] = {}  # a class hands in the same code many times

    def measure(code: str) -> tuple:
        if code not in measured:
            measured[code] = (_fingerprint(code, boilerplate), *_own_and_given(code, common))
        return measured[code]

    for exercise in exercises:
        prints = {name: (found[exercise], *measure(found[exercise]))
                  for name, found in codes.items() if exercise in found}
        for (a, one), (b, other) in combinations(prints.items(), 2):
            shared, shares, spans = compare_files(one[1], other[1])
            mine, theirs = ([shape for shape, _ in s[2]] for s in (one, other))
            # the statements in common, in any order, bound those in the same order: most
            # pairs are ruled out without counting the latter
            bound = sum((Counter(mine) & Counter(theirs)).values())
            lengths = min(len(mine), len(theirs)) or 1
            orderly = bound >= MIN_STATEMENTS and bound / lengths >= threshold
            together = _in_order(mine, theirs) if orderly else 0
            order = tuple(together / len(s) if s else 0.0 for s in (mine, theirs))
            pair = Pair(exercise, (a, b), (float(shares[0]), float(shares[1])), int(shared),
                        order, together, (one[0], other[0]), tuple(_ranges(s) for s in spans),
                        (one[3], other[3]))
            if pair.alike(threshold):
                # what is marked: the code both measures found, so that a pair listed for its
                # statements in order shows them (the fingerprints may share little of it)
                lines = _matched_in_order(mine, theirs) if together else ((), ())
                pair = replace(pair, spans=tuple(
                    (*fingerprinted, *(side[2][i][1] for i in matched))
                    for fingerprinted, side, matched in zip(pair.spans, (one, other), lines,
                                                            strict=True)))
                pairs.append(_as_written(pair, tuple(as_written[n].get(exercise)
                                                     for n in (a, b)), common))
    return sorted(pairs, key=listing_order)


def listing_order(pair: Pair) -> tuple:
    """Pairs of students first, the most alike first; then matches with the reference."""
    return (pair.students[1] == REFERENCE, -pair.score, -pair.shared, pair.exercise,
            pair.students)


def _as_written(pair: Pair, written_code: tuple[str | None, str | None],
                common: frozenset[str]) -> Pair:
    """``pair`` (scored on normalised code) shown as the two wrote it: each statement of
    their own function marked where its normalised form was found in the other, or grey where
    it is written as the course's own code is. A side whose function cannot be read back as
    written stays normalised."""
    sides = []
    for code, normal, spans, given in zip(written_code, pair.code, pair.spans, pair.given,
                                          strict=True):
        statements = _written_statements(code) if code else None
        if not statements:
            sides.append((normal, spans, given))
            continue
        found = {shape for shape, (start, end) in _statements(normal)
                 if any(start < e and s < end for s, e in spans)}
        sides.append((code, tuple(span for shape, span in statements if shape in found),
                      tuple(span for shape, span in statements
                            if shape not in found and shape in common)))
    code, spans, given = zip(*sides, strict=True)
    return replace(pair, code=tuple(code), spans=tuple(spans), given=tuple(given))


def _written_statements(code: str) -> list[tuple[str, tuple[int, int]]]:
    """The shape of each statement of ``code`` as normalised code shows it (a compound
    statement's head line alone), with the character range it is written on in ``code``
    (a compound statement: its first line)."""
    tree = _parse(code)
    if tree is None:
        return []
    lines = code.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def at(lineno: int, column: int) -> int:  # ast's columns count UTF-8 bytes
        line = lines[lineno - 1] if lineno <= len(lines) else ""
        return starts[lineno - 1] + len(line.encode()[:column].decode(errors="ignore"))

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        try:
            printed = ast.unparse(node).splitlines()
        except (RecursionError, ValueError):
            continue
        head = printed[len(getattr(node, "decorator_list", ()))] if printed else ""
        shape = next((shape for shape, _ in _statements(head)), "")
        start = at(node.lineno, node.col_offset)
        if hasattr(node, "body"):  # the head's first line
            end = starts[node.lineno - 1] + len(lines[node.lineno - 1].rstrip())
        else:
            end = at(node.end_lineno or node.lineno, node.end_col_offset or 0)
        if shape:
            found.append((shape, (start, end)))
    return found


def copies(students: dict[str, dict[str, str]], reference: dict[str, str],
           stubs: dict[str, str], threshold: float = THRESHOLD) -> list[Pair]:
    """Each student's function that holds the reference solution's own lines as they are
    written (names, comments and spacing within the line), in order: at least ``threshold``
    of them and :data:`MIN_STATEMENTS` lines, the stub's lines (its docstring) not counted.
    The reference is public in the course's repository; a student who wrote the same steps
    shares its statements, which the pairs leave out as what the course gives everyone, not
    its names and comments. Each is a :class:`Pair` with :data:`REFERENCE`."""
    found = []
    for exercise, model in reference.items():
        given = {*_lines(stubs.get(exercise, "")), BEGIN, END}
        own = [line for line in _lines(model) if line not in given]
        for student, functions in students.items():
            code = functions.get(exercise)
            if code is None or not own:
                continue
            theirs = [line for line in _lines(code) if line not in given]
            together = _in_order(theirs, own)
            if together < MIN_STATEMENTS or together / len(own) < threshold:
                continue
            share = together / len(theirs)
            found.append(Pair(exercise, (student, REFERENCE), (share, together / len(own)),
                              sum(len(line) for line in own if line in set(theirs)),
                              (share, together / len(own)), together, (code, model),
                              (_line_spans(code, set(own)), _line_spans(model, set(theirs)))))
    return found


#: The name the reference solution takes in a pair: no student's, since it holds a slash.
REFERENCE = "solutions/ (the reference)"
BEGIN, END = "# BEGIN SOLUTION", "# END SOLUTION"


def _lines(code: str) -> list[str]:
    return [line.strip() for line in code.splitlines() if line.strip()]


def _line_spans(code: str, lines: set[str]) -> tuple[tuple[int, int], ...]:
    """The character ranges of the lines of ``code`` that are among ``lines`` (stripped)."""
    spans, at = [], 0
    for line in code.splitlines(keepends=True):
        if line.strip() in lines:
            start = at + len(line) - len(line.lstrip())
            spans.append((start, at + len(line.rstrip())))
        at += len(line)
    return tuple(spans)


def _fingerprint(code: str, boilerplate=None):
    from copydetect import CodeFingerprint

    return CodeFingerprint("function.py", K, WINDOW, boilerplate=boilerplate,
                           fp=io.StringIO(code), language="python")


@lru_cache(maxsize=2)
def _course(code: str) -> tuple[Any, frozenset[str]]:
    """The fingerprints and the statement shapes of the code the course gives everyone (kept
    while it stays the same: the lessons are long). The fingerprints are a sorted array, which
    copydetect takes out of each function's as it is (as a list, it was converted and sorted
    again for every function: 60% of the time a class took)."""
    import numpy as np

    hashes = _fingerprint(code).hashes
    return np.sort(np.fromiter(hashes, dtype=np.int64, count=len(hashes))), frozenset(
        shapes(code))


#: Put between lines so that they can be told apart once normalised (newlines are dropped).
_LINE = "@@@"


def shapes(code: str) -> list[str]:
    """The shape of each line of normalised code (one statement, or a compound statement's
    head): its tokens with names and strings replaced, as the fingerprints see them."""
    return [shape for shape, _ in _statements(code)]


def _statements(code: str) -> list[tuple[str, tuple[int, int]]]:
    """The shape (see :func:`shapes`) and the character range of each line of ``code`` that
    is a statement (not a comment alone)."""
    spans, at = [], 0
    for line in code.splitlines(keepends=True):
        if line.strip():
            start = at + len(line) - len(line.lstrip())
            spans.append((start, at + len(line.rstrip())))
        at += len(line)
    lines = [code[start:end] for start, end in spans]
    from copydetect.utils import filter_code

    parts = filter_code(f"\n{_LINE}\n".join(lines), "lines.py", language="python")[0].split(
        _LINE)
    if len(parts) != len(spans):  # a string across lines (never in normalised code): no marks
        spans = [(0, 0)] * len(parts)
    return [(shape, span) for shape, span in zip(parts, spans, strict=True) if shape]


def _own_and_given(code: str, common: frozenset[str]) -> tuple[list, tuple]:
    """The (shape, range) of each statement of ``code`` not written as the course's own code
    is (``common``), and the ranges of those that are."""
    statements = _statements(code)
    return ([(shape, span) for shape, span in statements if shape not in common],
            tuple(span for shape, span in statements if shape in common))


def _matched_in_order(a: Sequence[str], b: Sequence[str]) -> tuple[list[int], list[int]]:
    """The indices in ``a`` and in ``b`` of one longest run of items the two have in common in
    the same order (:func:`_in_order` counts them)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) - 1, -1, -1):
        for j in range(len(b) - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if a[i] == b[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    i = j = 0
    mine, theirs = [], []
    while i < len(a) and j < len(b):
        if a[i] == b[j]:
            mine.append(i)
            theirs.append(j)
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return mine, theirs


def _in_order(a: Sequence[str], b: Sequence[str]) -> int:
    """How many items ``a`` and ``b`` have in common in the same order (their longest common
    subsequence)."""
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1],
                                                                      current[j]))
        previous = current
    return previous[-1]


def _ranges(slices) -> tuple[tuple[int, int], ...]:
    if len(slices) == 0 or len(slices[0]) == 0:
        return ()
    return tuple((int(s), int(e)) for s, e in zip(slices[0], slices[1], strict=True))


# --- the report: a table in the summary, and a page ------------------------------------------
def markdown(pairs: Sequence[Pair], page_name: str) -> str:
    """The section of ``summary.md``: one row per pair of students, the most alike first;
    then one line per student whose code holds the reference's own lines, naming each
    exercise where it does."""
    lines = ["## Similar code", "", texts.SIMILARITY_INTRO.format(
        threshold=THRESHOLD, shared=MIN_SHARED, page=page_name), ""]
    if not pairs:
        return "\n".join([*lines, texts.SIMILARITY_NONE]) + "\n"
    students = [p for p in sorted(pairs, key=listing_order) if p.students[1] != REFERENCE]
    if not students:
        lines.append(texts.SIMILARITY_NO_PAIR)
    else:
        lines += ["| exercise | students | share of each one's code in the other | "
                  "of its statements, in order | characters in common |",
                  "| --- | --- | ---: | ---: | ---: |"]
        lines += [f"| `{p.exercise}` | {safe.markdown(p.students[0])}, "
                  f"{safe.markdown(p.students[1])} | {p.shares[0]:.0%}, {p.shares[1]:.0%} | "
                  f"{p.order[0]:.0%}, {p.order[1]:.0%} | {p.shared} |" for p in students]
    copied: dict[str, list[Pair]] = {}
    for p in sorted(pairs, key=lambda p: (p.students[0], p.exercise)):
        if p.students[1] == REFERENCE:
            copied.setdefault(p.students[0], []).append(p)
    if copied:
        lines += ["", texts.SIMILARITY_REFERENCE, ""]
        lines += [f"- {safe.markdown(student)}: " + ", ".join(
            f"`{p.exercise}` ({p.order[1]:.0%})" for p in found)
            for student, found in copied.items()]
    return "\n".join(lines) + "\n"


def page(pairs: Sequence[Pair], page_name: str) -> str:
    """``similarity.html``: each pair's two functions side by side, what they share marked."""
    e = safe.html
    mark = STATUS_COLOURS[msg.PARTIAL]
    blocks = []
    for p in sorted(pairs, key=listing_order):
        sides = "".join(
            f"<div><h3>{e(student)}: {share:.0%} of the code and {order:.0%} of the "
            f"statements (in order) found in the other</h3>"
            f"<pre>{_marked(code, spans, given, mark)}</pre></div>"
            for student, share, order, code, spans, given in zip(
                p.students, p.shares, p.order, p.code, p.spans, p.given, strict=True))
        blocks.append(f"<section><h2><code>{e(p.exercise)}</code>: {e(p.students[0])} and "
                      f"{e(p.students[1])}</h2><div class='sides'>{sides}</div></section>")
    body = "".join(blocks) or f"<p>{e(texts.SIMILARITY_NONE)}</p>"
    intro = e(texts.SIMILARITY_INTRO.format(threshold=THRESHOLD, shared=MIN_SHARED,
                                            page=page_name))
    legend = (f'<p><mark style="background:{mark}55">Marked</mark>: found in the other. '
              f'<span class="given">In grey</span>: written as the course\'s own code '
              "(the stub, the lessons, the reference solution), which everyone has: neither "
              "counted nor marked.</p>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Similar code'
        f"</title><style>{_STYLE}</style></head><body><h1>Similar code</h1><p>{intro}</p>"
        f"{legend if blocks else ''}{body}</body></html>\n"
    )


def _marked(code: str, spans: Sequence[tuple[int, int]], given: Sequence[tuple[int, int]],
            colour: str) -> str:
    """``code`` as HTML, the ranges ``spans`` highlighted and the ranges ``given`` (what the
    course gives everyone) struck through where they are not highlighted."""
    style = [""] * len(code)
    for kind, ranges in (("given", given), ("found", spans)):
        for start, end in ranges:
            style[max(start, 0):min(end, len(code))] = [kind] * (min(end, len(code))
                                                                  - max(start, 0))
    tags = {"found": f'<mark style="background:{colour}55">', "given": '<span class="given">'}
    ends = {"found": "</mark>", "given": "</span>"}
    out, at = [], 0
    while at < len(code):
        kind, start = style[at], at
        while at < len(code) and style[at] == kind:
            at += 1
        text = html.escape(code[start:at])
        out.append(f"{tags[kind]}{text}{ends[kind]}" if kind else text)
    return "".join(out)


_STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:80rem;margin:2rem auto;padding:0 1rem}"
    # minmax(0, 1fr): a pane never grows past half the page for a long line, which scrolls
    ".sides{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:1rem}"
    "pre{background:#f6f6f6;padding:.5rem;overflow-x:auto;font-size:85%}"
    ".given{color:#9aa0a6}"
)
