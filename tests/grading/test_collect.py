"""`collect`: Canvas's and Moodle's downloads of submissions unpacked into the folder `grade`
reads, one folder per student, with every entry not written listed and why, and the attacks a
zip can make (paths out of the folder, a bomb, a zip in a zip, names that are not UTF-8)."""

from __future__ import annotations

import bz2
import csv
import io
import random
import struct
import zipfile
import zlib
from datetime import datetime

import pytest

from grader import cli
from grader.grading import collect
from grader.grading.roster import Person, read_roster
from grader.grading.submission import MAX_FILE_BYTES

NOTEBOOK = b'{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}'


def zipped(files: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
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
        ("doejane-34", "34", "yes"), ("smithbob-12", "12", "no")]
    assert {r["files"]: r["whose"] for r in rows if not r["name"]} == {
        "notes.txt": "", "doejane_late_34_202_screenshot.png": "doejane-34",
        "doejane-34/03_collectives.ipynb": "doejane-34"}  # whose each entry left out was
    left = {r["files"]: r["left_out"] for r in rows if not r["name"]}
    assert left == {
        "notes.txt": "not named as Canvas names the entries of a submission",
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
    assert list((tmp_path / "class" / "liarbob-1").iterdir()) == []


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


# --- the download as untrusted input: an attack per test, each refused -----------------------
def raw_zip(entries: list[tuple[str, bytes, int]]) -> bytes:
    """A zip of (name, data, method) entries written byte by byte, so that an entry may be
    compressed once and stored many times (zipfile compresses each anew), or with bzip2."""
    local, central = io.BytesIO(), io.BytesIO()
    packed: dict[tuple[int, int], tuple[bytes, int]] = {}
    for name, data, method in entries:
        key = (id(data), method)
        if key not in packed:
            if method == zipfile.ZIP_BZIP2:
                packed[key] = (bz2.compress(data), zlib.crc32(data))
            elif method == zipfile.ZIP_DEFLATED:
                squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
                packed[key] = (squeeze.compress(data) + squeeze.flush(), zlib.crc32(data))
            else:
                packed[key] = (data, zlib.crc32(data))
        body, crc = packed[key]
        raw = name.encode()
        fields = (method, 0, 0x21, crc, len(body), len(data), len(raw))  # time 0:00, 1980-01-01
        offset = local.tell()
        local.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 46, 0x800, *fields, 0) + raw + body)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 46, 46, 0x800, *fields,
                                  0, 0, 0, 0, 0, offset) + raw)
    count, start = len(entries), local.tell()
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, central.tell(), start, 0)
    return local.getvalue() + central.getvalue() + end


def test_an_uploaded_file_name_never_names_another_student(tmp_path):
    """Moodle writes "{name}_{id}_assignsubmission_file_" before each file; a student whose
    own file name holds another student's mark is still themself, and it lands in their own
    folder (read as the other's, a zz_*.py would run after the other's notebook and replace
    their functions)."""
    path = tmp_path / "moodle.zip"
    path.write_bytes(zipped({
        "Bob Good_22_assignsubmission_file_03_collectives.ipynb": NOTEBOOK + b"bob's",
        "Eve Evil_11_assignsubmission_file_x_22_assignsubmission_file_zz.py": b"def f(): 0",
    }))
    out = tmp_path / "class"
    collect.collect(path, out)
    assert [p.name for p in (out / "bob-good-22").iterdir()] == ["03_collectives.ipynb"]
    assert [p.name for p in (out / "eve-evil-11").iterdir()] == [
        "x_22_assignsubmission_file_zz.py"]


def test_a_canvas_download_is_read_as_canvas_whatever_one_upload_is_named(tmp_path):
    """One Canvas upload named as Moodle names its entries leaves the download Canvas's, every
    student collected; a download of both kinds of entry is refused, unless --lms says which
    LMS wrote it (the others then left out, with why)."""
    canvas = {"smithbob_12_100_03_collectives.ipynb": NOTEBOOK,
              "evileve_13_101_x_1_assignsubmission_file_y.ipynb": NOTEBOOK}
    path = tmp_path / "canvas.zip"
    path.write_bytes(zipped(canvas))
    done = collect.collect(path, tmp_path / "class")
    assert done.lms == "canvas" and sorted(done.students) == ["evileve-13", "smithbob-12"]
    mixed = tmp_path / "mixed.zip"
    mixed.write_bytes(zipped({**canvas, "Ann Lee_5_assignsubmission_file_/a.ipynb": NOTEBOOK}))
    with pytest.raises(collect.CollectError, match="--lms canvas or --lms moodle"):
        collect.collect(mixed, tmp_path / "mixed")
    assert not (tmp_path / "mixed").exists()
    done = collect.collect(mixed, tmp_path / "mixed", lms="canvas")
    assert sorted(done.students) == ["evileve-13", "smithbob-12"]
    assert dict(done.left_out) == {"Ann Lee_5_assignsubmission_file_/a.ipynb":
                                   "not named as Canvas names the entries of a submission"}


def test_one_student_spends_their_own_budget_never_another_students(tmp_path, monkeypatch):
    """A student's files past their own budget are left out, with why, and unread once it is
    spent; the student after them is collected whole (the budget was once the class's: one
    student's 35 KB zip filled it and left every later student out)."""
    monkeypatch.setattr(collect, "MAX_STUDENT_BYTES", 3 * 2**20)
    noise = [bytes(random.Random(seed).randbytes(2**20)) for seed in range(5)]
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({
        "aaflood_1_1_handin.zip": zipped({f"f{i}.py": data for i, data in enumerate(noise)}),
        "zzlate_2_2_03_collectives.ipynb": NOTEBOOK,
    }))
    opened = []
    real_open = zipfile.ZipFile.open
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, member, *args, **kwargs: (
        opened.append(getattr(member, "filename", member)) or real_open(self, member, *args,
                                                                           **kwargs)))
    out = tmp_path / "class"
    done = collect.collect(path, out)
    assert sorted(p.name for p in (out / "aaflood-1").iterdir()) == ["f0.py", "f1.py", "f2.py"]
    why = "past the 3 MiB written for one student"
    assert dict(done.left_out) == {"aaflood_1_1_handin.zip: f3.py": why,
                                   "aaflood_1_1_handin.zip: f4.py": why}
    assert "f4.py" not in opened  # once spent, not even read
    assert (out / "zzlate-2" / "03_collectives.ipynb").read_bytes() == NOTEBOOK


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_DEFLATED])
def test_a_compression_bomb_is_refused_before_it_is_unpacked(tmp_path, monkeypatch, method):
    """A student's small zip of many 20 MiB members (one byte repeated), bzip2'd or deflated:
    each is left out, with why, before a byte of it is unpacked (bzip2 at all, deflate past
    MAX_RATIO times its size), whatever its header claims; the next student is collected. On
    the grader of November 2026, 10,000 of them cost about 15 minutes of CPU."""
    zeros = bytes(MAX_FILE_BYTES)
    bomb = raw_zip([(f"exercises/m{i}.py", zeros, method) for i in range(200)])
    assert len(bomb) < 8_000_000
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({"bombbob_1_1_handin.zip": bomb,  # stored, as an LMS may store it
                             "zzlate_2_2_03_collectives.ipynb": NOTEBOOK}, zipfile.ZIP_STORED))
    unpacked = []
    real_read = zipfile.ZipExtFile.read
    monkeypatch.setattr(zipfile.ZipExtFile, "read", lambda self, n=-1: (
        unpacked.append(self.name) or real_read(self, n)))
    out = tmp_path / "class"
    done = collect.collect(path, out)
    why = ("compressed in a way collect does not unpack" if method == zipfile.ZIP_BZIP2
           else "unpacks to over 200 times its compressed size")
    assert len(done.left_out) == 200
    assert all(w.startswith(f"cannot be read ({why}") for _, w in done.left_out)
    assert [n for n in unpacked if n.startswith("exercises/")] == []
    assert list((out / "bombbob-1").iterdir()) == []
    assert (out / "zzlate-2" / "03_collectives.ipynb").read_bytes() == NOTEBOOK


def test_a_bomb_whose_header_understates_its_size_unpacks_no_further_than_it_claims(tmp_path):
    """A deflated 20 MiB member whose header claims 100 bytes passes the ratio and size caps,
    but zip unpacks no more than the claim (the caps hold, since the claim is under them),
    so it is left out, unwritten."""
    bomb = bytearray(raw_zip([("exercises/m.py", bytes(MAX_FILE_BYTES), zipfile.ZIP_DEFLATED)]))
    central = bomb.rindex(b"PK\x01\x02")
    for at in (bomb.index(b"PK\x03\x04") + 22, central + 24):  # uncompressed size
        bomb[at:at + 4] = struct.pack("<I", 100)
    path = tmp_path / "submissions.zip"
    path.write_bytes(zipped({"liarbob_1_1_handin.zip": bytes(bomb)}))
    done = collect.collect(path, tmp_path / "class")
    assert done.left_out == [("liarbob_1_1_handin.zip: exercises/m.py",
                              "cannot be read (Bad CRC-32 for file 'exercises/m.py')")]
    assert list((tmp_path / "class" / "liarbob-1").iterdir()) == []


def test_file_times_are_the_lms_entrys_never_the_students_zips(tmp_path):
    """A late hand-in whose zip dates its files years before the deadline: the files get
    the time of the download's entry (the LMS's), and Canvas's late mark is what grade
    reads (collect.said_late), "yes" or "no"; Moodle, which says nothing of it, is absent."""
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr(zipfile.ZipInfo("exercises/03_collectives.ipynb",
                                         (2020, 1, 1, 0, 0, 0)), NOTEBOOK)
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("doejane_late_34_200_handin.zip",
                                         (2026, 12, 3, 10, 30, 0)), inner.getvalue())
        archive.writestr(zipfile.ZipInfo("smithbob_12_100_03_collectives.ipynb",
                                         (2026, 12, 1, 9, 0, 0)), NOTEBOOK)
    path = tmp_path / "submissions.zip"
    path.write_bytes(outer.getvalue())
    out = tmp_path / "class"
    collect.collect(path, out)
    stamp = datetime.fromtimestamp((out / "doejane-34" / "03_collectives.ipynb").stat().st_mtime)
    assert stamp == datetime(2026, 12, 3, 10, 30)
    assert collect.said_late(out) == {"doejane-34": ("Canvas", True),
                                      "smithbob-12": ("Canvas", False)}
    moodle = tmp_path / "moodle.zip"
    moodle.write_bytes(zipped({"Ann Lee_5_assignsubmission_file_/a.ipynb": NOTEBOOK}))
    collect.collect(moodle, tmp_path / "moodle")
    assert collect.said_late(tmp_path / "moodle") == {}
    assert collect.said_late(tmp_path) == {}  # no manifest: nothing said
    (tmp_path / collect.MANIFEST).write_text("name,submitted_at\nann,2026-01-01\n")
    with pytest.raises(ValueError, match="not the file collect writes"):
        collect.said_late(tmp_path)
