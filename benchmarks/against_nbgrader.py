"""Grading speed side by side with nbgrader: one class, graded by both in one run.

    make bench-nbgrader [ARGS="--students 6 --ours /tmp/before/.venv/bin/python"]
    .venv/bin/python benchmarks/against_nbgrader.py [--students 6] [--jobs 2] [--ours PYTHON]

The class is benchmarks/grading.py's mixed class (solutions in the reference's and in other
styles, exercises not done, computed wrong, functions that crash their process), the same draw
every run.

nbgrader (0.9.6, the lock's ``nbgrader`` extra, which ``make`` never installs; ``make
bench-nbgrader`` adds it to .venv/) grades it as an instructor would set the course up for it:
one assignment of the ten solved notebooks, their solution cells marked as such, each
exercise's ``check()`` cell replaced by a locked autograder test cell worth the exercise's
points. The cell runs the exercise's tests, public and hidden, on the kernel's 8 devices (a
notebook runs in one kernel, so one device count; not the three of lesson 6 that replay the
student's cells in launched processes, which only a grader's worker can: 3 points),
judged by this grader's own judge (``grader.framework.compare.judge_here``, which also compares each
program with the reference's, as ``check()`` does), and outputs the points earned (nbgrader's
partial credit). The reference's outcomes the cells compare with are computed once before,
untimed (an nbgrader course keeps its expected values in its test cells). A student's change to
an exercise is a cell just before that exercise's test cell, and so is a crashing fixture.
nbgrader autogrades one student at a time, a fresh kernel per notebook, with no sandbox.

This grader grades the same class from its command line (``python -m grader grade``,
``--jobs``, sandboxed, on every device count the tests name, with the verifier): this
checkout's twice, first with its reference run in the time, then as a second batch of the same
grader, which reads the reference run the first kept (as a regrade or the next week's batch
does; the nbgrader side's expected values are computed before, untimed, too); and before it
each ``--ours`` Python's (the venv of another checkout, say the grader before a change; its
editable install decides which grader runs), with its reference run in the time.

Prints, for each: the wall time, exercises graded per second, the CPU-seconds the machine
spent busy per submission (/proc/stat: quiet the machine first), the mean points, the peak
memory of the grading process (VmHWM) and of its whole process tree (the sum of its
processes' resident memory, sampled every half second; nbgrader's tests run in its kernels,
this grader's in its workers). Speed is measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from grading import ROOT, Student, busy_cpu_seconds, mixed_class, mixed_students

from grader import course
from grader.course import EXERCISES, LESSONS
from grader.framework import cases
from grader.grading import reference_cache
from grader.workers import compiled

PEAK_MEMORY = ROOT / "benchmarks" / "peak_memory.py"
ASSIGNMENT = "course"
#: nbgrader's environment: its commands (it runs alembic by name) and, for the test cells, the
#: reference's outcomes.
NBGRADER_ENV = os.environ | {"PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
#: The environment variable naming the reference's outcomes for the test cells.
EXPECTED_ENV = "AGAINST_NBGRADER_EXPECTED"
#: A test cell of nbgrader's course: the points earned on the exercise's every test.
TEST_CELL = """# autograder test: every test of {name}, public and hidden, on this kernel's devices
import json as _json, os as _os
from grader.framework.compare import judge_here as _judge_here
from grader.framework.cases import for_exercise as _for_exercise
_wants = _json.loads(open(_os.environ["{env}"]).read())
_found = [c for c in _for_exercise("{name}") if c.id in _wants]
sum(r.points for r in _judge_here({name}, _found, {{c.id: _wants[c.id] for c in _found}}, 8))"""
CHECK_CELL = re.compile(r"^check\((\w+)\)\s*$")


def in_kernel(found: cases.Case) -> bool:
    """Whether a test can run in a notebook's kernel: not those of lesson 6 that replay the
    student's cells in launched processes (only a grader's worker keeps a record of them)."""
    return "replay(" not in inspect.getsource(found.probe)


def reference_outcomes(path: Path) -> None:
    """The reference's outcomes of every test a kernel can run, on 8 devices, with its
    programs' records, by case id (computed by grader workers, as ``refresh-expected``
    computes the public ones)."""
    from grader.authoring.refresh_expected import compute

    table = {}
    for lesson in LESSONS:
        for case_id, by_devices in compute(course.SOLUTIONS, lesson, hidden=True,
                                           device_counts=(8,)).items():
            table[case_id] = by_devices["8"]
    kept = {c.id for c in cases.load() if in_kernel(c)}
    path.write_text(json.dumps({k: v for k, v in table.items() if k in kept}))


def source_notebook(lesson: str) -> dict:
    """A solved lesson notebook as nbgrader's source: solution cells marked, each ``check()``
    cell a locked autograder test cell."""
    notebook = json.loads((course.SOLUTIONS / f"{lesson}.ipynb").read_text())
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        tested = CHECK_CELL.match(text)
        if tested:
            name = tested.group(1)
            points = sum(c.points for c in cases.for_exercise(name) if in_kernel(c))
            cell["source"] = TEST_CELL.format(name=name, env=EXPECTED_ENV)
            cell["metadata"]["nbgrader"] = _cell_kind(f"test_{name}", grade=True, points=points)
        elif "BEGIN SOLUTION" in text:
            cell["metadata"]["nbgrader"] = _cell_kind(f"solution_{lesson}_{index}", solution=True)
    return notebook


def _cell_kind(grade_id: str, grade: bool = False, solution: bool = False,
               points: float = 0) -> dict:
    kind = {"grade": grade, "solution": solution, "locked": grade, "task": False,
            "grade_id": grade_id, "schema_version": 3}
    return kind | ({"points": points} if grade else {})


def submitted_notebook(source: dict, student: Student, imports: str) -> dict:
    """What the student hands in to nbgrader: the source with each change (and a crashing
    fixture's function) in a cell just before its exercise's test cell."""
    crash = (ROOT / "tests" / "submissions" / student.crash).read_text() if student.crash else ""
    cells = []
    for cell in source["cells"]:
        name = cell["metadata"].get("nbgrader", {}).get("grade_id", "")[len("test_"):]
        if cell["metadata"].get("nbgrader", {}).get("grade"):
            if name in student.changes:
                cells.append(_code(imports + "\n" + student.changes[name]))
            if re.search(rf"^def {name}\(", crash, re.MULTILINE):
                cells.append(_code(crash))
        cells.append(cell)
    return source | {"cells": cells}


def _code(text: str) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
            "source": text}


def nbgrader_course(root: Path, drawn: list[Student], imports: str) -> None:
    """nbgrader's course folder: its config, the source assignment (released, which records
    its test cells in the gradebook) and every student's submission."""
    root.mkdir()
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        "c.CourseDirectory.course_id = 'jax-distributed'\n"
        "c.Execute.timeout = 300\n")
    sources = {lesson: source_notebook(lesson) for lesson in LESSONS}
    for lesson, notebook in sources.items():
        path = root / "source" / ASSIGNMENT / f"{lesson}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(notebook))
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT,
                    "--force"], cwd=root, env=NBGRADER_ENV, check=True, capture_output=True)
    for student in drawn:
        folder = root / "submitted" / student.name / ASSIGNMENT
        folder.mkdir(parents=True)
        for lesson, notebook in sources.items():
            submitted = submitted_notebook(notebook, student, imports)
            (folder / f"{lesson}.ipynb").write_text(json.dumps(submitted))


def nbgrader_points(root: Path, drawn: list[Student]) -> tuple[float, list[str]]:
    """The mean points nbgrader gave, and the students it stopped grading: when a kernel
    dies, nbgrader gives up on the rest of the student's assignment (that notebook and the
    ones after it count 0) and removes its autograded copy."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root}/gradebook.db", "jax-distributed") as book:
        scores = {s.student.id: s.score for s in book.assignment_submissions(ASSIGNMENT)}
    lost = [s.name for s in drawn if not (root / "autograded" / s.name / ASSIGNMENT).exists()]
    return sum(scores.values()) / len(drawn), lost


def our_points(out: Path) -> float:
    with open(out / "gradebook.csv", newline="") as table:
        rows = list(csv.DictReader(table))
    return sum(float(row["points"]) for row in rows) / len(rows)


def timed(python: str, command: list[str], cwd: Path, env: dict[str, str],
          may_fail: bool = False) -> dict[str, float]:
    """Run ``command`` with ``python`` through peak_memory.py; its wall time, the machine's
    busy CPU, its own peak memory and its process tree's. It must succeed unless
    ``may_fail`` (nbgrader exits 1 when it could not grade a student)."""
    tree = TreePeak()
    cpu_before, start = busy_cpu_seconds(), time.perf_counter()
    process = subprocess.Popen([python, str(PEAK_MEMORY), *command], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tree.follow(process.pid)
    _, err = process.communicate()
    wall, cpu = time.perf_counter() - start, busy_cpu_seconds() - cpu_before
    tree.stop()
    if process.returncode and not may_fail:
        raise SystemExit(f"{' '.join(command)} failed ({process.returncode}):\n{err[-3000:]}")
    peak = next(int(line.split()[1]) for line in err.splitlines()
                if line.startswith("peak-rss-kib"))
    return {"wall": wall, "cpu": cpu, "peak": peak / 1024, "tree": tree.peak / 1024}


class TreePeak:
    """The largest sum of resident memory (KiB) of a process and its descendants, sampled."""

    def __init__(self) -> None:
        self.peak, self._done = 0, threading.Event()

    def follow(self, pid: int) -> None:
        threading.Thread(target=self._sample, args=(pid,), daemon=True).start()

    def stop(self) -> None:
        self._done.set()

    def _sample(self, root: int) -> None:
        page = os.sysconf("SC_PAGE_SIZE") // 1024
        while not self._done.wait(0.5):
            parents, rss = {}, {}
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    with open(f"/proc/{entry.name}/stat") as stat:
                        fields = stat.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                parents[int(entry.name)] = int(fields[1])
                rss[int(entry.name)] = int(fields[21]) * page
            tree, grown = {root}, True
            while grown:
                more = {pid for pid, parent in parents.items() if parent in tree} - tree
                tree |= more
                grown = bool(more)
            self.peak = max(self.peak, sum(rss.get(pid, 0) for pid in tree))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--ours", action="append", default=[], metavar="PYTHON",
                        help="another checkout's Python whose grader grades the class too")
    parser.add_argument("--keep", type=Path, metavar="FOLDER",
                        help="work in FOLDER (made if missing) and leave it there: nbgrader's "
                             "course and this grader's outputs, to read; the reference's "
                             "outcomes found there are not computed again")
    args = parser.parse_args()
    graded = args.students * len(EXERCISES)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        for made in ("nbgrader", "class", *(f"out{i}" for i in range(len(args.ours) + 2))):
            shutil.rmtree(tmp / made, ignore_errors=True)
        tmp.mkdir(parents=True, exist_ok=True)
        drawn, kinds, imports = mixed_students(args.students)
        print(f"mixed class: {args.students} students, {graded} exercises: "
              + ", ".join(f"{n} {kind}" for kind, n in kinds.items()), flush=True)
        if not (tmp / "expected.json").exists():
            start = time.perf_counter()
            reference_outcomes(tmp / "expected.json")
            print(f"the nbgrader test cells' reference outcomes: "
                  f"{time.perf_counter() - start:.1f} s (untimed)", flush=True)
        nbgrader_course(tmp / "nbgrader", drawn, imports)
        env = NBGRADER_ENV | {EXPECTED_ENV: str(tmp / "expected.json")}
        got = timed(sys.executable, ["-m", "nbgrader", "autograde", ASSIGNMENT],
                    tmp / "nbgrader", env, may_fail=True)
        points, lost = nbgrader_points(tmp / "nbgrader", drawn)
        rows.append(("nbgrader 0.9.6 (8 devices, 1 at a time)", got, points))
        print(_row(*rows[-1], graded, args.students), flush=True)
        if lost:
            print(f"  nbgrader stopped grading {', '.join(lost)} where a kernel died: the rest "
                  "of the assignment counts 0", flush=True)

        batch = tmp / "class"
        batch.mkdir()
        mixed_class(batch, args.students)
        # This grader's first batch runs the reference and keeps it; its second batch, as a
        # regrade or next week's class would, reads it (grader/grading/reference_cache.py).
        cache = Path(tempfile.mkdtemp(prefix="against-nbgrader-cache-"))
        cache.chmod(0o755)  # reachable by the workers' user of a grader started by root
        env = dict(os.environ) | {reference_cache.FOLDER_ENV: str(cache / "kept")}
        try:
            runs = [(p, "") for p in args.ours] + [(sys.executable, ", reference run"),
                                                   (sys.executable, ", reference kept")]
            for i, (python, which) in enumerate(runs):
                out = tmp / f"out{i}"
                got = timed(python, ["grade", str(batch), "--out", str(out), "--jobs",
                             str(args.jobs)], tmp, env)
                name = "this grader" if python == sys.executable else f"grader of {python}"
                rows.append((f"{name}{which} (--jobs {args.jobs})", got, our_points(out)))
                print(_row(*rows[-1], graded, args.students), flush=True)
        finally:
            compiled.remove(cache)
    print(f"\n{'':44} {'wall s':>8} {'ex/s':>7} {'CPU-s/sub':>9} {'points':>7} "
          f"{'peak MiB':>8} {'tree MiB':>8}")
    for row in rows:
        print(_row(*row, graded, args.students))
    print(f"points of {sum(c.points for c in cases.load())} (nbgrader: of "
          f"{sum(c.points for c in cases.load() if in_kernel(c))}, without the tests only a "
          f"grader's worker can run); cores: {os.cpu_count()}, "
          "load average now: "
          + " ".join(f"{a:.2f}" for a in os.getloadavg()))


def _row(name: str, got: dict[str, float], points: float, graded: int, students: int) -> str:
    return (f"{name:44} {got['wall']:8.1f} {graded / got['wall']:7.3f} "
            f"{got['cpu'] / students:9.1f} {points:7.1f} {got['peak']:8.0f} {got['tree']:8.0f}")


if __name__ == "__main__":
    main()
