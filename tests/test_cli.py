"""`python -m grader` on the command line: usage errors are one clear line, grading works."""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader import cli, verbs
from grader import messages as msg
from grader.course import EXERCISES
from grader.devices import WORKER_ENV
from grader.grading import grade, outputs, texts

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "submissions"
PREFIX = "python -m grader: error:"


def grader(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    env["JAX_PLATFORMS"] = "cpu"
    return subprocess.run(
        [sys.executable, "-m", "grader", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_usage_error(done: subprocess.CompletedProcess, prefix: str = PREFIX) -> str:
    """Exit code 2 and exactly one line on stderr, with no traceback; returns that line."""
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    return lines[0]


# --- usage errors ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["grade", str(EXAMPLES), "--out", "build/never-written", "--bogus"],
        ["frobnicate"],
        [],
    ],
    ids=["unknown-option", "unknown-option-after-grade", "unknown-verb", "no-verb"],
)
def test_unknown_options_and_verbs_are_one_line_errors(args):
    """Is an unknown option or verb one error line and exit code 2, not a usage dump?"""
    assert_usage_error(grader(*args))


def test_a_missing_submissions_folder_is_a_usage_error(tmp_path):
    """Does a submissions folder that does not exist give one error line naming it?"""
    missing = tmp_path / "nowhere"
    line = assert_usage_error(grader("grade", missing, "--out", tmp_path / "out"))
    assert str(missing) in line
    assert not (tmp_path / "out").exists()


def test_a_file_given_as_submissions_folder_is_a_usage_error(tmp_path):
    """Is a single notebook given where a folder is expected refused with one line?"""
    single = tmp_path / "ada.ipynb"
    single.write_text("{}")
    assert_usage_error(grader("grade", single, "--out", tmp_path / "out"))


def test_an_empty_submissions_folder_is_a_usage_error(tmp_path):
    """Does a folder with no submission in it (only non-code files) give one error line?"""
    empty = tmp_path / "submissions"
    empty.mkdir()
    (empty / "README.txt").write_text("nothing here")
    (empty / ".hidden.py").write_text("x = 1")
    line = assert_usage_error(grader("grade", empty, "--out", tmp_path / "out"))
    assert "no submission" in line


def test_an_out_path_that_is_a_file_is_a_usage_error(tmp_path):
    """Is an --out that is an existing file (so not writable as a folder) one error line?"""
    blocker = tmp_path / "gradebook"
    blocker.write_text("already a file")
    line = assert_usage_error(grader("grade", EXAMPLES, "--out", blocker))
    assert "cannot write" in line
    assert blocker.read_text() == "already a file"


def test_an_out_path_below_a_file_is_a_usage_error(tmp_path):
    """Is an --out whose parent is a file refused with one line?"""
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert_usage_error(grader("grade", EXAMPLES, "--out", blocker / "sub"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders anyway")
def test_an_out_folder_without_write_permission_is_a_usage_error(tmp_path):
    """Is an existing --out folder the user may not write into one error line?"""
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        line = assert_usage_error(grader("grade", EXAMPLES, "--out", locked))
    finally:
        locked.chmod(0o700)
    assert line == f"{PREFIX} cannot write to {locked}: Permission denied"


@pytest.mark.skipif(not Path("/sys").is_dir(), reason="no /sys")
def test_an_out_folder_nobody_may_create_is_a_usage_error():
    """Is an --out that even root cannot create (under /sys) one error line?"""
    line = assert_usage_error(grader("grade", EXAMPLES, "--out", "/sys/grader-out"))
    assert line.startswith(f"{PREFIX} cannot write to /sys/grader-out: ")


def test_an_out_folder_inside_the_submissions_is_a_usage_error(tmp_path):
    """Is an --out inside the submissions folder (where it would be graded as a student)
    refused with one line, before anything is written?"""
    batch = tmp_path / "class"
    shutil.copytree(EXAMPLES, batch)
    line = assert_usage_error(grader("grade", batch, "--out", batch / "grades"))
    assert "inside the submissions folder" in line
    assert not (batch / "grades").exists()


def test_an_unreadable_submissions_folder_is_a_usage_error(tmp_path, monkeypatch, capsys):
    """Is a submissions folder that cannot be listed one error line, not a traceback?"""
    def refuse(folder):
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(grade.submission, "discover", refuse)
    code = cli.main(["grade", str(tmp_path), "--out", str(tmp_path.parent / "out")])
    assert code == 2
    assert capsys.readouterr().err == (f"{PREFIX} cannot read the submissions folder "
                                       f"{tmp_path}: Permission denied\n")


@pytest.mark.slow
def test_an_interrupted_batch_stops_at_once_and_leaves_nothing_running(tmp_path):
    """Ctrl-C while the grader works: does it kill its workers, say what is kept and how to
    go on, and exit 130 within seconds, with no traceback and no process left behind? Is an
    entry that is not a submission named in a warning first?"""
    batch = tmp_path / "class"
    shutil.copytree(EXAMPLES, batch)
    (batch / "notes.txt").write_text("not a submission")
    scratch = tmp_path / "scratch"  # the workers' homes are made here: found by that path
    scratch.mkdir()
    env = {k: v for k, v in os.environ.items() if k != WORKER_ENV}
    env["TMPDIR"] = str(scratch)
    process = subprocess.Popen([sys.executable, "-m", "grader", "grade", str(batch), "--out",
                                str(tmp_path / "out")], cwd=ROOT, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not any(scratch.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(2)  # workers are starting JAX
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert time.monotonic() - interrupted < 20
    assert process.returncode == verbs.INTERRUPTED, err
    assert "Traceback" not in err
    assert err.splitlines() == [
        line for line in err.splitlines() if line.startswith("warning:")
    ] + [msg.INTERRUPTED.format(out=tmp_path / "out")]
    assert texts.WARN_IGNORED.format(count=1, ies="y", folder=batch, names="notes.txt") in err
    assert processes_using(scratch) == []


def processes_using(folder: Path) -> list[str]:
    """Processes whose command line names ``folder`` or whose working folder is inside it."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if os.fsencode(folder) in cmdline or cwd.startswith(str(folder)):
            found.append(proc.name)
    return found


@pytest.mark.parametrize("shard", ["2", "0/2", "3/2", "a/b", "1/0", ""])
def test_a_malformed_shard_is_a_usage_error(tmp_path, shard):
    """Is a --shard that is not K/N with 1 <= K <= N one error line, before any grading?"""
    out = tmp_path / "out"
    assert_usage_error(grader("grade", EXAMPLES, "--out", out, "--shard", shard))
    assert not out.exists()


def test_jobs_default_to_the_cores_this_process_may_use(tmp_path, monkeypatch):
    """Without --jobs, are as many submissions graded at once as there are cores available
    to the grader (and exactly --jobs with it)?"""
    asked = []
    monkeypatch.setattr(grade, "grade", lambda *args, **kwargs: asked.append(kwargs) or [])
    assert cli.main(["grade", str(EXAMPLES), "--out", str(tmp_path / "a")]) == 0
    assert cli.main(["grade", str(EXAMPLES), "--out", str(tmp_path / "b"), "--jobs", "3"]) == 0
    assert [kwargs["jobs"] for kwargs in asked] == [len(os.sched_getaffinity(0)), 3]
    assert grade.default_jobs() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    "option",
    [
        ["--jobs", "0"],
        ["--jobs", "-3"],
        ["--timeout", "0"],
        ["--timeout", "-1"],
        ["--timeout", "nan"],
        ["--timeout", "inf"],
        ["--total-timeout", "0"],
        ["--total-timeout", "nan"],
    ],
    ids=lambda option: " ".join(option),
)
def test_jobs_and_timeout_must_be_positive_and_finite(tmp_path, option):
    """Are a zero or negative --jobs, and a zero, negative, NaN or infinite --timeout or
    --total-timeout, one error line before any grading starts?"""
    out = tmp_path / "out"
    assert_usage_error(grader("grade", EXAMPLES, "--out", out, *option))
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ["grade", str(EXAMPLES)],
        ["grade", str(EXAMPLES), "--out", "build/x", "--jobs", "many"],
        ["grade", str(EXAMPLES), "--out", "build/x", "--timeout", "soon"],
    ],
    ids=["missing-out", "jobs-not-a-number", "timeout-not-a-number"],
)
def test_bad_grade_arguments_are_one_line_errors(args):
    """Is a missing or malformed argument of `grade` one error line with exit code 2?

    (These come from the `grade` sub-parser, whose name is `python -m grader grade`.)"""
    line = assert_usage_error(grader(*args), prefix="python -m grader")
    assert "error:" in line


@pytest.mark.parametrize(("files", "args", "says"), [
    ({}, ["--assignment", "prgn"], r"no assignment 'prgn' in \S*course.toml; its assignments: "
     "01_sharding, "),
    ({"course.toml": '[assignments.a]\nlessons = ["03_collectives"]\ndue = 2027-02-30\n'},
     ["--assignment", "a", "--config", "{dir}/course.toml"],
     r"{dir}/course.toml:3: due = 2027-02-30 is not a real date \(day is out of range for "
     r"month\)$"),
    ({"course.toml": 'timezone = "UTC"\n[assignments.a]\nlessons = ["03_collectives"]\n'
      'due = 2027-02-28\nlate = { percent_per_day = 10, cap = 5 }\n'},
     ["--assignment", "a", "--config", "{dir}/course.toml"],
     r"{dir}/course.toml:5: unknown key 'cap' in \[assignments.a.late\]"),
    ({"roster.csv": "name,id\nada,1\nben,2\nada,3\n"}, ["--roster", "{dir}/roster.csv"],
     r"{dir}/roster.csv:4: 'ada' is listed twice"),
    ({"roster.csv": "name,mail\nada,a@b\n"}, ["--roster", "{dir}/roster.csv"],
     r"{dir}/roster.csv:1: unknown column 'mail'"),
    ({"times.csv": "name,submitted_at\nada,friday\n"}, ["--times", "{dir}/times.csv"],
     r"{dir}/times.csv:2: 'friday' is not a date and time"),
    ({}, ["--student", "ada", "--shard", "1/2"], "--student regrades into a whole class"),
], ids=["unknown-assignment", "bad-date", "unknown-key", "duplicate-student",
        "unknown-column", "bad-time", "student-and-shard"])
def test_bad_course_roster_and_times_files_are_one_line_errors(tmp_path, files, args, says):
    """Is a mistake in course.toml, the roster or the times file one line naming the file and
    the line, before anything is graded or written?"""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "out"
    line = assert_usage_error(grader("grade", EXAMPLES, "--out", out,
                                     *(a.format(dir=tmp_path) for a in args)))
    assert re.search(says.format(dir=re.escape(str(tmp_path))), line), line
    assert not out.exists()


def test_help_exits_zero_and_lists_the_verbs():
    """Does --help print the usage with every verb and exit 0?"""
    done = grader("--help")
    assert done.returncode == 0, done.stderr
    for verb in ("grade", "merge", "export", "validate", "release", "generate",
                 "refresh-expected"):
        assert verb in done.stdout


def long_options(text: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]*", text)) - {"--help"}


@pytest.mark.parametrize("verb", ["grade", "merge", "export", "release"])
def test_the_instructors_synopsis_gives_exactly_the_options_of_the_command(verb):
    """Does the synopsis of each verb in docs/instructors.md (the command with its arguments
    as placeholders, `grade SUBMISSIONS`) name every option its --help lists, and no other?"""
    readme = (ROOT / "docs" / "instructors.md").read_text()
    synopsis = re.findall(rf"^ *\.venv/bin/python -m grader {verb} [A-Z].*?(?=\n *\.venv|\n *```)",
                          readme, re.M | re.S)[0]
    done = grader(verb, "--help")
    usage = done.stdout.split("\n\n", 1)[0]
    assert long_options(synopsis) == long_options(usage)


def test_grade_help_lists_its_options():
    """Does `grade --help` describe --out, --jobs and --timeout and exit 0?"""
    done = grader("grade", "--help")
    assert done.returncode == 0, done.stderr
    for option in ("--out", "--jobs", "--timeout", "--solutions", "--shard"):
        assert option in done.stdout


# --- grading for real -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def examples_graded(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The example submissions graded in one go, 2 at a time, as `make grade` does: lesson 3's
    assignment, the one they did."""
    out = tmp_path_factory.mktemp("grades")
    return grader("grade", EXAMPLES, "--out", out, "--jobs", "2", *ASSIGNMENT, timeout=900), out


ASSIGNMENT = ("--assignment", "03_collectives")


@pytest.mark.slow
def test_grading_the_examples_writes_a_gradebook_and_results(examples_graded):
    """Does grading the example submissions exit 0 and write a gradebook and results.json
    that agree, with lesson 3's exercises only, and ada (every one solved) ahead of the
    others?"""
    done, out = examples_graded
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr

    names = [e.name for e in EXERCISES if e.lesson == "03_collectives"]
    with (out / "gradebook.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["student", *names, *outputs.GRADEBOOK_TAIL]
    assert [row["student"] for row in rows] == ["ada", "ben", "cy"]

    report = json.loads((out / "results.json").read_text())
    students = report["students"]
    assert sorted(students) == ["ada", "ben", "cy"]
    assert report["exercises"] == names and report["assignment"] == "03_collectives"
    for row in rows:
        student = students[row["student"]]
        points = [float(row[name]) for name in names]
        assert sum(points) == pytest.approx(float(row["points"])), row
        assert float(row["total"]) == pytest.approx(student["final"]), row
        assert points == [student["exercises"][name]["points"] for name in names]
        assert row["standing"] == "on time" and row["days_late"] == "0"  # due in 2027
        for name in names:
            exercise = student["exercises"][name]
            assert {"points", "max_points", "status", "message"} <= set(exercise), name
            assert 0 <= exercise["points"] <= exercise["max_points"]
    ada = students["ada"]
    assert all(ada["exercises"][name]["status"] == "passed" for name in names)
    assert ada["total"] == ada["max_total"]
    assert all(s["total"] < ada["total"] for n, s in students.items() if n != "ada")
    assert "gradebook.csv" in done.stdout
    assert (out / "feedback" / "ben.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.slow
def test_off_a_terminal_each_student_is_one_line_and_the_summary_is_written(examples_graded):
    """With stdout not a terminal, is each student one line on stderr with done/total, and
    are the summary's figure and table written and its most failed exercises printed?"""
    done, out = examples_graded
    lines = sorted(line for line in done.stderr.splitlines() if line.startswith("graded "))
    assert [line.split()[1] for line in lines] == ["ada:", "ben:", "cy:"]
    assert sorted(line.rsplit(" ", 1)[1] for line in lines) == ["[1/3]", "[2/3]", "[3/3]"]
    # the instructors' page quotes ada's line: her points and the course's total must be these
    (quoted,) = re.findall(r"`(graded ada: \S+) \[\d/3\]`",
                           (ROOT / "docs" / "instructors.md").read_text())
    assert quoted == lines[0].rsplit(" ", 1)[0]
    assert "most failed (of the students who handed the exercise in):" in done.stdout
    assert (out / "summary.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "| `halo_difference` |" in (out / "summary.md").read_text()


@pytest.mark.slow
def test_two_slices_merged_equal_the_class_graded_in_one_go(examples_graded, tmp_path):
    """Grading the examples as --shard 1/2 and 2/2 and merging the two: are results.json,
    the gradebook, the feedback and the summary those of grading them in one go?

    Each slice starts from a copy of the whole class's output folder, so it reuses the stored
    results, as a rerun would: what is tested here is the slicing, the slices' outputs and the
    merge. (test_merge.py grades slices afresh, with a stand-in for the workers.)"""
    done, whole = examples_graded
    assert done.returncode == 0, done.stderr
    slices = [tmp_path / "one", tmp_path / "two"]
    for k, out in enumerate(slices, start=1):
        shutil.copytree(whole / ".results", out / ".results")
        part = grader("grade", EXAMPLES, "--out", out, "--jobs", "2", "--shard", f"{k}/2",
                      *ASSIGNMENT, timeout=900)
        assert part.returncode == 0, part.stderr
        assert sorted(line.split()[0] for line in part.stderr.splitlines()
                      if line.startswith(("kept ", "graded "))) == ["kept"] * (3 - k), \
            part.stderr[-2000:]
    assert sorted(json.loads((slices[0] / "results.json").read_text())["students"]) == [
        "ada", "cy"]
    assert sorted(json.loads((slices[1] / "results.json").read_text())["students"]) == ["ben"]
    merged = tmp_path / "merged"
    joined = grader("merge", *slices, "--out", merged)
    assert joined.returncode == 0, joined.stderr

    want = json.loads((whole / "results.json").read_text())
    got = json.loads((merged / "results.json").read_text())
    for student in ("ada", "ben", "cy"):
        assert got["students"][student] == want["students"][student], student
    assert got == want
    for name in ("gradebook.csv", "summary.md", "summary.png",
                 *(f"feedback/{s}.{x}" for s in ("ada", "ben", "cy") for x in ("md", "html"))):
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
