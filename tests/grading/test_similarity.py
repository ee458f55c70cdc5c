"""The similarity report: a renamed copy and a padded copy are flagged, two independent correct
answers are not, nor what the course hands everyone; the report shows both sides."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
import stand_in

from grader.course import EXERCISES, SOLUTIONS
from grader.grading import grade, outputs, similarity, submission

FIXTURES = Path(__file__).resolve().parent.parent / "submissions" / "similar"
ROOT = FIXTURES.parents[2]
RING = "allreduce_from_ppermute"
LESSON_3 = [e.name for e in EXERCISES if e.lesson == "03_collectives"]


def a_class(folder: Path, files: dict[str, Path]) -> dict[str, Path]:
    """A submissions folder holding each file under a student's name."""
    folder.mkdir()
    entries = {}
    for name, source in files.items():
        target = folder / (name if source.is_dir() else f"{name}{source.suffix}")
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
        entries[name] = target
    return entries


def test_a_renamed_copy_and_a_padded_copy_are_flagged_an_independent_answer_is_not(tmp_path):
    """original.py's function renamed, recommented and reflowed (ben), and padded with a
    useless statement after every line (dan): are both paired with ada, and cy's
    independent answer with nobody?"""
    entries = a_class(tmp_path / "class", {
        "ada": FIXTURES / "original.py", "ben": FIXTURES / "renamed-copy.py",
        "cy": FIXTURES / "independent.py", "dan": FIXTURES / "padded-copy.py"})
    pairs = similarity.find(entries, [RING, "halo_difference"], SOLUTIONS)
    found = {p.students: p for p in pairs}
    assert set(found) == {("ada", "ben"), ("ada", "dan"), ("ben", "dan")}
    assert all(p.exercise == RING for p in pairs)
    assert found["ada", "ben"].shares == (1.0, 1.0)  # nothing of the renaming survives
    padded = found["ada", "dan"]
    assert max(padded.shares) < similarity.THRESHOLD  # the fingerprints alone miss it...
    assert padded.order[0] == 1.0 and padded.statements >= similarity.MIN_STATEMENTS  # not this


def test_every_statement_a_pair_is_listed_for_is_marked_or_shown_as_the_courses(tmp_path):
    """ada's every statement is in the padded copy in the same order (100%), where the
    fingerprints find a fifth of it: is each statement of ada's code, as she wrote it, either
    marked as found or shown in grey as the course's own code (once, pages said 100% found
    over lines left unmarked), her comments kept and unmarked, and does the page say what the
    two mean?"""
    entries = a_class(tmp_path / "class", {"ada": FIXTURES / "original.py",
                                           "dan": FIXTURES / "padded-copy.py"})
    (pair,) = similarity.find(entries, [RING], SOLUTIONS)
    assert pair.order[0] == 1.0 and max(pair.shares) < similarity.THRESHOLD
    code, spans, given = pair.code[0], pair.spans[0], pair.given[0]
    covered = {i for start, end in (*spans, *given) for i in range(start, end)}
    marked = {i for start, end in spans for i in range(start, end)}
    assert code == similarity.written(submission.load(entries["ada"]).sources, [RING])[RING]
    at = 0
    for line in code.splitlines(keepends=True):
        first = at + len(line) - len(line.lstrip())
        if line.strip().startswith("#"):
            assert first not in covered, line  # her comment: hers, neither found nor given
        elif line.strip() and not line.strip().startswith(('"""', ")")):
            assert first in covered, line  # every statement: found, or the course's
        at += len(line)
    assert given and len(marked) > len(code) // 4
    page = similarity.page([pair], "similarity.html")
    assert page.count("<mark") > 3 and 'class="given"' in page
    assert "100% of the statements (in order) found in the other" in page
    table = similarity.markdown([pair], "similarity.html")
    assert f"| `{RING}` | ada, dan | 22%, 18% | 100%, 42% |" in table


def test_two_independent_complete_submissions_are_not_flagged(tmp_path):
    """tests/alternatives.py and the example ada, both written independently and correct for
    every exercise of lesson 3, and the two other examples: is no pair listed?"""
    examples = ROOT / "examples" / "submissions"
    entries = a_class(tmp_path / "class", {
        "alt": ROOT / "tests" / "alternatives.py", "ada": examples / "ada",
        "ben": examples / "ben.ipynb", "cy": examples / "cy.ipynb"})
    assert similarity.find(entries, LESSON_3, SOLUTIONS) == []


def test_what_the_course_hands_everyone_is_not_similarity_but_a_copied_solution_is(tmp_path):
    """Two students who hand in the exercise notebook untouched and one who pasted the
    lesson's cells: nothing listed. Two who pasted the reference solution (public in the
    repository): each paired with the reference, on every exercise whose solution has enough
    lines of its own, and not with each other for sharing it."""
    notebook = ROOT / "exercises" / "03_collectives.ipynb"
    entries = a_class(tmp_path / "class", {
        "ann": notebook, "bob": notebook, "cid": ROOT / "notebooks" / "03_collectives.ipynb",
        "dee": ROOT / "solutions" / "03_collectives.ipynb",
        "eve": ROOT / "solutions" / "03_collectives.ipynb"})
    pairs = similarity.find(entries, LESSON_3, SOLUTIONS)
    reference = similarity.written(submission.load(SOLUTIONS).sources, LESSON_3)
    stubs = similarity.written(submission.load(notebook).sources, LESSON_3)
    given = {similarity.BEGIN, similarity.END}
    long_enough = {name for name, code in reference.items()  # less the stub's lines, markers
                   if len([line for line in similarity._lines(code) if line not in given
                           and line not in similarity._lines(stubs[name])])
                   >= similarity.MIN_STATEMENTS}
    assert len(long_enough) >= 6
    assert {p.students for p in pairs} == {("dee", similarity.REFERENCE),
                                           ("eve", similarity.REFERENCE)}
    assert {p.exercise for p in pairs if p.students[0] == "dee"} == long_enough
    assert all(p.shares == (1.0, 1.0) for p in pairs)


def test_pairs_of_students_come_first_and_reference_matches_fold_into_a_line_each():
    """A student's match with the reference (more alike than any pair, as a copy is) is
    listed after two students' pair, and a student matching it on two exercises is one line
    of the summary, naming both."""
    def pair(exercise, a, b, share):
        return similarity.Pair(exercise, (a, b), (share, share), 100, (share, share), 6,
                               ("x = 1", "x = 1"), ((), ()))

    pairs = [pair("halo_difference", "dee", similarity.REFERENCE, 1.0),
             pair(RING, "ann", "bob", 0.85),
             pair(RING, "dee", similarity.REFERENCE, 0.9)]
    table = similarity.markdown(pairs, "similarity.html").splitlines()
    rows = [line for line in table if line.startswith(("| `", "- "))]
    assert rows == [f"| `{RING}` | ann, bob | 85%, 85% | 85%, 85% | 100 |",
                    f"- dee: `{RING}` (90%), `halo_difference` (100%)"]
    page = similarity.page(pairs, "similarity.html")
    assert page.index("ann and bob") < page.index("dee and solutions/")
    alone = similarity.markdown(pairs[:1], "similarity.html")
    assert "No pair of students is that alike." in alone and "- dee: `halo_difference`" in alone


def test_a_copy_of_the_solution_with_names_and_comments_changed_is_not_a_copy_of_it():
    """The same steps in the student's own words (names, no comments) share the solution's
    statements, not its lines; the solution pasted with a comment and blank lines added and a
    line changed is still its copy."""
    model = similarity.written(submission.load(SOLUTIONS).sources, ["sharded_cumsum"])
    code = model["sharded_cumsum"]
    own = "\n".join(line.split("#")[0].rstrip() for line in code.splitlines())
    own = own.replace("running", "partial").replace("totals", "ends").replace("block", "b")
    pasted = code.replace("\n", "\n\n", 3).replace("return running +", "# mine\n"
                                                       "    return running +")
    found = similarity.copies({"own": {"sharded_cumsum": own},
                               "pasted": {"sharded_cumsum": pasted}}, model, {})
    assert [p.students for p in found] == [("pasted", similarity.REFERENCE)]


def test_functions_takes_the_last_definition_and_skips_what_does_not_parse():
    sources = [similarity.submission.Source("a", "a", "def f(x):\n    return 1\n"),
               similarity.submission.Source("b", "b", "def f(:\n"),
               similarity.submission.Source("c", "c", "%time x = 1\ndef f(y):\n"
                                            "    '''doc'''\n    return y  # two\n")]
    assert similarity.functions(sources, ["f"]) == {"f": "def f(y):\n    return y"}


class Text(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.tags: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.parts.append(data)


def test_grading_writes_the_pairs_in_the_summary_the_results_and_a_page(tmp_path, monkeypatch):
    """Does a batch list the pair in summary.md, results.json and similarity.html, with both
    functions shown and what they share marked?"""
    a_class(tmp_path / "class", {"ada": FIXTURES / "original.py",
                                 "ben": FIXTURES / "renamed-copy.py",
                                 "cy<b>": FIXTURES / "independent.py"})
    stand_in.use(monkeypatch)
    out = tmp_path / "out"
    grade.grade(tmp_path / "class", out, jobs=1)
    summary = (out / "summary.md").read_text()
    assert "## Similar code" in summary
    assert f"| `{RING}` | ada, ben | 100%, 100% | 100%, 100% |" in summary
    (pair,) = json.loads((out / "results.json").read_text())["similar"]
    assert pair["students"] == ["ada", "ben"]
    page = (out / outputs.SIMILARITY).read_text()
    parsed = Text(page)
    assert "mark" in parsed.tags and "script" not in parsed.tags
    text = "".join(parsed.parts)
    # as each wrote it: their quotes, their comments, two statements on one line
    assert 'travelling = jax.lax.ppermute(travelling, "around", pairs)' in text
    assert "devs = jax.devices(); n_dev = len(devs)  # how many there are" in text


def test_a_class_without_similar_code_says_so(tmp_path, monkeypatch):
    stand_in.use(monkeypatch)
    a_class(tmp_path / "class", {"ada": FIXTURES / "original.py",
                                 "cy": FIXTURES / "independent.py"})
    grade.grade(tmp_path / "class", tmp_path / "out", jobs=1)
    assert "No pair of submissions is that alike." in (tmp_path / "out" / "summary.md").read_text()
    assert "No pair" in (tmp_path / "out" / outputs.SIMILARITY).read_text()


def test_a_failing_report_costs_a_warning_not_the_grades(tmp_path, monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise RuntimeError("copydetect broke")

    monkeypatch.setattr(similarity, "find", broken)
    stand_in.use(monkeypatch)
    a_class(tmp_path / "class", {"ada": FIXTURES / "original.py"})
    assert [r.student for r in grade.grade(tmp_path / "class", tmp_path / "out", jobs=1)] == [
        "ada"]
    assert "the similarity report could not be made (RuntimeError('copydetect broke'))" in (
        capsys.readouterr().err)
    assert (tmp_path / "out" / "gradebook.csv").exists()


@pytest.mark.parametrize("code", ["def allreduce_from_ppermute(x):\n" + "    x = (" * 400
                                  + "1" + ")" * 400 + "\n", "def allreduce_from_ppermute(x):\n"
                                  + "    y = 1\n" * 5000])
def test_code_too_deep_or_too_long_is_left_out_not_a_crash(tmp_path, code):
    (tmp_path / "class").mkdir()
    (tmp_path / "class" / "eve.py").write_text(code)
    (tmp_path / "class" / "fay.py").write_text(code)
    entries = {p.stem: p for p in (tmp_path / "class").iterdir()}
    assert similarity.find(entries, [RING], SOLUTIONS) == []


def test_an_eleven_mib_file_is_compared_without_parsing_it_whole(tmp_path):
    """Two students hand in a copied function next to 11 MiB of code (under the 20 MiB a file
    may be): is the pair still found, by a grader whose memory stays under 400 MiB, where
    parsing that file whole would take gigabytes?"""
    import subprocess
    import sys

    function = (FIXTURES / "original.py").read_text()
    bulk = "numbers = [" + "1," * (11 * 2**19) + "]\n"
    for name in ("gus", "hal"):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "bulk.py").write_text(bulk)
        (tmp_path / "class" / name / "answer.py").write_text(function)
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from grader.course import SOLUTIONS\nfrom grader.grading import similarity\n"
        "entries = {p.name: p for p in Path(sys.argv[1]).iterdir()}\n"
        f"pairs = similarity.find(entries, [{RING!r}], SOLUTIONS)\n"
        "peak = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
        "print([p.students for p in pairs], int(peak) // 1024)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "class")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    students, peak_mib = done.stdout.rsplit(" ", 1)
    assert students == "[('gus', 'hal')]"
    assert int(peak_mib) < 400, peak_mib


def test_the_terminal_counts_pairs_of_students_not_pairs_of_functions(tmp_path, capsys):
    """One pair of students alike on three exercises read '3 pair(s) of submissions'; a
    student matching the reference was counted as a pair of students."""
    from grader import verbs

    pairs = [similarity.Pair(name, ("ann", "bob"), (1.0, 1.0), 100, (1.0, 1.0), 5,
                             ("a", "b"), ((), ())) for name in ("x", "y", "z")]
    copied = replace(pairs[0], students=("dee", similarity.REFERENCE))
    verbs._show([], [*pairs, replace(pairs[0], students=("ann", "cid")), copied], tmp_path)
    said = capsys.readouterr().out
    assert ("2 pair(s) of students with similar code (4 answer(s) alike in all, one per pair "
            "and exercise)" in said)  # the match with the reference is no pair of students
    assert "1 student(s) whose code holds the reference solution's own lines (1 answer(s))" in said
    verbs._show([], [copied], tmp_path)
    assert "pair(s) of students" not in capsys.readouterr().out
