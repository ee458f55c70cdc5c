"""Hints: what the likely mistake is, said to the student next to a failed test.

A test gives a hint when its result matches what a usual mistake gives (a ``Hint`` of
:mod:`grader.framework.judge`, such as the value a forgotten psum yields), or when the exception the
student's code raised is one JAX raises for a usual mistake (:func:`error_hint`).

One module per lesson, named as the lesson's test modules ``grader/public/<lesson>.py`` and
``grader/hidden/<lesson>.py``: its ``HINT_`` texts, the ``MSG_`` texts of its own tests, and
``ERRORS``, the errors JAX raises that are that lesson's, as (pattern, hint) pairs.
:mod:`grader.hints.common` holds what more than one lesson uses. This package is not masked
in the sandbox (unlike ``grader/hidden``): public tests use it in the student's kernel.
"""

from __future__ import annotations

import re

from grader.hints import (
    capstone,
    collectives,
    common,
    cost,
    experts,
    jit_sharding,
    multiprocess,
    pipeline,
    prng,
    sequence,
    sharding,
    training,
)

# Errors JAX raises for the usual mistakes, matched on the exception's text: the first
# pattern that matches gives the hint, so a pattern must come before a more general one that
# matches the same text. Patterns of different lessons that match no common text keep the
# order they had (common's, then lessons 4, 2, 3 and 6), so no message changes its hint.
ERROR_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Before common's "out_specs.*replicat", which matches the same error: row_sums says
    # which axis ('y') the psum is missing over.
    *collectives.ERRORS_BEFORE_COMMON,
    *common.ERRORS,
    *sharding.ERRORS,
    *prng.ERRORS,
    *jit_sharding.ERRORS,
    # After common: its HINT_SPEC_TOO_LONG (a spec longer than the array's rank: "only valid
    # for values of rank at least", "in_specs entry which is too long") answers before
    # collectives' HINT_OUT_SPECS_RANK ("out_specs entry which is too long") would.
    *collectives.ERRORS,
    *training.ERRORS,
    *multiprocess.ERRORS,
    *cost.ERRORS,
    *pipeline.ERRORS,
    *sequence.ERRORS,
    *experts.ERRORS,
    *capstone.ERRORS,
)


def error_hint(message: str, where: str = "", kind: str = "") -> str | None:
    """The hint for an exception's text, if it is one of the usual mistakes; ``where`` is the
    innermost frame of its traceback ("file, line"), which tells pmap's errors apart from
    jit's (:data:`grader.hints.common.PMAP_FRAME`); ``kind``, the exception's type: an
    AssertionError with no text is what JAX raises for a collective's unknown axis name (its
    frames are filtered out of the traceback, so the text and the type are all there is)."""
    if kind == "AssertionError" and not message.strip():
        return common.HINT_AXIS_NAME_SILENT
    first = common.PMAP_ERRORS if common.PMAP_FRAME.search(where) else ()
    for pattern, hint in (*first, *ERROR_HINTS):
        if pattern.search(message):
            return hint
    return None
