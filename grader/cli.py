"""Command line: argument parsing only; each verb's work lives in its own module."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

USAGE_ERROR = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m grader", description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    grade = verbs.add_parser("grade", help="grade a folder of submissions")
    grade.add_argument("submissions", type=Path, help="one entry (folder or file) per student")
    grade.add_argument("--out", type=Path, required=True, help="folder for the gradebook")
    grade.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                       help="submissions graded at once (default: the number of cores)")
    grade.add_argument("--timeout", type=float, default=60.0,
                       help="seconds allowed per exercise and per notebook cell (default 60)")
    grade.add_argument("--solutions", type=Path, default=None,
                       help="reference solutions (default: solutions/ of the course)")
    grade.add_argument("--memory", type=int, default=4096,
                       help="memory cap per worker process in MiB (default 4096)")
    grade.add_argument("--force", action="store_true",
                       help="regrade every submission, even those graded before into OUT")
    grade.add_argument("--no-sandbox", action="store_true",
                       help="run workers as plain processes even where bubblewrap is installed")

    verbs.add_parser("generate", help="write exercises/ from solutions/")
    verbs.add_parser("validate", help="check that solutions score full marks, stubs zero, "
                     "exercises/ is in sync and every exercise has public and hidden tests")
    release = verbs.add_parser("release", help="write the student bundle (no solutions, no "
                               "hidden tests) to a new or empty folder")
    release.add_argument("destination", type=Path)
    refresh = verbs.add_parser(
        "refresh-expected", help="recompute the public tests' expected values from solutions/"
    )
    refresh.add_argument("lessons", nargs="*", help="lessons to refresh (default: all)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.verb == "grade":
        return _grade(args)
    if args.verb == "validate":
        from grader import validate

        found = validate.problems()
        for problem in found:
            print(f"problem: {problem}")
        print("the course is ready" if not found else f"{len(found)} problem(s)")
        return 1 if found else 0
    if args.verb == "release":
        from grader import release

        try:
            files = release.release(args.destination)
        except (release.ReleaseError, OSError) as exc:
            return _fail(str(exc))
        print(f"wrote {len(files)} files to {args.destination}")
        return 0
    if args.verb == "generate":
        from grader import notebooks

        for name in notebooks.generate():
            print(f"wrote {name}")
        return 0
    from grader import expected

    try:
        written = expected.refresh(args.lessons)
    except ValueError as exc:
        return _fail(str(exc))
    for path in written:
        print(f"wrote {path}")
    return 0


def _fail(message: str) -> int:
    print(f"python -m grader: error: {message}", file=sys.stderr)
    return USAGE_ERROR


def _grade(args: argparse.Namespace) -> int:
    from grader import grade, report
    from grader.runner import Limits

    if not args.submissions.is_dir():
        return _fail(f"{args.submissions} is not a folder of submissions")
    if not grade.submission.discover(args.submissions):
        return _fail(f"{args.submissions} holds no submission (.ipynb, .py or folder)")
    if args.jobs < 1 or args.memory < 256 or not 0 < args.timeout < float("inf"):
        return _fail("--jobs and --timeout must be positive, --memory at least 256 (MiB)")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        return _fail(f"cannot write to {args.out}: {exc.strerror or exc}")
    limits = Limits(exercise=args.timeout, cell=args.timeout, memory=args.memory * 2**20)
    try:
        results = grade.grade(
            args.submissions,
            args.out,
            jobs=args.jobs,
            limits=limits,
            use_sandbox=not args.no_sandbox,
            force=args.force,
            solutions=args.solutions or grade.SOLUTIONS,
            progress=lambda r, reused: print(
                f"{'kept' if reused else 'graded'} {r.student}: {r.total:g}/{r.max_total:g}",
                file=sys.stderr,
            ),
        )
    except grade.GradingError as exc:
        print(f"python -m grader: error: {exc}", file=sys.stderr)
        return 1
    print(report.table(results))
    print(f"\nwrote {args.out / 'gradebook.csv'}, {args.out / 'results.json'} and "
          f"{args.out / 'feedback'}/")
    return 0
