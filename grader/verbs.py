"""What each verb of ``python -m grader`` does once its arguments are parsed
(:mod:`grader.cli`): check what the arguments name, call the module that does the work, and
say what came of it. Every text it prints is a named template: the grading verbs' in
:mod:`grader.grading.texts`, the authoring verbs' in :mod:`grader.authoring.texts`, the ones
they share in :mod:`grader.messages`."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from grader import messages as msg

#: The exit status of a command that cannot do what it was asked (argparse's own): bad
#: arguments or input, files it cannot read or write, solutions that fail, no sandbox. Every
#: command says why in one line. (1 is a result, not an error: `validate` found problems.)
USAGE_ERROR = 2
#: The exit status after Ctrl-C or SIGTERM, as a shell reports an interrupted program.
INTERRUPTED = 130


def grade(args: argparse.Namespace) -> int:
    """``grade SUBMISSIONS --out OUT``: check what the arguments name, grade the class (or
    a slice of it, or some students again), show the gradebook and say what was written."""
    from grader import course
    from grader.grading import (
        adjustments,
        collect,
        grade,
        outputs,
        progress,
        reference_cache,
        texts,
    )
    from grader.workers import process
    from grader.workers.sandbox import Limits

    if not args.submissions.is_dir():
        return _fail(texts.SUBMISSIONS_NOT_A_FOLDER.format(folder=args.submissions))
    if args.out.resolve().is_relative_to(args.submissions.resolve()):
        return _fail(texts.OUT_INSIDE_SUBMISSIONS.format(out=args.out,
                                                         submissions=args.submissions))
    try:
        entries = grade.submission.discover(args.submissions)
        ignored = sorted(p.name for p in args.submissions.iterdir()
                         if p not in entries and not p.name.startswith(".")
                         and p.name != collect.MANIFEST)  # what collect wrote beside them
    except OSError as exc:
        return _fail(texts.SUBMISSIONS_UNREADABLE.format(folder=args.submissions,
                                                         why=exc.strerror or exc))
    if not entries:
        return _fail(texts.NO_SUBMISSION.format(folder=args.submissions))
    jobs = grade.default_jobs() if args.jobs is None else args.jobs
    seconds = (args.timeout, args.total_timeout)
    if jobs < 1 or args.memory < 256 or not all(0 < s < float("inf") for s in seconds):
        return _fail(texts.BAD_LIMITS)
    try:
        shard = outputs.Shard.parse(args.shard)
    except ValueError as exc:
        return _fail(str(exc))
    if args.student and shard.count > 1:
        return _fail(texts.STUDENT_AND_SHARD)
    try:
        work = _work(args)
        if (args.out / outputs.ADJUSTMENTS).is_file():  # read again when written: fail now
            adjustments.read(args.out / outputs.ADJUSTMENTS)
    except ValueError as exc:  # a mistake in course.toml, the roster, the times, adjustments
        return _fail(str(exc))
    if problem := _writable(args.out):
        return _fail(problem)
    limits = Limits(exercise=args.timeout, cell=args.timeout, memory=args.memory * 2**20,
                    run=args.total_timeout)
    if ignored:  # once the command is known to be valid: a usage error stays one line
        print(texts.WARN_IGNORED.format(count=len(ignored), ies="y" if len(ignored) == 1 else
                                        "ies", folder=args.submissions,
                                        names=", ".join(ignored)), file=sys.stderr)

    def stop(signum: int, frame: object) -> None:  # every worker dies now, then we unwind
        process.stop_all()
        raise KeyboardInterrupt

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    try:
        with progress.for_terminal() as shown:
            results = grade.grade(
                args.submissions,
                args.out,
                jobs=jobs,
                limits=limits,
                use_sandbox=not args.no_sandbox,
                force=args.force,
                solutions=args.solutions or course.SOLUTIONS,
                shard=shard,
                progress=shown,
                work=work,
                only=args.student,
                cache=reference_cache.default_folder(),
                rerun_reference=args.rerun_reference,
            )
    except (grade.GradingError, adjustments.RosterError) as exc:  # the latter edited since
        return _fail(str(exc))
    except (KeyboardInterrupt, process.Stopped):
        print(msg.INTERRUPTED.format(out=args.out), file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:  # the output folder filled up or went away
        return _fail(texts.WRITE_FAILED.format(out=args.out, why=exc.strerror or exc))
    try:  # the similar pairs, as written
        similar = outputs.read(args.out).similar
    except outputs.OutputError:  # written a moment ago: only if tampered with
        similar = []
    _show(results, similar, args.out)
    return 0


def _work(args: argparse.Namespace):
    """What ``grade`` is asked to grade: the assignment, the roster and the times, each read
    and checked (ValueError naming the file and line)."""
    from grader import assignments
    from grader.grading import grade, roster

    config = args.config or assignments.CONFIG
    work = grade.Work()
    if args.assignment is not None:
        work = grade.Work(assignments.find(args.assignment, config))
    needs_config = args.roster is not None or args.times is not None
    known = assignments.load(config) if needs_config and config.exists() else {}
    people = roster.read_roster(args.roster, tuple(known)) if args.roster else None
    times = roster.read_times(args.times, assignments.zone(config)) if args.times else {}
    return grade.Work(work.assignment, people, times)


def merge(args: argparse.Namespace) -> int:
    """``merge SLICE... --out OUT``: the slices put together into one output folder."""
    from grader.grading import merge, outputs, texts

    try:
        batch, results, similar = merge.gather(args.slices, args.out)
    except merge.MergeError as exc:
        return _fail(str(exc))
    if problem := _writable(args.out):
        return _fail(problem)
    try:
        results, unmatched = outputs.write(args.out, results, batch, similar)
    except ValueError as exc:  # the merged folder's adjustments.csv
        return _fail(str(exc))
    except OSError as exc:
        return _fail(texts.WRITE_FAILED.format(out=args.out, why=exc.strerror or exc))
    if unmatched:
        print(texts.WARN_ADJUST_UNMATCHED.format(rows="; ".join(unmatched)), file=sys.stderr)
    _show(results, similar, args.out)
    return 0


def adjust(args: argparse.Namespace) -> int:
    """``adjust OUT [CSV]``: the instructor's adjustments applied to the graded results,
    every output written again; CSV, if given, becomes OUT/adjustments.csv."""
    from grader.grading import adjustments, outputs, texts

    stored = args.out / outputs.ADJUSTMENTS
    path = args.adjustments or stored
    if not path.is_file():
        return _fail(texts.ADJUST_NO_FILE.format(path=path,
                                                 columns=",".join(adjustments.COLUMNS)))
    try:
        rows = adjustments.read(path)
        graded = outputs.read(args.out)
    except (ValueError, outputs.OutputError) as exc:
        return _fail(str(exc))
    if unmatched := adjustments.unmatched(rows, graded.results):
        return _fail(texts.ADJUST_UNMATCHED.format(
            rows="; ".join(f"{path}:{why}" for why in unmatched)))
    try:
        if path.resolve() != stored.resolve():
            outputs.write_atomic(stored, path.read_bytes())
        results, _ = outputs.write(args.out, graded.results, graded.batch, graded.similar)
    except OSError as exc:
        return _fail(texts.WRITE_FAILED.format(out=args.out, why=exc.strerror or exc))
    _show(results, graded.similar, args.out)
    print(texts.ADJUST_APPLIED.format(count=adjustments.count(results), path=stored))
    return 0


def _show(results, similar, out: Path) -> None:
    """The gradebook and the summary on the terminal, then where the files are."""
    from grader.grading import outputs, report, summary, texts
    from grader.grading.similarity import REFERENCE

    print(report.table(results))
    print()
    print(summary.text(results))
    for template, found in ((texts.SIMILARITY_FOUND, [p for p in similar
                                                       if p.students[1] != REFERENCE]),
                            (texts.SIMILARITY_FOUND_REFERENCE, [p for p in similar
                                                                 if p.students[1] == REFERENCE])):
        if found:
            print(template.format(students=len({p.students for p in found}),
                                  exercises=len(found), page=out / outputs.SIMILARITY))
    print(texts.WROTE_OUTPUTS.format(files=", ".join(str(out / name)
                                                     for name in outputs.WRITTEN)))


def collect(args: argparse.Namespace) -> int:
    """``collect DOWNLOAD --to DIR``: an LMS's download of submissions, a folder per student."""
    from grader import assignments
    from grader.grading import collect as collecting
    from grader.grading import roster, safe, texts

    config = args.config or assignments.CONFIG
    try:
        known = assignments.load(config) if args.roster and config.exists() else {}
        people = roster.read_roster(args.roster, tuple(known)) if args.roster else None
        done = collecting.collect(args.download, args.to, people, args.lms)
    except (collecting.CollectError, roster.RosterError, assignments.ConfigError,
            OSError) as exc:
        return _fail(str(exc))
    students = done.students.values()
    print(texts.COLLECT_DONE.format(students=len(students), lms=done.lms.capitalize(),
                                    to=safe.line(args.to),
                                    files=sum(len(s.files) for s in students)))
    if done.left_out:
        print(texts.COLLECT_LEFT_OUT.format(count=len(done.left_out),
                                            manifest=safe.line(args.to / collecting.MANIFEST)),
              file=sys.stderr)
    if people is not None:
        strangers = sorted(s.name for s in students if s.name not in people)
        if strangers:
            print(texts.COLLECT_NOT_ON_ROSTER.format(names=", ".join(
                safe.line(n) for n in strangers)), file=sys.stderr)
    return 0


def export(args: argparse.Namespace) -> int:
    """``export OUT --format F``: the gradebook in the columns of an LMS's import."""
    from grader.grading import export as exporting
    from grader.grading import safe, texts

    try:
        done = exporting.export(args.out, args.form, args.to, args.column)
    except (exporting.ExportError, OSError) as exc:
        return _fail(str(exc))
    print(texts.EXPORT_WROTE.format(where=done.where, count=done.count, form=args.form))
    unmatched = done.unmatched
    if done.not_read:
        print(texts.EXPORT_NOT_READ.format(count=len(done.not_read), names=", ".join(
            safe.line(n) for n in done.not_read)), file=sys.stderr)
    if unmatched:
        shown = ", ".join(safe.line(n) for n in unmatched[:10])
        print(texts.EXPORT_UNMATCHED.format(
            count=len(unmatched), keys=" or ".join(exporting.MATCHED_BY[args.form]),
            form=args.form, names=shown + (", ..." if len(unmatched) > 10 else "")),
            file=sys.stderr)
    return 0


def validate(args: argparse.Namespace) -> int:
    """``validate``: is the course ready to hand out? Each step said as it is done."""
    from grader.authoring import texts, validate

    try:
        found = validate.problems(say=lambda line: print(line, flush=True), only=args.only)
    except ValueError as exc:
        return _fail(str(exc))
    for problem in found:
        print(texts.VALIDATE_PROBLEM.format(problem=problem))
    if found:
        print(texts.VALIDATE_COUNT.format(count=len(found)))
    else:
        print(texts.VALIDATE_READY_ONLY.format(names=", ".join(args.only)) if args.only
              else texts.VALIDATE_READY)
    return 1 if found else 0


def release(args: argparse.Namespace) -> int:
    """``release DIR``: the student bundle, and what it holds per folder."""
    from grader.authoring import release, texts

    try:
        files = release.release(args.destination, assignment=_assignment(args))
    except (release.ReleaseError, OSError, ValueError) as exc:
        return _fail(str(exc))
    for folder, count in release.by_folder(files).items():
        where = folder + "/" if folder != "." else texts.RELEASE_TOP_LEVEL
        print(texts.RELEASE_FOLDER.format(folder=where, count=count))
    print(texts.RELEASE_WROTE.format(count=len(files), destination=args.destination)
          + (texts.RELEASE_FOR.format(assignment=args.assignment) if args.assignment else ""))
    return 0


def generate(args: argparse.Namespace) -> int:
    """``generate``: exercises/ and the tables made from the course's one list."""
    from grader.authoring import generate, texts

    try:
        changed = generate.generate()
    except (generate.SolutionLeak, generate.ListError) as exc:
        print(exc, file=sys.stderr)
        return 1
    for name in changed:
        print(texts.WROTE.format(path=name))
    if not changed:
        print(texts.UNCHANGED.format(what="exercises/, the notebooks' openings and the tables"))
    return 0


def refresh_expected(args: argparse.Namespace) -> int:
    """``refresh-expected [LESSON...]``: the public tests' stored expected values."""
    from grader.authoring import refresh_expected, texts

    try:
        written = refresh_expected.refresh(args.lessons, say=lambda line: print(line, flush=True))
    except ValueError as exc:
        return _fail(str(exc))
    for path in written:
        print(texts.WROTE.format(path=path))
    if not written:
        print(texts.UNCHANGED.format(what="the stored expected values of "
                                     + (", ".join(args.lessons) or "every lesson")))
    return 0


def _assignment(args: argparse.Namespace):
    """The assignment ``--assignment`` names, or None (ConfigError if there is none such)."""
    from grader import assignments

    if args.assignment is None:
        return None
    return assignments.find(args.assignment, args.config or assignments.CONFIG)


def _fail(message: str) -> int:
    print(msg.CLI_ERROR.format(message=message), file=sys.stderr)
    return USAGE_ERROR


def _writable(out: Path) -> str | None:
    """Why ``out`` cannot be written as a folder, or None if it can (it is created)."""
    from grader.grading import texts

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return texts.OUT_NOT_WRITABLE.format(out=out, why=exc.strerror or exc)
    return None
