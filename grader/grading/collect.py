"""An LMS's download of every submission, unpacked into the folder ``grade`` reads.

``python -m grader collect DOWNLOAD.zip --to submissions/ [--roster roster.csv]``

- **Canvas** ("Download Submissions"): one zip, a file per upload, named
  ``{sortable name}_{user id}_{file id}_{file name}``, with ``late_`` before the user id of a
  late one; a file uploaded again under the same name gets ``-1``, ``-2`` before its suffix.
- **Moodle** ("Download all submissions"): a folder per student,
  ``{full name}_{participant id}_assignsubmission_file_``, holding their files; with "download
  submissions in folders" unticked, each file is named ``{that folder}{file name}`` instead.

Each student's files go to ``TO/NAME/``: a notebook or ``.py`` file as it is, a zip (the
``handin.zip`` that ``make handin`` packs) unpacked, only its notebooks and ``.py`` files. NAME
is the roster's ``name`` for the row whose ``lms_id`` is the id in the download; without one,
the name in the download with the id after it, kept to letters, digits, ``-`` and ``_``
(``smithbob-340934``, ``jane-doe-55``). The times of the files are the zip's, as ``unzip``
leaves them: pass ``grade`` the LMS's own submission times with ``--times`` where it matters.

Nothing is lost without a word, and nothing is written outside ``TO``, which must be new or
empty: ``TO/lms.csv`` lists every student found (name, LMS, id, name in the LMS, whether the
LMS marked it late, the files written) and every entry of the download not written, with why
(a file that is no notebook, a name that is no submission's, a file over the size limit, a
second copy). Every size is capped before it is read (:data:`MAX_MEMBERS` entries,
:data:`MAX_ZIP_BYTES` for a student's zip, :data:`MAX_TOTAL_BYTES` written in all, and
``submission.MAX_FILE_BYTES`` per file), whatever a zip's header claims.
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

from grader.grading import safe, texts
from grader.grading.roster import Person
from grader.grading.submission import MAX_FILE_BYTES, SUFFIXES

#: Entries read from one zip, the download or a student's.
MAX_MEMBERS = 10_000
#: The largest zip of one student's that is unpacked.
MAX_ZIP_BYTES = 200 * 1024 * 1024
#: Bytes written in all.
MAX_TOTAL_BYTES = 4 * 1024 * 1024 * 1024
LMS = ("canvas", "moodle")

_CANVAS = re.compile(r"(?P<who>[^_/]+)_(?P<late>(?i:late)_)?(?P<id>\d+)_\d+_(?P<file>[^/]+)")
_MOODLE = re.compile(r"(?P<who>[^/]+)_(?P<id>\d+)_assignsubmission_[a-z]+_(?P<file>.*)")
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


@dataclass
class Collected:
    lms: str = ""
    students: dict[str, Student] = field(default_factory=dict)
    #: (entry of the download, why it was not written).
    left_out: list[tuple[str, str]] = field(default_factory=list)
    written: int = 0


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
        lms = done.lms = lms or _which(members)
        pattern = _MOODLE if lms == "moodle" else _CANVAS
        to.mkdir(parents=True, exist_ok=True)
        for member in sorted(members, key=_newest_copy_last):
            found = pattern.fullmatch(member.filename if lms == "moodle"
                                      else PurePosixPath(member.filename).name)
            if found is None:
                done.left_out.append((member.filename, texts.COLLECT_NOT_A_SUBMISSION))
                continue
            student = _student(done, found, lms, by_lms_id)
            name = PurePosixPath(found["file"]).name
            _write(done, student, to / student.name, member.filename, name,
                   lambda m=member: _read(archive, m, MAX_ZIP_BYTES), member.date_time,
                   inside=False)
    _manifest(to, done)
    return done


def _which(members: list[zipfile.ZipInfo]) -> str:
    return "moodle" if any(_MOODLE.fullmatch(m.filename) for m in members) else "canvas"


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
    another zip, a zip is left out: no nesting, no zip that holds itself)."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix == ".zip" and not inside:
        try:
            inner = zipfile.ZipFile(io.BytesIO(read()))
        except _UNREADABLE as exc:
            done.left_out.append((entry, texts.COLLECT_BAD_ZIP.format(why=exc)))
            return
        with inner:
            files = [m for m in inner.infolist() if not m.is_dir()]
            if len(files) > MAX_MEMBERS:
                done.left_out.append((entry, texts.COLLECT_ZIP_TOO_MANY.format(
                    most=MAX_MEMBERS)))
                return
            for member in sorted(files, key=_newest_copy_last):
                _write(done, student, folder, f"{entry}: {member.filename}",
                       PurePosixPath(member.filename).name,
                       lambda m=member: _read(inner, m, MAX_FILE_BYTES), member.date_time,
                       inside=True)
        return
    if suffix not in SUFFIXES or name.startswith("."):
        done.left_out.append((entry, texts.COLLECT_NOT_A_NOTEBOOK))
        return
    name = _copied(name)[0]  # Canvas's copy of a file: sorted after it, it replaces it
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
    try:
        data = read()
    except _UNREADABLE as exc:
        done.left_out.append((entry, texts.COLLECT_UNREADABLE.format(why=exc)))
        return
    if len(data) > MAX_FILE_BYTES:
        done.left_out.append((entry, texts.FILE_TOO_LARGE.format(mib=MAX_FILE_BYTES / 2**20)))
        return
    if done.written + len(data) > MAX_TOTAL_BYTES:
        done.left_out.append((entry, texts.COLLECT_TOTAL_TOO_LARGE.format(
            gib=MAX_TOTAL_BYTES / 2**30)))
        return
    if clean in student.files:
        replaced = f"{student.name}/{clean}"
        done.left_out.append((replaced, texts.COLLECT_REPLACED.format(entry=entry)))
    else:
        student.files.append(clean)
    folder.mkdir(exist_ok=True)
    target = folder / clean
    target.write_bytes(data)
    done.written += len(data)
    stamp = time.mktime((*when, 0, 0, -1))
    os.utime(target, (stamp, stamp))


def _read(archive: zipfile.ZipFile, member: zipfile.ZipInfo, most: int) -> bytes:
    """A member's bytes, at most ``most`` of them read whatever its header says."""
    if member.file_size > most:
        raise ValueError(texts.COLLECT_MEMBER_TOO_LARGE.format(mib=most / 2**20))
    with archive.open(member) as handle:
        data = handle.read(most + 1)
    if len(data) > most:
        raise ValueError(texts.COLLECT_MEMBER_TOO_LARGE.format(mib=most / 2**20))
    return data


def _manifest(to: Path, done: Collected) -> None:
    rows = [["name", "lms", "lms_id", "lms_name", "late", "files", "left_out"]]
    rows += [[s.name, s.lms, s.lms_id, s.lms_name, "yes" if s.late else "",
              " ".join(s.files), ""] for s in sorted(done.students.values(),
                                                     key=lambda s: s.name)]
    rows += [["", "", "", "", "", entry, why] for entry, why in done.left_out]
    with (to / "lms.csv").open("w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(safe.csv_rows(rows))
