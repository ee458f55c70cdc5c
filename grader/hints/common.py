"""Hints of more than one lesson: the errors JAX raises for the usual mistakes of any lesson
(pmap, shard_map specs, axis names, device counts), and the hint a test gives when a function
right on one device count is wrong on another."""

from __future__ import annotations

import re

# --- hints of errors that any lesson may raise, and of a fixed device count ---------------
HINT_NOT_REPLICATED = (
    "The out_specs promise that every device along a mesh axis (each axis the spec leaves "
    "out; with P(), all of them) holds the same value, but the devices along it hold values "
    "of their own. A partial result is combined first with a collective over that axis, "
    "jax.lax.psum(..., axis_name) to add them up, jax.lax.pmean to average them; a value "
    "that must be the same there is computed without the device's position along that axis "
    "(no jax.lax.axis_index of it, no key folded with it)."
)
HINT_AXIS_NAME = (
    "A collective names an axis that is not in scope: the axis_name of the collective must "
    "match the mesh axis (shard_map) or the axis_name given to pmap."
)
HINT_AXIS_NAME_SILENT = (
    "An AssertionError with no message: unless an assert of yours raised it, it is what JAX "
    "(0.10 and 0.11) raises inside shard_map for a collective (psum, pmean, ppermute, ...) "
    "whose axis name is not one of the mesh's axes. Check each collective's axis name "
    "against mesh.axis_names."
)
HINT_RESHARD = (
    "On an Explicit mesh (jax.make_mesh makes Explicit axes unless told otherwise), shard_map "
    "does not move data for you: each input must already have the sharding its in_specs entry "
    "names. Place it first with jax.reshard(x, NamedSharding(mesh, P('data'))), which works "
    "inside jax.jit too, or with jax.device_put outside it."
)
HINT_DEVICES_SET_TOO_LATE = (
    "The number of CPU devices can only be set before JAX starts its backend, and something "
    "had already used JAX. In a notebook, restart the kernel and run the set-up cell "
    "(use_cpu_devices) before anything else; in an exercise function, do not set the device "
    "count at all: work with the devices there are, jax.devices() and jax.device_count()."
)
HINT_PMAP_INPUT = (
    "jax.pmap maps over the leading axis, one entry per device: it neither cuts a batch into "
    "per-device slices nor moves an input already placed on other devices. Reshape the batch "
    "to (jax.local_device_count(), rows_per_device, ...) yourself and pass an uncommitted "
    "array (NumPy, or jnp without device_put), or use jax.shard_map with in_specs=P('data'), "
    "which takes the whole batch and splits it."
)
HINT_PMAP_SQUEEZE = (
    "Axis 0 could not be squeezed away because its size is not 1. If this comes from "
    "jax.pmap, the leading axis was a multiple of the number of devices instead of equal to "
    "it. " + HINT_PMAP_INPUT
)
HINT_SPEC_TOO_LONG = (
    "A PartitionSpec has more entries than the array has dimensions: it takes at most one "
    "entry per dimension (entries left out at the end count as None). Drop the extra ones, "
    "e.g. P('x', 'y') for a 2-D array rather than P('x', None, 'y') from a 3-D example. On an "
    "Explicit mesh JAX only says (rank, spec), in a bare AssertionError."
)
HINT_DEVICE_COUNT = (
    "The function seems to assume a fixed number of devices: use jax.devices() or "
    "jax.device_count() so it works on however many there are."
)
HINT_DOES_NOT_DIVIDE = (
    "A dimension of the array does not split evenly over its mesh axis: check that the spec "
    "puts each mesh axis on the dimension you meant, and that the mesh is built from the "
    "devices there are (not from a fixed 8)."
)

#: The errors of any lesson, (pattern of the exception's text, hint); grader.hints orders
#: them among the lessons' own.
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"out_specs.*replicat", re.S), HINT_NOT_REPLICATED),
    (re.compile(r"unbound axis name|axis name.*not (found|bound)|must refer to an axis",
                re.I), HINT_AXIS_NAME),
    (re.compile(r"in_specs.*does not match the specs of the input", re.S), HINT_RESHARD),
    (re.compile(r"jax_num_cpu_devices config should be updated before backends|JAX has "
                r"already started with \d+ device\(s\), so it cannot be given"),
     HINT_DEVICES_SET_TOO_LATE),
    (re.compile(r"_internal_pmap_axis_name"), HINT_PMAP_INPUT),
    (re.compile(r"cannot select an axis to squeeze out .*dimensions=\(0,\)"), HINT_PMAP_SQUEEZE),
    (re.compile(r"only valid for values of rank at least|^\(\d+, P\(.*\)\)$|in_specs entry "
                r"which is too long"), HINT_SPEC_TOO_LONG),
    (re.compile(r"implies that array axis .* is partitioned|evenly divid", re.S),
     HINT_DOES_NOT_DIVIDE),
    (re.compile(r"devices? (available|but)|number of devices|more devices", re.I),
     HINT_DEVICE_COUNT),
)

#: Where an error was raised, from the innermost frame of its traceback: JAX's pmap. Since
#: JAX 0.8 pmap runs as a jit of a shard_map over a mesh of one axis named after pmap's
#: axis_name, so an input it cannot take (committed to other devices, or to another sharding)
#: fails with jit's own error, which names neither pmap nor its input: only the frame says so.
PMAP_FRAME = re.compile(r"jax[\\/]_src[\\/]pmap\.py")
#: The errors raised by pmap that jit's hints would misread, (pattern, hint): checked before
#: ERRORS when the error comes from pmap (PMAP_FRAME).
PMAP_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Sharding passed to jit does not match the sharding|Received incompatible "
                r"devices for jitted computation"), HINT_PMAP_INPUT),
)
