"""Command line: argument parsing only; each verb's work lives in its own module."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

USAGE_ERROR = 2
#: The exit status after Ctrl-C or SIGTERM, as a shell reports an interrupted program.
INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m grader", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    grade = verbs.add_parser("grade", help="grade a folder of submissions")
    grade.add_argument("submissions", type=Path, help="one entry (folder or file) per student")
    grade.add_argument("--out", type=Path, required=True, help="folder for the gradebook")
    grade.add_argument("--jobs", type=int, default=None,
                       help="submissions graded at once (default: the number of cores)")
    grade.add_argument("--timeout", type=float, default=60.0,
                       help="seconds allowed per exercise and per notebook cell (default 60)")
    grade.add_argument("--total-timeout", type=float, default=900.0,
                       help="seconds a submission may take in all on one device count, every "
                       "cell, test and restart together (default 900)")
    grade.add_argument("--solutions", type=Path, default=None,
                       help="reference solutions (default: solutions/ of the course)")
    grade.add_argument("--memory", type=int, default=4096,
                       help="memory cap per worker process in MiB (default 4096)")
    grade.add_argument("--force", action="store_true",
                       help="regrade every submission, even those graded before into OUT")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run submissions as plain processes, on purpose: without this, "
                       "grading needs bubblewrap's sandbox and refuses to run without one (as "
                       "root, submissions run as nobody either way)")
    grade.add_argument("--shard", metavar="K/N", default="1/1",
                       help="grade only the K-th of N slices of the students (round robin over "
                       "their sorted names); put the slices together with `merge`")
    grade.add_argument("--assignment", metavar="NAME", default=None,
                       help="grade only this assignment's exercises, against its due date "
                       "(assignments are declared in course.toml)")
    grade.add_argument("--roster", type=Path, default=None, metavar="CSV",
                       help="the class list (name, id, display_name, email, extension_days): "
                       "who handed nothing in gets a 'missing' row")
    grade.add_argument("--times", type=Path, default=None, metavar="CSV",
                       help="when each submission came in (name, submitted_at); default: the "
                       "newest change of its files")
    grade.add_argument("--student", action="append", default=[], metavar="NAME",
                       help="regrade only this student (repeatable) into OUT, which holds the "
                       "graded class; everything in OUT is written again")
    grade.add_argument("--config", type=Path, default=None, metavar="TOML",
                       help="the course config that declares the assignments (default: "
                       "course.toml of the course)")

    merge = verbs.add_parser("merge", help="put the output folders of `grade --shard K/N` "
                             "together into one gradebook")
    merge.add_argument("slices", type=Path, nargs="+", help="the output folder of each slice")
    merge.add_argument("--out", type=Path, required=True, help="folder for the whole gradebook")

    export = verbs.add_parser("export", help="write the gradebook of an output folder for a "
                              "learning management system to import")
    export.add_argument("out", type=Path, help="an output folder of `grade` (or `merge`)")
    export.add_argument("--format", required=True, dest="form",
                        help="canvas, moodle or csv")
    export.add_argument("--to", type=Path, default=None,
                        help="the file to write (default: OUT/FORMAT.csv)")

    verbs.add_parser("generate", help="write exercises/ from solutions/")
    verbs.add_parser("validate", help="check that solutions score full marks, stubs zero, "
                     "exercises/ is in sync and every exercise has public and hidden tests")
    release = verbs.add_parser("release", help="write the student bundle (no solutions, no "
                               "hidden tests) to a new or empty folder")
    release.add_argument("destination", type=Path)
    release.add_argument("--assignment", metavar="NAME", default=None,
                         help="only what this assignment needs (assignments are declared in "
                         "course.toml)")
    release.add_argument("--config", type=Path, default=None, metavar="TOML",
                         help="the course config (default: course.toml of the course)")
    refresh = verbs.add_parser(
        "refresh-expected", help="recompute the public tests' expected values from solutions/"
    )
    refresh.add_argument("lessons", nargs="*", help="lessons to refresh (default: all)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.verb == "grade":
        return _grade(args)
    if args.verb == "merge":
        return _merge(args)
    if args.verb == "export":
        from grader.grading import export

        try:
            where, count = export.export(args.out, args.form, args.to)
        except (export.ExportError, OSError) as exc:
            return _fail(str(exc))
        print(f"wrote {where}: {count} student(s), {args.form} format")
        return 0
    if args.verb == "validate":
        from grader.authoring import validate

        found = validate.problems(say=lambda line: print(line, flush=True))
        for problem in found:
            print(f"problem: {problem}")
        print("the course is ready" if not found else f"{len(found)} problem(s)")
        return 1 if found else 0
    if args.verb == "release":
        from grader.authoring import release

        try:
            files = release.release(args.destination, assignment=_assignment(args))
        except (release.ReleaseError, OSError, ValueError) as exc:
            return _fail(str(exc))
        for folder, count in release.by_folder(files).items():
            print(f"  {folder + '/' if folder != '.' else 'top level'}: {count} file(s)")
        print(f"wrote {len(files)} files to {args.destination}"
              + (f" for the assignment {args.assignment}" if args.assignment else ""))
        return 0
    if args.verb == "generate":
        from grader.authoring import generate

        for name in generate.generate():
            print(f"wrote {name}")
        return 0
    from grader.authoring import refresh_expected

    try:
        written = refresh_expected.refresh(args.lessons)
    except ValueError as exc:
        return _fail(str(exc))
    for path in written:
        print(f"wrote {path}")
    return 0


def _assignment(args: argparse.Namespace):
    """The assignment ``--assignment`` names, or None (ConfigError if there is none such)."""
    from grader import assignments

    if args.assignment is None:
        return None
    return assignments.find(args.assignment, args.config or assignments.CONFIG)


def _fail(message: str) -> int:
    print(f"python -m grader: error: {message}", file=sys.stderr)
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


def _grade(args: argparse.Namespace) -> int:
    from grader import course
    from grader import messages as msg
    from grader.grading import grade, progress, texts
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
                         if p not in entries and not p.name.startswith("."))
    except OSError as exc:
        return _fail(texts.SUBMISSIONS_UNREADABLE.format(folder=args.submissions,
                                                         why=exc.strerror or exc))
    if not entries:
        return _fail(texts.NO_SUBMISSION.format(folder=args.submissions))
    jobs = grade.default_jobs() if args.jobs is None else args.jobs
    seconds = (args.timeout, args.total_timeout)
    if jobs < 1 or args.memory < 256 or not all(0 < s < float("inf") for s in seconds):
        return _fail("--jobs, --timeout and --total-timeout must be positive, "
                     "--memory at least 256 (MiB)")
    try:
        shard = grade.Shard.parse(args.shard)
    except ValueError as exc:
        return _fail(str(exc))
    if args.student and shard.count > 1:
        return _fail(texts.STUDENT_AND_SHARD)
    try:
        work = _work(args)
    except ValueError as exc:  # a mistake in course.toml, the roster or the times
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
            )
    except grade.GradingError as exc:
        print(f"python -m grader: error: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, process.Stopped):
        print(msg.INTERRUPTED.format(out=args.out), file=sys.stderr)
        return INTERRUPTED
    except OSError as exc:  # the output folder filled up or went away
        return _fail(texts.WRITE_FAILED.format(out=args.out, why=exc.strerror or exc))
    _show(results, args.out)
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


def _merge(args: argparse.Namespace) -> int:
    from grader.grading import grade, merge, texts

    try:
        batch, results, similar = merge.gather(args.slices, args.out)
    except merge.MergeError as exc:
        return _fail(str(exc))
    if problem := _writable(args.out):
        return _fail(problem)
    try:
        grade.write(args.out, results, batch, similar)
    except OSError as exc:
        return _fail(texts.WRITE_FAILED.format(out=args.out, why=exc.strerror or exc))
    _show(results, args.out)
    return 0


def _show(results, out: Path) -> None:
    """The gradebook and the summary on the terminal, then where the files are."""
    import json

    from grader.grading import report, similarity, summary, texts

    print(report.table(results))
    print()
    print(summary.text(results))
    try:
        similar = json.loads((out / "results.json").read_text()).get("similar", [])
    except (OSError, ValueError, AttributeError):  # written a moment ago: only if tampered
        similar = []
    if similar:
        print(texts.SIMILARITY_FOUND.format(count=len(similar), page=out / similarity.HTML))
    print(f"\nwrote {out / 'gradebook.csv'}, {out / 'results.json'}, {out / summary.MARKDOWN}, "
          f"{out / summary.PNG}, {out / similarity.HTML} and {out / 'feedback'}/")
