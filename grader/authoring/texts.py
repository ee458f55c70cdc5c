"""What the authoring commands (``python -m grader exercises``, ``release``) say when they
cannot do their work."""

from __future__ import annotations

# --- exercise notebooks made from the solved ones (grader/authoring/generate.py) -----------
MARKER_UNPAIRED = "a # BEGIN SOLUTION / # END SOLUTION marker has no partner"
SOLUTION_LEAKS = (
    "solutions/{notebook}: `{helper}`, defined outside the solution markers, is called by the "
    "solution of `{exercise}` and by nothing else in the student copy, which would hand it out: "
    "move it between # BEGIN SOLUTION and # END SOLUTION, or, if students are meant to use it, "
    "name it in the exercise's text"
)
LIST_NO_HEADING = (
    "notebooks/{lesson}.ipynb lists its exercises from grader/course.py, and solutions/"
    "{lesson}.ipynb has no heading for `{name}`: give it one, such as \"## 1. ★ `{name}(...)`: "
    "what it does\" (its stars say how hard it is; the lesson lists its title)"
)
LIST_NUMBER = (
    "solutions/{lesson}.ipynb numbers `{name}` {number}, and it is exercise {position} of the "
    "lesson in grader/course.py: number the headings in that order"
)
LIST_ORDER = (
    "the lesson lists its exercises easiest first, in grader/course.py's order, and `{name}` "
    "({stars}) comes after `{before}` ({harder}): move it in grader/course.py to where its "
    "stars belong, and number the headings in solutions/{lesson}.ipynb again"
)
LIST_NO_PLACE = (
    "notebooks/{lesson}.ipynb needs one Markdown cell with \"## Exercises\" and, under it, a "
    "line starting \"{start}\": the list of its exercises is written from there to the "
    "cell's end"
)

# --- the public tests' expected values (grader/authoring/refresh_expected.py) --------------
REFERENCE_FAILS = "the reference fails {case} on {devices} devices: {outcome}"
REFRESH_RUNNING = "{lesson}: running its {tests} public tests' references on {devices} device(s)"

# --- is the course ready? (grader/authoring/validate.py) ----------------------------------
VALIDATE_SYNC = ("exercises/ is what solutions/ generates, and hands out no solution "
                 "({notebooks} notebooks): {verdict}")
VALIDATE_TESTS = (
    "every one of the {exercises} exercises has public and hidden tests ({public} public, "
    "{hidden} hidden): {verdict}"
)
VALIDATE_RUNNING = "running {what} through all {tests} tests on {devices} devices..."
VALIDATE_SOLUTIONS = "the reference solutions pass every test: {points:g} points of {points:g}"
VALIDATE_SOLUTIONS_FAIL = "a reference solution fails a test"
VALIDATE_STUBS = (
    "the stubs of the {exercises} exercises score {points:g} points (0, each 'not attempted', "
    "wanted): {verdict}"
)
VALIDATE_STORED = (
    "check()'s stored expected values: each of the {public} public tests on {stored} devices, "
    "the reference's on {devices}: {verdict}"
)
VALIDATE_UNSTORED = ("no stored expected value of {case} on {devices} device(s), which check() "
                     "needs (run `make expected`)")
VALIDATE_STALE = ("the stored expected value of {case} on {devices} device(s) is not the "
                  "reference's ({where}; run `make expected`)")
VALIDATE_BAD = "{count} problem(s), listed below"
VALIDATE_PROBLEM = "problem: {problem}"
VALIDATE_READY = "the course is ready"
VALIDATE_READY_ONLY = "{names}: ready (the rest of the course was not validated)"
VALIDATE_UNKNOWN = "not a lesson or an exercise of the course: {names}"
VALIDATE_COUNT = "{count} problem(s)"

# --- the student bundle (grader/authoring/release.py) -------------------------------------
DESTINATION_NOT_EMPTY = "{destination} is not empty"
RELEASE_FOLDER = "  {folder}: {count} file(s)"
RELEASE_TOP_LEVEL = "top level"
RELEASE_WROTE = "wrote {count} files to {destination}"
RELEASE_FOR = " for the assignment {assignment}"

# --- what a command wrote (generate, refresh-expected) ------------------------------------
WROTE = "wrote {path}"
UNCHANGED = "{what}: nothing changed"

# --- what the student bundle's README says (grader/authoring/student/README.md) ------------
STUDENT_COURSE = (
    "The whole course: {lessons} lessons on distributed computing in JAX, and {exercises} "
    "exercises to solve."
)
STUDENT_ASSIGNMENT = (
    "Assignment **{name}**: {lessons} lesson(s) on distributed computing in JAX, and "
    "{exercises} exercises to solve, listed below."
)
STUDENT_DUE = "Hand it in by **{due}**."
STUDENT_LATE = (
    "Work handed in later loses {percent:g}% of its points for each day or part of a day "
    "late (after {grace:g} minutes of grace), {most:g}% at most. If you need more time, ask "
    "before the due date."
)
