"""`collect`: Canvas's and Moodle's downloads of submissions unpacked into the folder `grade`
reads, one folder per student, with every entry not written listed and why, and the attacks a
zip can make (paths out of the folder, a bomb, a zip in a zip, names that are not UTF-8)."""

from __future__ import annotations

import csv
import io
import zipfile

import pytest

from grader import cli
from grader.grading import collect
from grader.grading.roster import Person, read_roster
from grader.grading.submission import MAX_FILE_BYTES

NOTEBOOK = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def handin(*names: str) -> bytes:
    """What `make handin` packs: the exercise notebooks under exercises/."""
    return zipped({f"exercises/{name}": NOTEBOOK + name.encode() for name in names})


def manifest(folder) -> list[dict[str, str]]:
    with (folder / "lms.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture
def canvas(tmp_path):
    """bob hands in handin.zip; jane uploads a notebook twice (Canvas's -1 copy) and late;
    a stray file lies beside them."""
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({
        "smithbob_12_100_handin.zip": handin("03_collectives.ipynb", "../../escape.ipynb"),
        "doejane_late_34_200_03_collectives.ipynb": NOTEBOOK + b"first",
        "doejane_late_34_201_03_collectives-1.ipynb": NOTEBOOK + b"second",
        "doejane_late_34_202_screenshot.png": b"\x89PNG",
        "notes.txt": b"not a submission",
    }))
    return path


def test_a_canvas_download_becomes_a_folder_per_student(canvas, tmp_path):
    out = tmp_path / "class"
    done = collect.collect(canvas, out)
    assert done.lms == "canvas"
    assert sorted(p.name for p in out.iterdir()) == ["doejane-34", "lms.csv", "smithbob-12"]
    assert sorted(p.name for p in (out / "smithbob-12").iterdir()) == [
        "03_collectives.ipynb", "escape.ipynb"]  # the path out of the folder kept inside
    assert not (tmp_path / "escape.ipynb").exists()
    jane = out / "doejane-34" / "03_collectives.ipynb"
    assert jane.read_bytes() == NOTEBOOK + b"second"  # the newer copy
    rows = manifest(out)
    assert [(r["name"], r["lms_id"], r["late"]) for r in rows if r["name"]] == [
        ("doejane-34", "34", "yes"), ("smithbob-12", "12", "")]
    left = {r["files"]: r["left_out"] for r in rows if not r["name"]}
    assert left == {
        "notes.txt": "named as no Canvas or Moodle submission is",
        "doejane_late_34_202_screenshot.png": "not a notebook or .py file",
        "doejane-34/03_collectives.ipynb":
            "an earlier copy, replaced by doejane_late_34_201_03_collectives-1.ipynb",
    }


def test_the_roster_names_a_student_by_lms_id(canvas, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,id,lms_id\nbob,s2,12\n")
    people = read_roster(roster)
    assert people["bob"] == Person("bob", "s2", lms_id="12")
    out = tmp_path / "class"
    collect.collect(canvas, out, people)
    assert (out / "bob" / "03_collectives.ipynb").exists()
    assert (out / "doejane-34").is_dir()  # not on the roster: named from the download


def test_a_roster_name_that_is_no_folder_name_is_not_used_as_one(canvas, tmp_path):
    out = tmp_path / "class"
    collect.collect(canvas, out, {"..": Person("..", lms_id="12")})
    assert (out / "smithbob-12").is_dir() and not (tmp_path / "03_collectives.ipynb").exists()


@pytest.mark.parametrize("in_folders", [True, False])
def test_a_moodle_download_in_folders_or_not(tmp_path, in_folders):
    glue = "/" if in_folders else ""
    path = tmp_path / "moodle.zip"
    path.write_bytes(zipped({
        f"Jane Doe_55_assignsubmission_file_{glue}handin.zip": handin("04_prng.ipynb"),
        f"Jane Doe_55_assignsubmission_onlinetext_{glue}onlinetext.html": b"<p>hi</p>",
        f"Ørjan Ås_56_assignsubmission_file_{glue}05_training.ipynb": NOTEBOOK,
    }))
    out = tmp_path / "class"
    done = collect.collect(path, out)
    assert done.lms == "moodle"
    assert (out / "jane-doe-55" / "04_prng.ipynb").exists()
    assert (out / "ørjan-ås-56" / "05_training.ipynb").exists()
    assert [r["left_out"] for r in manifest(out) if not r["name"]] == [
        "not a notebook or .py file"]


def test_a_zip_bomb_a_zip_in_a_zip_and_a_broken_zip_are_left_out_with_why(tmp_path):
    bomb = zipped({"exercises/03_collectives.ipynb": b" " * (MAX_FILE_BYTES + 1)})
    assert len(bomb) < 100_000  # small on the wire
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({
        "bombbob_1_1_handin.zip": bomb,
        "nestann_2_2_handin.zip": zipped({"inner.zip": handin("03_collectives.ipynb")}),
        "brokency_3_3_handin.zip": b"PK\x03\x04 not really",
    }))
    out = tmp_path / "class"
    done = collect.collect(path, out)
    why = dict(done.left_out)
    assert why["bombbob_1_1_handin.zip: exercises/03_collectives.ipynb"] == (
        "cannot be read (larger than 20 MiB)")
    assert why["nestann_2_2_handin.zip: inner.zip"] == "not a notebook or .py file"
    assert why["brokency_3_3_handin.zip"].startswith("a zip that cannot be read")
    assert sum(f.stat().st_size for f in out.rglob("*") if f.is_file()) < 10_000


def test_a_header_that_understates_the_size_is_not_believed(tmp_path, monkeypatch):
    """A notebook whose zip header says 10 bytes: no more is read, and what is read does not
    match the file's checksum, so it is left out, not written cut short."""
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({"liarbob_1_1_handin.zip": handin("03_collectives.ipynb")}))
    real_open = zipfile.ZipFile.open

    def lying_open(self, member, *args, **kwargs):
        if isinstance(member, zipfile.ZipInfo) and member.filename.endswith(".ipynb"):
            member.file_size = 10
        return real_open(self, member, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", lying_open)
    done = collect.collect(path, tmp_path / "class")
    ((entry, why),) = done.left_out
    assert entry == "liarbob_1_1_handin.zip: exercises/03_collectives.ipynb"
    assert why.startswith("cannot be read (Bad CRC-32")
    assert not (tmp_path / "class" / "liarbob-1").exists()


def test_a_name_that_is_not_utf8_is_read_as_zip_reads_it(tmp_path):
    """Without the zip's UTF-8 flag a name is read as code page 437, as zip says."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("m\xfcller_7_7_03_collectives.ipynb")  # read back as cp437
        archive.writestr(info, NOTEBOOK)
    raw = buffer.getvalue().replace("m\xfcller".encode("cp437"), b"m\x81ller")
    path = tmp_path / "submissions.zip"
    path.write_bytes(raw)
    out = tmp_path / "class"
    collect.collect(path, out)
    assert (out / "m\xfcller-7" / "03_collectives.ipynb").exists()


def test_a_folder_that_is_not_empty_or_a_file_that_is_no_zip_stops_before_anything(
        canvas, tmp_path):
    out = tmp_path / "class"
    out.mkdir()
    (out / "ann").mkdir()
    with pytest.raises(collect.CollectError, match="not an empty folder"):
        collect.collect(canvas, out)
    with pytest.raises(collect.CollectError, match="cannot be read as a zip"):
        collect.collect(tmp_path / "roster.csv", tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_the_command_line_says_what_it_did(canvas, tmp_path, capsys):
    roster = tmp_path / "roster.csv"
    roster.write_text("name,lms_id\nbob,12\n")
    assert cli.main(["collect", str(canvas), "--to", str(tmp_path / "class"),
                     "--roster", str(roster)]) == 0
    said = capsys.readouterr()
    assert said.out.startswith("2 student(s) from a Canvas download into")
    assert "3 entr(ies) of the download not written" in said.err
    assert "named from the download: doejane-34" in said.err
    assert cli.main(["collect", str(canvas), "--to", str(tmp_path / "class")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
