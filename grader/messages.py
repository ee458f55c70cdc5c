"""Every text the grader shows a student or an instructor, in one place.

Templates are named module-level strings; hints are matched to the likely mistake.
"""

from __future__ import annotations

import re

# --- status of an exercise or a test ---------------------------------------------------
PASSED = "passed"
FAILED = "failed"
PARTIAL = "partial"
ERROR = "error"
NOT_ATTEMPTED = "not attempted"
NOT_FOUND = "not found"
TIMEOUT = "timeout"
CRASHED = "crashed"

# --- messages ---------------------------------------------------------------------------
MSG_NOT_FOUND = "not found: no function named `{name}` is defined in the submission"
MSG_NOT_CALLABLE = "not found: `{name}` is defined but is a {kind}, not a function"
MSG_NOT_ATTEMPTED = "not attempted: `{name}` still raises NotImplementedError"
MSG_RAISED = "`{name}` raised {type}: {message}"
MSG_TIMEOUT = "stopped after {seconds:g} s on {devices} device(s): it took too long or hung"
MSG_CRASHED = "the process running `{name}` on {devices} device(s) ended: {how}"
MSG_BAD_DATA = "`{name}` returned something the grader cannot read: {problem}"
MSG_NOT_RUN = "not run: {reason}"
MSG_NO_EXPECTED = (
    "no expected values are stored for {devices} device(s); run the first cell of the "
    "notebook (it asks for {default} devices) and restart the kernel if needed"
)
MSG_GRADER_FAILED = "the grader failed on this submission ({error}); please report it"
MSG_WORKER_FAILED = "the grader could not start a worker on {devices} device(s): {why}"

MSG_SHAPE = "{where} has shape {got} but should have shape {want}"
MSG_KIND = "{where} holds {got} values but should hold {want} values"
MSG_VALUES = "{where} has the wrong values"
MSG_TYPE = "{where} is {got} but should be {want}"
MSG_KEYS = "{where} has keys {got} but should have keys {want}"
MSG_LENGTH = "{where} has {got} entries but should have {want}"

MSG_CELL_RAISED = "{where} raised {type}: {message}"
MSG_CELL_TIMEOUT = "{where} did not finish within {seconds:g} s and was skipped"
MSG_CELL_CRASHED = "{where} ended the process ({how}) and was skipped"
MSG_FILE_UNREADABLE = "{file}: {why}; nothing in it was graded"

# --- hints: what the likely mistake is ----------------------------------------------------
HINT_FORGOT_PSUM = (
    "The result equals what the first device computes on its own block: did you forget the "
    "psum that adds up the partial results of all devices?"
)
HINT_NOT_REPLICATED = (
    "out_specs=P() promises that every device holds the same value, but each device holds "
    "its own partial result: all-reduce it first with jax.lax.psum(..., axis_name)."
)
HINT_AXIS_NAME = (
    "A collective names an axis that is not in scope: the axis_name of the collective must "
    "match the mesh axis (shard_map) or the axis_name given to pmap."
)
HINT_RESHARD = (
    "shard_map (and pmap) do not move data for you on an Explicit mesh: jax.make_mesh makes "
    "Explicit axes. Build the mesh with jax.sharding.Mesh(devices, names) or place the input "
    "with jax.device_put(x, NamedSharding(mesh, P('data'))) first."
)
HINT_DEVICE_COUNT = (
    "The function seems to assume a fixed number of devices: use jax.devices() or "
    "jax.device_count() so it works on however many there are."
)
HINT_MISSING_PSUM = "The value is right, but no psum is traced: the all-reduce must be there."
HINT_WRONG_DIRECTION = (
    "The blocks moved the wrong way round the ring: device i must send to device i + 1, "
    "so the permutation pairs are (i, (i + 1) % n)."
)
HINT_FORGOT_PMEAN = (
    "The new parameters match a step on one device's batch only: average the gradients "
    "across devices with jax.lax.pmean before updating."
)
HINT_PSUM_NOT_PMEAN = (
    "The step is n times too large: the gradients were summed over devices (psum) instead "
    "of averaged (pmean)."
)
HINT_NOT_PER_DEVICE = (
    "The result must have one row per device (the leading axis of a pmap result), not a "
    "single value."
)

# Errors JAX raises for the usual mistakes, matched on the exception's text.
ERROR_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"out_specs.*replicat", re.S), HINT_NOT_REPLICATED),
    (re.compile(r"unbound axis name|axis name.*not (found|bound)|must refer to an axis",
                re.I), HINT_AXIS_NAME),
    (re.compile(r"in_specs.*does not match the specs of the input", re.S), HINT_RESHARD),
    (re.compile(r"implies that array axis .* is partitioned|evenly divid", re.S),
     HINT_DEVICE_COUNT),
    (re.compile(r"devices? (available|but)|number of devices|more devices", re.I),
     HINT_DEVICE_COUNT),
)


def error_hint(message: str) -> str | None:
    """The hint for an exception's text, if it is one of the usual mistakes."""
    for pattern, hint in ERROR_HINTS:
        if pattern.search(message):
            return hint
    return None

MSG_NOT_TRACED = "no {primitive} over axis {axis!r} was traced (found: {seen})"
MSG_NOT_COMPILED = "the compiled code has no {op}, so no data moved between devices"
MSG_MESH = "expected a shard_map over the mesh {want}, found {got}"
