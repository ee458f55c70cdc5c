"""What batch grading (grader/grading/ and ``python -m grader``) says to the instructor,
one section per step; the texts it shares with ``check()`` are in grader.messages."""

from __future__ import annotations

# --- the class: its submissions folder and --out (grader/cli.py) --------------------------
SUBMISSIONS_NOT_A_FOLDER = "{folder} is not a folder of submissions"
NO_SUBMISSION = "{folder} holds no submission (.ipynb, .py or folder)"
OUT_NOT_WRITABLE = "cannot write to {out}: {why}"
OUT_INSIDE_SUBMISSIONS = (
    "--out {out} is inside the submissions folder {submissions}, where it would be graded as a "
    "student: choose a folder outside it"
)
SUBMISSIONS_UNREADABLE = "cannot read the submissions folder {folder}: {why}"
WARN_IGNORED = (
    "warning: left out {count} entr{ies} of {folder} that are not submissions (a .ipynb or .py "
    "file, or a folder): {names}"
)
WRITE_FAILED = "cannot write the results to {out}: {why}"
BAD_LIMITS = "--jobs, --timeout and --total-timeout must be positive, --memory at least 256 (MiB)"
WROTE_OUTPUTS = "\nwrote {files}"
EXPORT_WROTE = "wrote {where}: {count} student(s), {form} format"
EXPORT_UNMATCHED = (
    "warning: left out, {count} student(s) with no {keys} on the roster, which {form} cannot "
    "match to its students (their points are in gradebook.csv: add them to the roster and "
    "grade with --roster, or enter them in the LMS): {names}"
)

# --- reading a submission (grader/grading/submission.py) ----------------------------------
FILE_TOO_LARGE = "larger than {mib:g} MiB"
NOTEBOOK_TOO_LARGE = (
    "larger than {mib:g} MiB: clear its outputs (Edit > Clear Outputs of All Cells), save, and "
    "hand it in again"
)
NOTEBOOK_TOO_MANY_CELLS = "more than {most} code cells: put the code in fewer cells"
TOO_DEEP = "{name}: folders nested deeper than {most}; the files below them were not read"
TOO_MANY_FILES = "{name}: more than {most} files and folders; none of them was read"
FILE_NOT_TEXT = "not UTF-8 text ({error} at byte {at}): a binary file, or another encoding"
NOTEBOOK_EMPTY = "the file is empty, not a notebook"
FILE_SYMLINK = (
    "a symbolic link, which the grader does not follow: hand in the file itself, not a link"
)
FILE_NOT_REGULAR = "not a regular file"
NOTEBOOK_FORMAT = (
    "notebook format {found!r} is not supported (4 is): open it in Jupyter and save it again"
)
NOTHING_TO_GRADE = (
    "nothing to grade: no notebook (.ipynb) or Python file (.py) was handed in (hidden files "
    "and folders are left out)"
)
FILE_BINARY = "it is a binary file, not code"
NOTEBOOK_TOO_MANY_ITEMS = (
    "over {most:,} JSON values: clear its outputs (Edit > Clear Outputs of All Cells), save, and "
    "hand it in again"
)
NOTEBOOK_INVALID_JSON = "not a valid notebook (invalid JSON: {error})"
NOTEBOOK_NOT_OBJECT = "not a valid notebook (not a JSON object)"
NOTEBOOK_NO_CELLS = "not a valid notebook (no list of cells)"
NOTEBOOK_CELL_UNREADABLE = "cell {number} has no readable source"

# --- grading a batch, and --shard (grader/grading/grade.py) -------------------------------
SHARD_SYNTAX = "--shard takes K/N, two whole numbers such as 2/4, not {text!r}"
SHARD_RANGE = "--shard {text}: K must be between 1 and N"
WARN_STORE_CHANGED = (
    "warning: the stored results of {students} changed while the batch was graded (by a "
    "submission running without the sandbox?); they were written again from the grader's own "
    "results"
)
WARN_REFERENCE_NOT_KEPT = (
    "note: the reference run is not kept for later batches, so every batch runs it again: "
    "the cache folder {folder} {why}; set GRADER_CACHE_DIR to a folder that can hold it"
)
CACHE_NOT_MADE = "cannot be made ({why})"
CACHE_NOT_OURS = "is not yours alone (another user owns it, or may write it)"
CACHE_UNREACHABLE = (
    "cannot be reached by the workers' user: a grader started by root runs them as nobody, "
    "who must be let through every folder above it (as root's home does not)"
)
BATCH_NOT_NAMES = "the class or the exercises are not a list of names"
BATCH_BAD_LIMITS = "the limits are not a table of names to numbers"
BATCH_BAD_ROSTER = "the roster is not a table of names to id, display name and email"
NO_SOLUTIONS = "the reference solutions folder {solutions} does not exist"
SOLUTIONS_UNREADABLE = "cannot read the reference solutions: {problems}"
SOLUTION_FAILS = (
    "the reference solution fails {case} on {devices} devices: {outcome}; "
    "problems: {problems}"
)
SAME_STUDENT = "several entries belong to the same student: {students}"

# --- regrading some students: --student (grader/grading/grade.py) -------------------------
STUDENT_UNKNOWN = "--student {students}: no such entry in the submissions folder"
STUDENT_NOTHING_GRADED = (
    "--student regrades into a graded class, but {out} holds no results.json: grade the "
    "class first"
)
WARN_OTHER_GRADER = (
    "warning: {out} was graded by another version of the grader, its tests, the solutions or "
    "JAX: the students regraded now and the others were not graded alike (grade the class "
    "again, with --force, to make them so)"
)
STUDENT_AND_SHARD = "--student regrades into a whole class: leave out --shard"
STUDENT_OTHER_WORK = (
    "{out} holds {before}, not these exercises: give the same --assignment as when the class "
    "was graded"
)
STUDENT_A_SLICE = (
    "{out} holds slice {shard} of a class: regrade into the merged folder, or regrade the "
    "slice with --shard"
)

# --- the roster and the submission times (grader/grading/roster.py) -----------------------
CSV_UNREADABLE = "not a readable CSV file ({why})"
CSV_EMPTY = "the file is empty: it needs a header line"
CSV_TOO_MANY_CELLS = "more cells than the header has columns"
ROSTER_UNKNOWN_COLUMN = (
    "unknown column {column!r}; columns: {known}, and extension_days:ASSIGNMENT for the "
    "assignments {assignments}"
)
ROSTER_NO_NAME = "no name column: it holds each student's entry name in the submissions folder"
ROSTER_EMPTY_NAME = "a row without a name"
ROSTER_DUPLICATE = "{name!r} is listed twice"
ROSTER_BAD_DAYS = "{column} is {value!r}: a number of days, 0 or more"
TIMES_HEADER = "the header must be exactly: name,submitted_at"
TIMES_BAD = "{value!r} is not a date and time such as 2026-12-04T23:59:00+01:00"
TIMES_NO_ZONE = (
    "{value!r} has no time zone: add its offset (+01:00), or set timezone in course.toml"
)
# --- the instructor's adjustments (grader/grading/adjustments.py) --------------------------
ADJUST_HEADER = "the header must be exactly: {columns}"
ADJUST_EMPTY = "a row without a student or an exercise"
ADJUST_BAD_POINTS = "points is {value!r}: a number such as 2 or -1.5"
ADJUST_NO_COMMENT = "a row without a comment: the student reads it in their feedback"
ADJUST_NO_STUDENT = "no student {student!r} is graded here (the gradebook's first column)"
ADJUST_NO_EXERCISE = "{exercise!r} is not an exercise graded here"
ADJUST_UNMATCHED = "adjustments that match no graded exercise (nothing written): {rows}"
WARN_ADJUST_UNMATCHED = "warning: adjustments that match no graded exercise: {rows}"
ADJUST_APPLIED = "{count} adjustment(s) applied from {path}"
SUMMARY_ADJUSTED = (
    "The totals include the instructor's adjustments (adjustments.csv) of {count} exercise(s) "
    "of {students} student(s)."
)
ADJUST_NO_FILE = "{path} does not exist: write it first, with the header {columns}"

WARN_NOT_ON_ROSTER = "warning: graded, but not on the roster: {students}"
WARN_NO_TIME = (
    "warning: the times file does not say when {students} handed in: the newest change of "
    "their files is taken instead"
)

# --- stored results (grader/grading/store.py) ---------------------------------------------
NOT_JSON = "{constant} is not JSON"

# --- progress of a batch (grader/grading/progress.py) -------------------------------------
PROGRESS_LINE = "{verb} {student}: {points:g}/{max_points:g} [{done}/{total}]"

# --- summary of a batch (grader/grading/summary.py) ---------------------------------------
SUMMARY_SPREAD = (
    "{students} student(s), total points out of {top:g}: mean {mean:.1f}, median {median:g}, "
    "lowest {low:g}, highest {high:g}; {full} with full marks"
)
SUMMARY_NO_STUDENT = "no student in this batch handed anything in"
SUMMARY_LATE = "; {count} late (totals after the penalty)"
SUMMARY_MISSING = "; {count} on the roster handed nothing in"
SUMMARY_FAILURE = (
    "{exercise}: {failures} of {handed_in} ({rate:.0%}) without full marks "
    "({failed} failed, {partial} partly)"
)
SUMMARY_UNREADABLE_HEADING = (
    "{count} hand-in(s) the grader could not read, whole or in part (their zeros are no "
    "answers):"
)
SUMMARY_UNREADABLE = "{student}: {what}"
SUMMARY_NOTHING_FAILED = "every student who handed an exercise in got full marks for it"
SUMMARY_NOTHING_HANDED_IN = "no exercise was handed in"
SUMMARY_TESTS_DEFINITION = (
    "Each test failed by a student who handed its exercise in, the most failed first; the "
    "hint most of them were given names their commonest mistake."
)
SUMMARY_RATE_DEFINITION = (
    "Of the students who handed an exercise in (the function is defined and is not the stub), "
    "how many did not get full marks, the most failed first. Exercises nobody handed in are "
    "left out."
)

# --- exporting the gradebook for an LMS (grader/grading/export.py) ------------------------
EXPORT_UNKNOWN_FORMAT = "unknown format {form!r}; formats: {known}"
EXPORT_A_SLICE = "{out} holds slice {shard} of a class: merge the slices, then export"
EXPORT_WHOLE_COURSE = "course"
EXPORT_MISSING = "nothing handed in"
EXPORT_EMPTY = "nothing to grade in what was handed in"
EXPORT_UNREADABLE = "some of what was handed in could not be read: {what}"
EXPORT_NOT_READ = (
    "warning: {count} student(s) whose hand-in was empty or could not be read, whose points "
    "are no answers (see their feedback): {names}"
)
HAND_IN_READ, HAND_IN_EMPTY, HAND_IN_UNREADABLE = "read", "empty", "unreadable"
EXPORT_PENALTY = " ({points:g} earned, less {penalty:g} for {days} day(s) late)"

# --- similar code (grader/grading/similarity.py) ------------------------------------------
SIMILARITY_INTRO = (
    "Pairs of students whose code for one exercise is alike once names, strings, comments and "
    "layout are set aside and what the course gives everyone (stub, lessons, reference "
    "solution) is removed: one of the two has at least {threshold:.0%} of its code in the "
    "other's, and they share at least {shared} characters of it. A student whose function "
    "holds the reference solution's own lines as written (names and comments too) is paired "
    "with it, as solutions/ (the reference): the solutions are public. This flags; it does "
    "not judge: read the code side by side in {page}."
)
SIMILARITY_NONE = "No pair of submissions is that alike."
SIMILARITY_REFERENCE = (
    "Students whose function holds the reference solution's own lines as written, by exercise "
    "(the share of the reference's lines it holds, in order; solutions/ is public):"
)
WARN_NO_SIMILARITY = (
    "warning: the similarity report could not be made ({why}); the grades are not affected"
)
SIMILARITY_FOUND = (
    "{students} pair(s) of students with similar code ({exercises} answer(s) alike in all, "
    "one per pair and exercise): read {page}"
)
SIMILARITY_FOUND_REFERENCE = (
    "{students} student(s) whose code holds the reference solution's own lines ({exercises} "
    "answer(s)): read {page}"
)
SIMILARITY_NO_PAIR = "No pair of students is that alike."

# --- merging the slices of --shard (grader/grading/merge.py) ------------------------------
OUTPUT_NOT_A_FOLDER = "{folder} is not a folder"
OUTPUT_NO_RESULTS = "{folder} holds no results.json: it is not an output folder of `grade`"
OUTPUT_DAMAGED = "{path} cannot be read as the grader's results ({why})"
OUTPUT_NO_SLICE = (
    "{path} does not say which slice it holds (written by an older grader?): grade it again"
)
MERGE_OTHER_GRADER = (
    "{a} and {b} were graded by different versions of the grader, its tests, the solutions "
    "or JAX: grade every slice with the same course"
)
MERGE_OTHER_LIMITS = "{a} and {b} were graded with different limits ({la} and {lb})"
MERGE_OTHER_SPLIT = (
    "{a} is slice {sa} but {b} is slice {sb}: every slice must come from one --shard K/N "
    "split, with the same N"
)
MERGE_OTHER_WORK = "{a} graded {wa} but {b} graded {wb}: merge slices of one assignment"
MERGE_OTHER_ROSTER = "{a} and {b} were graded with different rosters"
MERGE_OTHER_CLASS = (
    "{a} and {b} were cut from different classes (the submissions folder changed between "
    "them): grade every slice from the same folder"
)
MERGE_MISSING = "slice(s) {missing} missing: give the output folder of every slice"
MERGE_CONFLICT = "{student} has different results in {a} and {b}"
MERGE_INCOMPLETE = (
    "no results for {students}, who are in the class: was every slice graded to the end?"
)
MERGE_STRANGERS = "results for {students}, who are not in the class the slices were cut from"
MERGE_INTO_A_SLICE = "--out {out} is one of the slices: merge into another folder"

# --- collect: an LMS's download of submissions (collect.py) ---------------------------------
COLLECT_NOT_EMPTY = (
    "{to} is not an empty folder: collect into a new one, so that nothing is mixed"
)
COLLECT_NOT_A_ZIP = "{path} cannot be read as a zip ({why})"
COLLECT_TOO_MANY = "{path} holds more than {most} entries"
COLLECT_NOT_A_SUBMISSION = "not named as {lms} names the entries of a submission"
COLLECT_BAD_ZIP = "a zip that cannot be read ({why})"
COLLECT_ZIP_TOO_MANY = "a zip of more than {most} entries"
COLLECT_NOT_A_NOTEBOOK = "not a notebook or .py file"
COLLECT_UNREADABLE = "cannot be read ({why})"
COLLECT_MEMBER_TOO_LARGE = "larger than {mib:g} MiB"
MANIFEST_HEADER = (
    "not the file collect writes (its header is {columns}): move it out of the submissions "
    "folder, or write it again with collect"
)
COLLECT_STUDENT_TOO_LARGE = "past the {mib:g} MiB written for one student"
COLLECT_METHOD = (
    "compressed in a way collect does not unpack (only stored or deflated entries, as every "
    "LMS and zip tool writes them)"
)
COLLECT_BOMB = "unpacks to over {ratio} times its compressed size (a zip bomb?)"
COLLECT_MIXED = (
    "{path} mixes entries named as Canvas names them ({canvas}) and as Moodle does "
    "({moodle}): say which LMS wrote it with --lms canvas or --lms moodle"
)
COLLECT_EITHER = (
    "every entry of {path} is named as both Canvas and Moodle name them: say which LMS wrote "
    "it with --lms canvas or --lms moodle"
)
COLLECT_REPLACED = "an earlier copy, replaced by {entry}"
COLLECT_DONE = "{students} student(s) from a {lms} download into {to}/ ({files} file(s))"
COLLECT_LEFT_OUT = "{count} entr(ies) of the download not written, each with why, in {manifest}"
COLLECT_NOT_ON_ROSTER = (
    "not matched to the roster by lms_id, so named from the download: {names}"
)

# --- regrading: why, and whose points changed (store.py, grade.py) --------------------------
STALE_FILES = "its files changed"
STALE_PART = "{part} changed"
STALE_OLDER_GRADER = "an earlier version of the grader graded it"
STALE_UNREADABLE = "its stored result could not be read"
STALE_FORCED = "--force"
STALE_ASKED = "--student"
REGRADING = "grading again {count} student(s) graded before into {out}: {why}"
REGRADED_CHANGED = "points changed for {count} of {regraded} student(s) graded again: {changes}"
REGRADED_SAME = "points unchanged for the {regraded} student(s) graded again"
