"""An instructor's week, as docs/instructors.md tells it, on what an instructor really gets:
the assignment released as a bundle, five students handing in what `make handin` packs (or
something else), Canvas's and Moodle's downloads built as those LMSs build them, then
`collect`, `grade` with the roster, one student regraded, a point taken by hand, and the
grades exported, each step through the command line, checked to the point and the column."""

from __future__ import annotations

import csv
import io
import json
import shutil
import zipfile
from pathlib import Path

import nbformat
import pytest
from kernels import make, plain_env
from test_cli import grader

from grader import assignments, course
from grader.authoring.release import release
from grader.framework import cases
from grader.grading import collect

ASSIGNMENT = assignments.find("03_collectives")
#: Every upload of the Canvas download is dated the day before the due date (2027-01-29):
#: by the times, everyone is on time.
UPLOADED = (2027, 1, 28, 12, 0, 0)
#: name, display name, Canvas's user id and sortable name, Moodle's participant id.
CLASS = [("ada", "Ada Lovelace", "101", "lovelaceada", "201"),
         ("ben", "Ben Babbage", "102", "babbageben", "202"),
         ("cy", "Cy Chen", "103", "chency", "203"),
         ("dee", "Dee Du", "104", "dudee", "204"),
         ("eve", "Eve Evans", "105", "evanseve", "205")]


def points(exercise: str) -> float:
    return sum(c.points for c in cases.load(hidden=True) if c.exercise == exercise)


TOP = sum(points(name) for name in ASSIGNMENT.exercises)
HALO = points("halo_difference")


def handed_in(bundle: Path, folder: Path, broken: bool = False) -> bytes:
    """What a student's `make handin` packs, in their copy of the bundle: the exercise
    notebook solved, or with halo_difference ``broken`` (defined again at the end, raising)."""
    shutil.copytree(bundle, folder)
    solved = nbformat.read(course.SOLUTIONS / "03_collectives.ipynb", as_version=4)
    if broken:
        solved.cells.append(nbformat.v4.new_code_cell(
            "def halo_difference(x):\n    raise NotImplementedError('later')"))
    nbformat.write(solved, folder / "exercises" / "03_collectives.ipynb")
    done = make(folder, "handin", env=plain_env(folder / "home"), timeout=120)
    assert done.returncode == 0, done.stderr
    return (folder / "handin.zip").read_bytes()


def dated(files: dict[str, bytes], when: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, when), data)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """The class's hand-ins: ada complete, ben with halo_difference raising, cy a zip with no
    notebook in it, dee a notebook cut short, eve complete but late (Canvas marks it; her
    zip dates its files a year early); and the roster."""
    tmp = tmp_path_factory.mktemp("week")
    bundle = tmp / "bundle"
    release(bundle, assignment=ASSIGNMENT)
    complete = handed_in(bundle, tmp / "ada")
    with zipfile.ZipFile(io.BytesIO(complete)) as packed:
        early = dated({n: packed.read(n) for n in packed.namelist()}, (2026, 1, 2, 3, 4, 5))
    uploads = {
        "ada": ("handin.zip", complete, False),
        "ben": ("handin.zip", handed_in(bundle, tmp / "ben", broken=True), False),
        "cy": ("handin.zip", dated({"notes.txt": b"I will hand it in later"}, UPLOADED), False),
        "dee": ("03_collectives.ipynb", b'{"cells": [{"cell_type": "co', False),  # cut short
        "eve": ("handin.zip", early, True),
    }
    roster = tmp / "roster.csv"
    roster.write_text("name,id,display_name,email,lms_id\n" + "".join(
        f"{name},s{i},{shown},{name}@example.org,{canvas}\n"
        for i, (name, shown, canvas, _, _) in enumerate(CLASS, start=1)))
    return tmp, bundle, uploads, roster


def canvas_download(path: Path, uploads: dict) -> Path:
    """Canvas's "Download Submissions": one flat zip, each upload named
    {sortable name}_[late_]{user id}_{file id}_{file name}."""
    files = {}
    for number, (name, _, canvas, sortable, _) in enumerate(CLASS):
        file, data, late = uploads[name]
        files[f"{sortable}_{'late_' if late else ''}{canvas}_{9000 + number}_{file}"] = data
    path.write_bytes(dated(files, UPLOADED))
    return path


def moodle_download(path: Path, uploads: dict) -> Path:
    """Moodle's "Download all submissions" in folders: {full name}_{participant id}_
    assignsubmission_file_/{file name}."""
    path.write_bytes(dated({f"{shown}_{moodle}_assignsubmission_file_/{uploads[name][0]}":
                            uploads[name][1] for name, shown, _, _, moodle in CLASS}, UPLOADED))
    return path


def table(path: Path) -> list[list[str]]:
    with path.open(newline="") as handle:
        return list(csv.reader(handle))


def by_student(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


@pytest.mark.slow
def test_a_week_from_the_lms_download_to_the_lms_import(week):
    tmp, _, uploads, roster = week
    subs, out = tmp / "submissions", tmp / "grades"
    done = grader("collect", canvas_download(tmp / "canvas.zip", uploads), "--to", subs,
                  "--roster", roster)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("5 student(s) from a Canvas download")
    assert sorted(p.name for p in subs.iterdir()) == ["ada", "ben", "cy", "dee", "eve",
                                                      "lms.csv"]
    assert list((subs / "cy").iterdir()) == []  # handed in, nothing to grade: not missing

    done = grader("grade", subs, "--out", out, "--assignment", ASSIGNMENT.name, "--roster",
                  roster, "--jobs", "2", timeout=1200)
    assert done.returncode == 0, done.stderr
    assert "left out" not in done.stderr  # lms.csv is collect's, not a stray entry
    book = by_student(out / "gradebook.csv")
    assert {n: (float(r["points"]), r["days_late"], float(r["total"]), r["standing"],
                r["hand_in"]) for n, r in book.items()} == {
        "ada": (TOP, "0", TOP, "on time", "read"),
        "ben": (TOP - HALO, "0", TOP - HALO, "on time", "read"),
        "cy": (0, "0", 0, "on time", "empty"),
        "dee": (0, "0", 0, "on time", "unreadable"),
        "eve": (TOP, "1", round(TOP * 0.9, 2), "late", "read")}  # Canvas's mark, 10% a day
    assert book["ben"]["halo_difference"] == "0"
    assert "Canvas marked it late" in (out / "feedback" / "eve.md").read_text()

    # ben hands in a fixed notebook: only he is graded again
    with zipfile.ZipFile(io.BytesIO(uploads["ada"][1])) as packed:
        packed.extractall(subs / "ben")
    done = grader("grade", subs, "--out", out, "--assignment", ASSIGNMENT.name, "--roster",
                  roster, "--student", "ben", timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"points changed for 1 of 1 student(s) graded again: ben {TOP - HALO:g} -> {TOP:g}" \
        in done.stdout
    # ada hard-coded her mesh shape, which no test saw: a point taken, with why
    (out / "adjustments.csv").write_text(
        "student,exercise,points,comment\nada,halo_difference,-1,hard-coded the mesh shape\n")
    done = grader("adjust", out)
    assert done.returncode == 0, done.stderr

    done = grader("export", out, "--format", "canvas")
    assert done.returncode == 0, done.stderr
    assert "cy, dee" in done.stderr  # their zeros are no answers
    assert table(out / "canvas.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT.name],
        ["Points Possible", "", "", "", "", f"{TOP:g}"],
        ["Ada Lovelace", "101", "s1", "", "", f"{TOP - 1:g}"],
        ["Ben Babbage", "102", "s2", "", "", f"{TOP:g}"],
        ["Cy Chen", "103", "s3", "", "", "0"],
        ["Dee Du", "104", "s4", "", "", "0"],
        ["Eve Evans", "105", "s5", "", "", f"{round(TOP * 0.9, 2):g}"]]
    assert grader("export", out, "--format", "moodle").returncode == 0
    moodle = {row[0]: row for row in table(out / "moodle.csv")[1:]}
    assert moodle["Cy Chen"][-1].endswith("nothing to grade in what was handed in")
    assert moodle["Dee Du"][-1].startswith("0 / ") and "could not be read" in moodle["Dee Du"][-1]
    assert grader("export", out, "--format", "csv").returncode == 0
    plain = by_student(out / "csv.csv")
    assert {n: (r["total"], r["standing"], r["hand_in"]) for n, r in plain.items()} == {
        "ada": (f"{TOP - 1:g}", "on time", "read"), "ben": (f"{TOP:g}", "on time", "read"),
        "cy": ("0", "on time", "empty"), "dee": ("0", "on time", "unreadable"),
        "eve": (f"{round(TOP * 0.9, 2):g}", "late", "read")}
    stored = json.loads((out / "results.json").read_text())["students"]
    assert stored["ada"]["exercises"]["halo_difference"]["status"] == "partial"


@pytest.mark.slow
def test_moodles_download_of_the_same_week_collects_the_same_files(week):
    """The same hand-ins from Moodle: the same folder per student, byte for byte, and no word
    on lateness (Moodle's download says none: grade needs --times for it)."""
    tmp, _, uploads, roster = week
    moodle_roster = tmp / "moodle-roster.csv"
    moodle_roster.write_text("name,lms_id\n" + "".join(f"{name},{moodle}\n"
                                                      for name, _, _, _, moodle in CLASS))
    canvas, moodle = tmp / "from-canvas", tmp / "from-moodle"
    assert grader("collect", canvas_download(tmp / "c.zip", uploads), "--to", canvas,
                  "--roster", roster).returncode == 0
    done = grader("collect", moodle_download(tmp / "m.zip", uploads), "--to", moodle,
                  "--roster", moodle_roster)
    assert done.returncode == 0 and done.stdout.startswith("5 student(s) from a Moodle"), done

    def files(folder: Path) -> dict[str, bytes]:
        return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*")
                if p.is_file() and p.name != collect.MANIFEST}

    assert files(moodle) == files(canvas) and len(files(canvas)) == 4  # cy's folder is empty
    assert collect.said_late(moodle) == {}
    assert collect.said_late(canvas)["eve"] == ("Canvas", True)


def test_the_week_is_what_the_instructors_guide_tells():
    """The commands the test above runs are the guide's: collect with a roster, grade with an
    assignment and the roster, --student, adjust, export."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "instructors.md").read_text()
    for command in ("grader collect submissions.zip --to submissions/ --roster roster.csv",
                    "grader grade submissions/ --out grades/ --assignment 03_collectives",
                    "--student ada", "grader adjust grades/",
                    "grader export grades/ --format canvas"):
        assert command in guide, command
