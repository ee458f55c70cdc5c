"""What the authoring commands (``python -m grader exercises``, ``release``) say when they
cannot do their work."""

from __future__ import annotations

# --- exercise notebooks made from the solved ones (grader/authoring/generate.py) -----------
MARKER_UNPAIRED = "a # BEGIN SOLUTION / # END SOLUTION marker has no partner"

# --- the public tests' expected values (grader/authoring/refresh_expected.py) --------------
REFERENCE_FAILS = "the reference fails {case} on {devices} devices"
UNKNOWN_LESSON = "unknown lesson {lesson!r}; lessons: {lessons}"

# --- the student bundle (grader/authoring/release.py) -------------------------------------
DESTINATION_NOT_EMPTY = "{destination} is not empty"
