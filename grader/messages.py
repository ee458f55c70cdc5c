"""Texts shared by the test framework, ``check()`` and the grading of results: the statuses
of a test, what a test found, the judge's verdicts, and what the workers, the verifiers and the
sandbox report. Templates are named module-level strings, filled in with ``.format(...)``.

The other texts live next to what they belong to: the lessons' hints and the messages of their
tests in grader.hints (one module per lesson), the lesson helpers' in grader.lessons.texts,
batch grading's in grader.grading.texts, the authoring commands' in grader.authoring.texts.
"""

from __future__ import annotations

# --- status of an exercise or a test ------------------------------------------------------
PASSED = "passed"
FAILED = "failed"
PARTIAL = "partial"
ERROR = "error"
NOT_ATTEMPTED = "not attempted"
NOT_FOUND = "not found"
TIMEOUT = "timeout"
CRASHED = "crashed"

# --- standing of a submission against its assignment's due date and the roster ------------
ON_TIME = "on time"
LATE = "late"
#: Work that has no due date.
HANDED_IN = "handed in"
#: On the roster, nothing handed in.
MISSING = "missing"
MSG_MISSING = "nothing was handed in"
#: One adjustment of an exercise's points by the instructor (adjustments.csv), as the student
#: reads it in their feedback.
ADJUSTED = "Adjusted by your instructor: {points} point(s): {comment}"

# --- what a test found: the message of its result (grader/framework/cases.py)
MSG_NOT_FOUND = "not found: no function named `{name}` is defined in the submission"
MSG_NOT_CALLABLE = "not found: `{name}` is defined but is a {kind}, not a function"
MSG_NOT_ATTEMPTED = "not attempted: `{name}` still raises NotImplementedError"
MSG_RAISED = "`{name}` raised {type}: {message}"
MSG_TIMEOUT = "stopped after {seconds:g} s on {devices} device(s): it took too long or hung"
MSG_CRASHED = "the process running `{name}` on {devices} device(s) ended: {how}"
MSG_BAD_DATA = "`{name}` returned something the grader cannot read: {problem}"
MSG_NOT_RUN = "not run: {reason}"
#: A test the course's own code could not run on this JAX (:class:`CourseFailure`): never
#: the student's mistake.
COURSE_FAILED = ("the course's own code failed {what} on JAX {version} ({error}): not your "
                 "function's doing; the course holds on JAX {held}")
MSG_UNVERIFIED = ("the grader could not check how `{name}` computes from the program it "
                  "compiles to: {why}")
MSG_NOT_VERIFIED = ("what was measured of how `{name}` computes did not come from the program "
                    "it compiles to, so it does not count")
MSG_HOST_CALLBACK = ("jax.export cannot save a program that calls back into Python "
                     "(jax.debug.print, jax.debug.callback, jax.pure_callback), and how a "
                     "function computes is measured on its saved program: take such calls out "
                     "to have it measured")
MSG_HOW_NEEDS_VALUES = ("this test of how `{name}` computes scores only once `{name}` returns "
                        "the right values: fix the tests of its values first")
MSG_DIFFERS = ("`{name}` was run on fresh inputs next to the reference solution and does not "
               "compute the same ({why}): its collectives and layout score only once it "
               "computes what the exercise asks")
MSG_TAMPERED = ("`{name}` changed the grader's or JAX's own code while it was measured "
                "({what}), so the measurement does not count")
MSG_THREADS = ("`{name}` was not measured: the submission left {count} thread(s) running, "
               "which could change the grader while it measures; join your threads (or shut "
               "your thread pools down) before your code finishes")
MSG_REFERENCE_FAILED = "the reference solution failed this test: {problem}"

# --- the judge's verdicts: how a measurement differs from the reference's (framework/judge.py)
MSG_SHAPE = "{where} has shape {got} but should have shape {want}"
MSG_KIND = "{where} holds {got} values but should hold {want} values"
MSG_VALUES = "{where} has the wrong values"
MSG_TYPE = "{where} is {got} but should be {want}"
MSG_KEYS = "{where} has keys {got} but should have keys {want}"
MSG_LENGTH = "{where} has {got} entries but should have {want}"

MSG_NOT_TRACED = "no {primitive} over axis {axis!r} was traced (found: {seen})"
MSG_NOT_COMPILED = "the compiled code has no {op}, so no data moved between devices"
MSG_MESH = "expected a shard_map over the mesh {want}, found {got}"
MSG_DEVICES = "expected a program on {want} device(s), as the exercise's mesh has; it runs on {got}"

# --- check() in the notebook (grader/check.py) --------------------------------------------
CHECK_UNKNOWN_EXERCISE = "{name!r} is not an exercise of this course; the exercises: {known}"
CHECK_PASS_FUNCTION = "pass the function itself: check({name}), not check({name!r})"
CHECK_USAGE = "usage: python -m grader.notebook_check exercises/NN_lesson.ipynb [...]"
CHECK_NOT_A_LESSON = "{path}: not an exercise notebook of the course (exercises/NN_lesson.ipynb)"
CHECK_UNREADABLE = "{path}: cannot be read as a notebook ({why})"
CHECK_CELL_RAISED = "  code cell {number} raised {error}; the cells after it still ran"
#: What ``check`` counts in its first line: public tests, not points (the grader's points come
#: from its hidden tests too), and on which device counts they all passed.
CHECK_COUNTED = "{passed} of {total} public tests pass"
CHECK_ON = "on {devices} devices"
#: A test counts where it passes on every device count: said so where they disagree.
CHECK_SPLIT = "on every device count: it passes on {good} devices, fails on {bad}"
CHECK_SUMMARY = (
    "  {passed} of {total} exercises pass the public tests (the grader runs hidden tests "
    "too, on 8 and 2 devices)"
)
CHECK_OTHER_DEVICES = (
    "checked on this kernel's {devices} device(s), but the grader runs this exercise on "
    "{graded} devices: run the notebook's first cell (it asks for {default}) in a fresh "
    "kernel (Kernel > Restart Kernel) to check it as it will be graded"
)
CHECK_NOT_RUN_ELSEWHERE = (
    "Not checked on {devices} devices, where the grader runs it too: {why}."
)
MSG_NOT_STORED = (
    "the course has no stored expected value of `{test}` on {devices} device(s), so this test "
    "cannot be checked: not your mistake. The course's maintainers store them with `make "
    "expected` (or `python -m grader refresh-expected {lesson}` for this lesson alone)"
)
MSG_NO_EXPECTED = (
    "no expected values are stored for {devices} device(s); run the first cell of the "
    "notebook (it asks for {default} devices) and restart the kernel if needed"
)

# --- the registry of tests (grader/framework/cases.py) and of measures (grader/framework/probes.py)
CASE_UNKNOWN_EXERCISE = "unknown exercise {exercise!r}"
CASE_TWICE = "two tests are named {id}"
MEASURE_TWICE = "two measures are named {name!r}"
PROGRAM_TOO_FEW_DEVICES = "the program is for {want} devices; there are {got}"

# --- plain data: what a worker replies, checked by the grader (grader/framework/plain.py)
PLAIN_NOT_ARRAY = "{type} cannot be read as an array: {error}"
PLAIN_NOT_NUMBERS = "expected numbers, got a {type} of {dtype}"
PLAIN_TOO_LARGE = "array of {size} elements is larger than any test needs"
PLAIN_MALFORMED = "malformed data: {data}"
PLAIN_MALFORMED_ARRAY = "malformed array data: {data}"
PLAIN_DTYPE_KIND = "dtype {dtype} is not of kind {kind}"
PLAIN_SHAPE = "array data does not have the stated shape {shape}"
PLAIN_UNVERIFIED = "a measurement of how the function computes was not verified"
PLAIN_TOO_DEEP = "data nested too deeply"
# grader.wire: values sent between the tester and a worker
WIRE_TOO_DEEP = "a value nested too deeply"
WIRE_CANNOT_SEND = "a value of type {type}, which the grader does not read"
WIRE_DTYPE = "an array of dtype {dtype}, which the grader does not read"
WIRE_TOO_LARGE = "a value of over {elements:,} numbers, larger than any test needs"
WIRE_SHARDING = "an array placed by a {type}, which the grader does not read"
WIRE_SPEC = "a PartitionSpec the grader does not read"
WIRE_MALFORMED = "malformed data ({why})"
# grader.remote: the student's function called from the tester
REMOTE_TRACED = ("a test traced the function under test itself; it must ask for its program "
                 "(grader.framework.probes.Program.of) or call it jitted "
                 "(grader.framework.probes.jitted)")

# --- the workers that run a submission, and their replies (grader/workers/) ---------------
MSG_WORKER_FAILED = "the grader could not start a worker on {devices} device(s): {why}"
#: Why a worker or a verifier did not start: it ended, saying ``last`` (its last line), or it
#: has another number of devices than asked for.
WORKER_ENDED_SAYING = "{how}: {last}"
WORKER_OTHER_DEVICES = "it has {devices} devices"
MSG_RUN_TOO_LONG = ("the submission used up the {seconds:g} s it may take in all on "
                    "{devices} device(s), so the rest was not run")
MSG_RESTORED = ("the submission changed the grader's or JAX's own code ({what}); it was put "
                "back before each of its functions was measured")
MSG_LOOKUP_FAILED = ("after the cells ran, looking their functions up {how}, so nothing "
                     "could be measured on {devices} device(s)")
MSG_CELL_RAISED = "{where} raised {type}: {message}"
MSG_CELL_TIMEOUT = "{where} did not finish within {seconds:g} s and was skipped"
MSG_CELL_CRASHED = "{where} ended the process ({how}) and was skipped"
MSG_REPLY_TOO_LARGE = "its reply is larger than any test needs ({what})"
MSG_REPLY_UNREADABLE = "its reply is not valid JSON"
MSG_REPLIES_TOO_MANY_BYTES = ("the replies of its tests on {devices} device(s) are larger than "
                              "any test needs (over {mib} MiB in all)")
MSG_REPLIES_TOO_LARGE = ("the replies of its tests on {devices} device(s) are larger than any "
                         "test needs (over {items:,} values in all)")
#: grader/workers/replay.py, which replays a submission's cells for lesson 6's processes.
MSG_CLUSTER_TOO_FEW = "processes and devices_per_process must be at least 1"
MSG_CLUSTER_RAISED = "process {index} of {count} raised {type}: {message}"
MSG_CLUSTER_ENDED = "process {index} of {count} ended without a result ({how})"
MSG_CLUSTER_TIMEOUT = (
    "{which} of {count} did not finish within {seconds:g} s, so all {count} processes were "
    "stopped"
)
MSG_CLUSTER_OUTPUT = "the last lines process {index} wrote:\n{output}"
MSG_CLUSTER_MALFORMED = "malformed result: {error}"
MSG_CLUSTER_NOTHING_RECORDED = (
    "no cells that define `{name}` were recorded: grader.workers.replay runs only inside a grader "
    "worker, after the submission's cells ran"
)
MSG_CLUSTER_GRADER_ONLY = "replay runs the function under test of a grader's test only"
MSG_CLUSTER_PROBE = "a probe run in launched processes must come from a public test module: {probe}"
# --- the tester, which runs the tests on the submission's function in its worker ----------
MSG_TESTER_FAILED = "the grader could not start its tester on {devices} device(s): {why}"
MSG_TESTER_DIED = "the grader's tester stopped while running this test ({how})"
MSG_NO_SUCH_REQUEST = "a test asked the worker for something it does not do"

# --- the verifiers that measure compiled programs (grader/workers/) -----------------------
MSG_VERIFIER_FAILED = "the grader could not start a verifier on {devices} device(s): {why}"
MSG_VERIFIER_TIME_UP = ("compiling and running the programs of this exercise took over the "
                        "{seconds:g} s they may take in all")
MSG_VERIFIER_DIED = "compiling or running it failed: {how}"
VERIFIER_UNREADABLE = "a {kind} in a form the grader cannot read"
VERIFIER_UNKNOWN_KEYS = "keys of type {dtype} are of no known PRNG implementation"

# --- the sandbox (grader/workers/) --------------------------------------------------------
WARN_NO_SANDBOX = (
    "warning: bubblewrap (bwrap) is not installed, so submissions run as plain processes that "
    "can read and write what you can; see docs/grading.md"
)
WARN_SANDBOX_OFF = (
    "warning: --no-sandbox: submissions run as plain processes that can read and write what "
    "you can; see docs/grading.md"
)
NO_SANDBOX = (
    "no submission was run: there is no working sandbox here ({why}). Install bubblewrap "
    "(Debian, Ubuntu: apt-get install bubblewrap), or grade in the course's container "
    "(`make container`, see docs/instructors.md), or pass --no-sandbox to run submissions as plain "
    "processes on purpose"
)
OVER_GROUP_MEMORY = (
    " (its processes went over the {mib} MiB they may hold together, and the kernel killed one)"
)
BWRAP_MISSING = "bubblewrap (bwrap) is not installed"
WORKER_CANNOT_START = "no submission was run: a worker cannot start here ({why})"
WORKER_USER_CANNOT_START = (
    "as root, the grader runs submissions as user {uid}, not as root, and that user cannot "
    "start the course's Python ({why}): let other users read the course's folder and its "
    "Python environment (chmod o+rX), or grade as an ordinary user"
)
WARN_NO_CGROUPS = (
    "warning: no control group can be made here, so a submission's processes are capped in "
    "number and each in memory, but not in the memory they hold together or in their share "
    "of the CPU: busy ones slow down the other --jobs; see docs/grading.md"
)
WARN_NO_MEMORY_GROUP = (
    "warning: the control groups made here have no memory controller, so each of a "
    "submission's processes is capped in memory but not all of them together; see "
    "docs/grading.md"
)

# --- grading of results: what a student's results say beside the tests' messages ----------
MSG_GRADER_FAILED = "the grader failed on this submission ({error}); please report it"
MSG_MORE_PROBLEMS = "and {count} more problem(s) not listed"
MSG_FILE_UNREADABLE = "{file}: {why}; nothing in it was graded"
WARN_NOT_KEPT = (
    "warning: {student} was not graded to the end ({why}); the gradebook shows what was "
    "graded, but it is not kept: run the same command again to grade {student} anew"
)
# --- the command line (grader/cli.py, grader/verbs.py) -------------------------------------
CLI_DESCRIPTION = (
    "Grade a class of the distributed JAX course against its hidden tests, export the grades "
    "for an LMS, and author the course (release, validate, generate, refresh-expected)."
)
CLI_ERROR = "python -m grader: error: {message}"

INTERRUPTED = (
    "interrupted: the students graded to the end are kept in {out}; run the same command again "
    "to finish the batch"
)

# --- the course config, course.toml (grader/assignments.py) -------------------------------
CONFIG_UNKNOWN_ASSIGNMENT = "no assignment {name!r} in {path}; its assignments: {known}"
CONFIG_UNKNOWN_KEY = "unknown key {key!r} in {where}; known keys: {known}"
CONFIG_NOT_TABLE = "{key} must be a table of keys and values"
CONFIG_BAD_ZONE = "timezone {zone!r} is not a time zone name such as 'Europe/Paris'"
CONFIG_BAD_NUMBER = "{key} must be a number from 0 to {top}, not {value!r}"
CONFIG_NO_EXERCISE = (
    "assignment {name!r} asks for no exercise: give lessons = [...] or exercises = [...]"
)
CONFIG_NOT_NAMES = "{key} must be a list of names in quotes"
CONFIG_UNKNOWN_NAME = "unknown {kind} {name!r}; the course's: {known}"
CONFIG_BAD_DATE = (
    "due = {value!r} is not a date and time: write it as 2026-12-04T23:59:00+01:00"
)
CONFIG_IMPOSSIBLE_DATE = "{key} = {value} is not a real date ({why})"
CONFIG_NO_ZONE = (
    "due = {value} has no time zone: add one (2026-12-04T23:59:00+01:00) or set "
    "timezone = \"Area/City\" at the top of the file"
)
