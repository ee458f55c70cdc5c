"""Command line: argument parsing only; what each verb does is in :mod:`grader.verbs`."""

from __future__ import annotations

import argparse
from pathlib import Path

from grader import messages as msg
from grader.verbs import USAGE_ERROR


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, no usage dump
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    from grader.grading.export import FORMATS

    parser = _Parser(prog="python -m grader", description=msg.CLI_DESCRIPTION)
    verbs = parser.add_subparsers(dest="verb", required=True, parser_class=_Parser)

    grade = verbs.add_parser("grade", help="grade a folder of submissions")
    grade.add_argument("submissions", type=Path, help="one entry (folder or file) per student")
    grade.add_argument("--out", type=Path, required=True, help="folder for the gradebook")
    grade.add_argument("--jobs", type=int, default=None,
                       help="runs at once, each one submission on one device count "
                            "(default: the number of cores)")
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
    grade.add_argument("--rerun-reference", action="store_true",
                       help="run the reference solutions again rather than reading what an "
                       "earlier batch of the same grader kept (in $GRADER_CACHE_DIR, else "
                       "~/.cache/jax-course-grader)")
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

    adjust = verbs.add_parser("adjust", help="apply the instructor's adjustments (CSV: "
                              "student,exercise,points,comment) to an output folder's grades")
    adjust.add_argument("out", type=Path, help="an output folder of `grade` (or `merge`)")
    adjust.add_argument("adjustments", type=Path, nargs="?", default=None, metavar="CSV",
                        help="the adjustments, copied to OUT/adjustments.csv (default: "
                        "OUT/adjustments.csv), which later grading into OUT applies again")

    collect = verbs.add_parser("collect", help="unpack an LMS's download of submissions "
                               "(Canvas's or Moodle's zip) into a folder per student")
    collect.add_argument("download", type=Path, help="the zip the LMS gave")
    collect.add_argument("--to", type=Path, required=True,
                         help="a new or empty folder: the submissions folder for `grade`")
    collect.add_argument("--roster", type=Path, default=None, metavar="CSV",
                         help="the class list: a student whose lms_id is the download's id "
                         "gets their roster name")
    collect.add_argument("--lms", choices=("canvas", "moodle"), default=None,
                         help="which LMS made the download (default: read off its names)")
    collect.add_argument("--config", type=Path, default=None, metavar="TOML",
                         help="the course config, for the roster's extension columns "
                         "(default: course.toml of the course)")

    export = verbs.add_parser("export", help="write the gradebook of an output folder for a "
                              "learning management system to import")
    export.add_argument("out", type=Path, help="an output folder of `grade` (or `merge`)")
    export.add_argument("--format", required=True, dest="form",
                        help=" or ".join(", ".join(FORMATS).rsplit(", ", 1)))
    export.add_argument("--to", type=Path, default=None,
                        help="the file to write (default: OUT/FORMAT.csv)")
    export.add_argument("--column", default=None,
                        help="the points column's name (default: the assignment's); for "
                             "Canvas, an existing assignment's column title as its gradebook "
                             "export writes it, such as 'Lesson 3 (12345)', or Canvas makes "
                             "a new assignment")

    verbs.add_parser("generate", help="write exercises/ from solutions/")
    validate = verbs.add_parser(
        "validate", help="check that solutions score full marks, stubs zero, exercises/ is in "
        "sync, every exercise has public and hidden tests and check()'s stored values are the "
        "reference's")
    validate.add_argument("only", nargs="*", metavar="LESSON_OR_EXERCISE",
                          help="validate only these lessons or exercises (default: all)")
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
    refresh.add_argument("lessons", nargs="*", metavar="LESSON_OR_EXERCISE",
                         help="lessons or exercises to refresh (default: every lesson)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from grader import verbs

    return getattr(verbs, args.verb.replace("-", "_"))(args)
