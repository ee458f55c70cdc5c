"""An LMS's download of every submission, unpacked into the folder ``grade`` reads.

``python -m grader collect DOWNLOAD.zip --to submissions/ [--roster roster.csv]``

- **Canvas** ("Download Submissions"): one zip, a file per upload, named
  ``{sortable name}_{user id}_{file id}_{file name}``, with ``late_`` before the user id of a
  late one; a file uploaded again under the same name gets ``-1``, ``-2`` before its suffix.
- **Moodle** ("Download all submissions"): a folder per student,
  ``{full name}_{participant id}_assignsubmission_file_``, holding their files; with "download
  submissions in folders" unticked, each file is named ``{that folder}{file name}`` instead.

Each student found gets a folder ``TO/NAME/`` (empty if nothing they handed in could be written:
they handed something in, so ``grade`` says "nothing to grade", not "missing"), where their
files go: a notebook or ``.py`` file as it is, a zip (the
``handin.zip`` that ``make handin`` packs) unpacked, only its notebooks and ``.py`` files. NAME
is the roster's ``name`` for the row whose ``lms_id`` is the id in the download; without one,
the name in the download with the id after it, kept to letters, digits, ``-`` and ``_``
(``smithbob-340934``, ``jane-doe-55``).

The download is the students' text, read as untrusted:

- **Who**: only from the part of an entry's name the LMS writes: Canvas's name and id before
  the file's, and Moodle's first ``_ID_assignsubmission_..._``; whatever follows is the
  student's own file name and never names anyone.
- **Which LMS**: from every entry. A download with entries only Canvas writes and entries only
  Moodle writes is refused (``--lms`` says which, and the others are left out).
- **When**: a file is given the time of the download's entry, which the LMS wrote, never a
  time inside a student's own zip; Canvas's late mark goes to ``TO/lms.csv``, which ``grade``
  reads (:func:`lms_lateness`).
- **How much**: every size is capped before it is read, whatever a zip's header claims:
  :data:`MAX_MEMBERS` entries, :data:`MAX_ZIP_BYTES` for a student's zip,
  ``submission.MAX_FILE_BYTES`` per file and :data:`MAX_STUDENT_BYTES` per student (each
  student their own, so that nobody's entries leave out anyone else's); only stored or
  deflated entries are unpacked (:data:`METHODS`), at most :data:`MAX_RATIO` times their
  compressed size.

Nothing is lost without a word, and nothing is written outside ``TO``, which must be new or
empty: ``TO/lms.csv`` (:data:`MANIFEST`) lists every student found (name, LMS, id, name in the
LMS, whether the LMS marked it late, the files written) and every entry of the download not
written, with why (a file that is no notebook, a name that is no submission's, a file over a
limit, a second copy).
"""

from __future__ import annotations

import csv
import io
import os
import re
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader.grading import roster, safe, texts
from grader.grading.roster import Person
from grader.grading.submission import MAX_FILE_BYTES, SUFFIXES

#: Entries read from one zip, the download or a student's.
MAX_MEMBERS = 10_000
#: The largest zip of one student's that is unpacked.
MAX_ZIP_BYTES = 200 * 1024 * 1024
#: Bytes written for one student, all their files together.
MAX_STUDENT_BYTES = 100 * 1024 * 1024
#: How entries may be compressed: stored or deflated, as Canvas, Moodle, ``make handin`` and
#: the systems' own zip tools write them. (bzip2 and LZMA are refused: Python unpacks them a
#: whole block at a time, so that no read of a few bytes stops a bomb short.)
METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
#: An entry may unpack to at most this many times its compressed size, or to
#: :data:`RATIO_FREE_BYTES`, whichever is more: a notebook deflates about five to twenty
#: times, a run of one byte a thousand.
MAX_RATIO = 200
RATIO_FREE_BYTES = 1024 * 1024
#: What collect writes beside the students' folders, and ``grade`` reads (:func:`said_late`).
MANIFEST = "lms.csv"
MANIFEST_COLUMNS = ("name", "lms", "lms_id", "lms_name", "late", "files", "left_out", "whose")
LMS = ("canvas", "moodle")

# Canvas: "{sortable name}_[late_]{user id}_{file id}_{file name}"; the sortable name has no
# "_", so the first ones are Canvas's.
_CANVAS = re.compile(r"(?P<who>[^_/]+)_(?P<late>(?i:late)_)?(?P<id>\d+)_\d+_(?P<file>[^/]+)")
# Moodle: "{full name}_{participant id}_assignsubmission_{plugin}_" then "/{file name}" or
# "{file name}": the first such mark is Moodle's (the shortest name), and a file name holding
# another is the student's file name still.
_MOODLE = re.compile(
    r"(?P<who>[^/]+?)_(?P<id>\d+)_assignsubmission_[a-z]+_(?P<file>.*)", re.DOTALL)
_PATTERNS = {"canvas": _CANVAS, "moodle": _MOODLE}
_AGAIN = re.compile(r"-(\d+)$")  # Canvas's mark on a file uploaded again under its name
#: What reading a damaged, encrypted or unsupported zip entry raises.
_UNREADABLE = (ValueError, RuntimeError, NotImplementedError, EOFError, OSError, zlib.error,
               zipfile.BadZipFile)


class CollectError(ValueError):
    """The download cannot be collected at all (not a zip, TO not empty); one line."""


@dataclass
class Student:
    """One student found in the download, and what was written for them."""

    name: str
    lms: str
    lms_id: str
    lms_name: str
    late: bool = False
    files: list[str] = field(default_factory=list)
    #: Bytes written for them (at most :data:`MAX_STUDENT_BYTES`).
    written: int = 0


@dataclass
class Collected:
    lms: str = ""
    students: dict[str, Student] = field(default_factory=dict)
    #: (entry of the download, why it was not written).
    left_out: list[tuple[str, str]] = field(default_factory=list)
    #: The student each entry left out was theirs, where the download says.
    whose: dict[str, str] = field(default_factory=dict)

    def leave(self, student: Student, entry: str, why: str) -> None:
        """Leave out ``student``'s ``entry``, saying why."""
        self.left_out.append((entry, why))
        self.whose[entry] = student.name


def collect(download: Path, to: Path, roster: dict[str, Person] | None = None,
            lms: str | None = None) -> Collected:
    """Unpack an LMS's download of submissions into ``to``, one folder per student; writes
    ``to/lms.csv`` and returns what was found. Raises :class:`CollectError` if it cannot
    start."""
    if to.exists() and (not to.is_dir() or any(to.iterdir())):
        raise CollectError(texts.COLLECT_NOT_EMPTY.format(to=to))
    try:
        archive = zipfile.ZipFile(download)
    except (OSError, zipfile.BadZipFile) as exc:
        raise CollectError(texts.COLLECT_NOT_A_ZIP.format(path=download, why=exc)) from None
    by_lms_id = {p.lms_id: p.name for p in (roster or {}).values() if p.lms_id}
    done = Collected()
    with archive:
        members = [m for m in archive.infolist() if not m.is_dir()]
        if len(members) > MAX_MEMBERS:
            raise CollectError(texts.COLLECT_TOO_MANY.format(path=download, most=MAX_MEMBERS))
        lms = done.lms = lms or _which(members, download)
        to.mkdir(parents=True, exist_ok=True)
        for member in sorted(members, key=_newest_copy_last):
            found = _identify(lms, member.filename)
            if found is None:
                done.left_out.append((member.filename, texts.COLLECT_NOT_A_SUBMISSION.format(
                    lms=lms.capitalize())))
                continue
            student = _student(done, found, lms, by_lms_id)
            (to / student.name).mkdir(exist_ok=True)  # empty if nothing is written: not missing
            name = PurePosixPath(found["file"]).name
            _write(done, student, to / student.name, member.filename, name,
                   lambda m=member: _read(archive, m, MAX_ZIP_BYTES), member.date_time,
                   inside=False)
    _manifest(to, done)
    return done


def _identify(lms: str, entry: str) -> re.Match | None:
    """Who an entry of the download is from, as ``lms`` names it (Canvas's entries are
    files at the top, Moodle's also in a folder per student)."""
    return _PATTERNS[lms].fullmatch(entry if lms == "moodle" else PurePosixPath(entry).name)


def _which(members: list[zipfile.ZipInfo], download: Path) -> str:
    """The LMS that wrote the download, from every entry: the one whose names all entries
    named as a submission have (some names fit both: a Canvas upload may be named as Moodle
    names its entries)."""
    fits = {lms: [m.filename for m in members if _identify(lms, m.filename)] for lms in LMS}
    only = {lms: [e for e in fits[lms] if not _identify(other, e)]
            for lms, other in (LMS, LMS[::-1])}
    if only["canvas"] and only["moodle"]:
        raise CollectError(texts.COLLECT_MIXED.format(
            path=download, canvas=safe.line(only["canvas"][0]),
            moodle=safe.line(only["moodle"][0])))
    chosen = [lms for lms in LMS if only[lms]]
    if not chosen and fits["canvas"]:  # every entry fits both
        raise CollectError(texts.COLLECT_EITHER.format(path=download))
    return chosen[0] if chosen else "canvas"


def _newest_copy_last(member: zipfile.ZipInfo) -> tuple[str, int]:
    """Canvas's ``-1``, ``-2`` copies after the file they copy, so that the newest wins."""
    return _copied(member.filename)


def _copied(name: str) -> tuple[str, int]:
    """The file a name is Canvas's copy of (``03_collectives-1.ipynb`` of
    ``03_collectives.ipynb``), and which copy: 0 for the file itself."""
    path = PurePosixPath(name)
    again = _AGAIN.search(path.stem)
    if again is None:
        return name, 0
    return str(path.with_name(path.stem[:again.start()] + path.suffix)), int(again[1])


def _student(done: Collected, found: re.Match, lms: str, by_lms_id: dict[str, str]
             ) -> Student:
    lms_id, who = found["id"], found["who"]
    for student in done.students.values():
        if student.lms_id == lms_id:
            break
    else:
        plain = re.sub(r"[^\w-]+", "-", who).strip("-_").lower() or "student"
        name = by_lms_id.get(lms_id, "")
        if not name or Path(name).name != name or name in (".", ".."):  # a folder of TO
            name = f"{plain}-{lms_id}"
        student = done.students[name] = Student(name, lms, lms_id, who)
    student.late |= bool(found.groupdict().get("late"))
    return student


def _write(done: Collected, student: Student, folder: Path, entry: str, name: str,
           read, when: tuple[int, ...], inside: bool) -> None:
    """Write one file of a student's, or unpack it if it is a zip they uploaded (``inside``
    another zip, a zip is left out: no nesting, no zip that holds itself). ``when``: the time
    of the download's entry, for every file it holds."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".zip" and not inside:
        try:
            inner = zipfile.ZipFile(io.BytesIO(read()))
        except _UNREADABLE as exc:
            done.leave(student, entry, texts.COLLECT_BAD_ZIP.format(why=exc))
            return
        with inner:
            files = [m for m in inner.infolist() if not m.is_dir()]
            if len(files) > MAX_MEMBERS:
                done.leave(student, entry, texts.COLLECT_ZIP_TOO_MANY.format(
                    most=MAX_MEMBERS))
                return
            for member in sorted(files, key=_newest_copy_last):
                _write(done, student, folder, f"{entry}: {member.filename}",
                       PurePosixPath(member.filename).name,
                       lambda m=member: _read(inner, m, MAX_FILE_BYTES), when, inside=True)
        return
    if suffix not in SUFFIXES or name.startswith("."):
        done.leave(student, entry, texts.COLLECT_NOT_A_NOTEBOOK)
        return
    name = _copied(name)[0]  # Canvas's copy of a file: sorted after it, it replaces it
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    past_budget = texts.COLLECT_STUDENT_TOO_LARGE.format(mib=MAX_STUDENT_BYTES / 2**20)
    if student.written >= MAX_STUDENT_BYTES:
        done.leave(student, entry, past_budget)  # not even read
        return
    try:
        data = read()
    except _UNREADABLE as exc:
        done.leave(student, entry, texts.COLLECT_UNREADABLE.format(why=exc))
        return
    if len(data) > MAX_FILE_BYTES:
        done.leave(student, entry, texts.FILE_TOO_LARGE.format(mib=MAX_FILE_BYTES / 2**20))
        return
    if student.written + len(data) > MAX_STUDENT_BYTES:
        done.leave(student, entry, past_budget)
        return
    if clean in student.files:
        replaced = f"{student.name}/{clean}"
        done.leave(student, replaced, texts.COLLECT_REPLACED.format(entry=entry))
    else:
        student.files.append(clean)
    target = folder / clean  # the folder collect made for the student
    target.write_bytes(data)
    student.written += len(data)
    stamp = time.mktime((*when, 0, 0, -1))
    os.utime(target, (stamp, stamp))


def _read(archive: zipfile.ZipFile, member: zipfile.ZipInfo, most: int) -> bytes:
    """A member's bytes, at most ``most`` of them and at most :data:`MAX_RATIO` times its
    compressed size read, whatever its header says (what a read of deflated data unpacks is
    capped by what is asked; see :data:`METHODS`)."""
    if member.compress_type not in METHODS:
        raise ValueError(texts.COLLECT_METHOD)
    ratio = max(RATIO_FREE_BYTES, MAX_RATIO * member.compress_size)
    for cap, why in ((most, texts.COLLECT_MEMBER_TOO_LARGE.format(mib=most / 2**20)),
                     (ratio, texts.COLLECT_BOMB.format(ratio=MAX_RATIO))):
        if member.file_size > cap:
            raise ValueError(why)
    with archive.open(member) as handle:
        data = handle.read(min(most, ratio) + 1)
    if len(data) > most:
        raise ValueError(texts.COLLECT_MEMBER_TOO_LARGE.format(mib=most / 2**20))
    if len(data) > ratio:
        raise ValueError(texts.COLLECT_BOMB.format(ratio=MAX_RATIO))
    return data


def _manifest(to: Path, done: Collected) -> None:
    """``to/lms.csv``: a row per student, then one per entry left out (``whose``: the student
    it was, where the download says). ``late`` is what the LMS said: "yes" or "no" from
    Canvas, which marks late work, and "" from Moodle, which does not say."""
    rows = [list(MANIFEST_COLUMNS)]
    rows += [[s.name, s.lms, s.lms_id, s.lms_name,
              ("yes" if s.late else "no") if s.lms == "canvas" else "",
              " ".join(s.files), "", ""] for s in sorted(done.students.values(),
                                                         key=lambda s: s.name)]
    rows += [["", "", "", "", "", entry, why, done.whose.get(entry, "")]
             for entry, why in done.left_out]
    with (to / MANIFEST).open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(safe.csv_rows(rows))


def said_late(folder: Path) -> dict[str, tuple[str, bool]]:
    """What the LMS said of each student's lateness, from the :data:`MANIFEST` that collect
    wrote into the submissions ``folder``: ``{name: (LMS, late)}`` for those it said it of
    (Canvas's late mark); empty without one. A manifest that is not collect's (another header)
    is a :class:`~grader.grading.roster.RosterError`."""
    path = folder / MANIFEST
    if not path.is_file():
        return {}
    header, rows = roster.csv_rows(path)
    if tuple(header) != MANIFEST_COLUMNS:
        raise roster.RosterError(f"{path}:1: " + texts.MANIFEST_HEADER.format(
            columns=",".join(MANIFEST_COLUMNS)))
    said = {}
    for _, row in rows:
        if row.get("name") and row.get("late") in ("yes", "no"):
            said[row["name"]] = ((row.get("lms") or "").capitalize(), row["late"] == "yes")
    return said
