"""Measurements that tests take of a function: what it computed and how it was distributed.

These run in the student's kernel for ``check``, and in the grader's tester, where the function
under test is a :class:`grader.remote.Remote` whose calls its worker makes; they only
*measure*, and deciding what a measurement means is the judges' job. What a test does to the
function besides calling it goes through :func:`jitted`, :func:`trailing`,
:func:`input_shardings` and :meth:`Program.of`, which ask the worker in grading.

How a function computes is measured on its :class:`Program`: ``jax.jit(fn)`` exported for the
probe's arguments. In the student's kernel the measure runs at once. In grading, the program
is made in the worker, where the submission's code could have changed anything JAX or Python
does, so it is sent on serialized, and a verifier (:mod:`grader.workers.verifier`), a process
that never runs the submission's code, runs it next to the reference solution's program on
fresh inputs, then compiles it and takes the measure: what it reports is what the program
the submission handed in really contains, and that program computes what the exercise asks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from grader import messages as msg
from grader.caches import Newest
from grader.devices import WORKER_ENV
from grader.framework import hlo
from grader.framework.cases import course_code
from grader.framework.plain import Unverified, Verified
from grader.remote import Remote


class Program:
    """``jax.jit(fn)`` specialised to some arguments, as :mod:`jax.export` exports it: the
    StableHLO module, with the shardings and the device count it was made for."""

    def __init__(self, exported: jax.export.Exported | None = None, *,
                 blob: bytes | None = None) -> None:
        if exported is not None:
            self.__dict__["exported"] = exported
        self._blob = blob

    @functools.cached_property
    def exported(self) -> jax.export.Exported:
        """The export, read from the bytes it was made of if it came as bytes."""
        return jax.export.deserialize(bytearray(self._blob))

    @classmethod
    def of(cls, fn: Callable, *args: Any) -> Program:
        """The program of ``jax.jit(fn)`` on ``args``; for the function under test in grading
        (a :class:`grader.remote.Remote`), exported in its worker and kept as bytes, unread
        (the verifier reads them)."""
        if isinstance(fn, Remote):
            return cls(blob=fn.export(*args))
        try:
            return cls(jax.export.export(jax.jit(fn))(*args))
        except NotImplementedError as exc:  # a stub's is left alone: it means not attempted
            if "host_callbacks" in str(exc):
                raise ValueError(msg.MSG_HOST_CALLBACK) from None
            raise

    @classmethod
    def load(cls, blob: bytes) -> Program:
        """A program read back from :meth:`serialize` (bytes anyone could have written:
        reading them runs no Python code of theirs)."""
        return cls(jax.export.deserialize(bytearray(blob)))

    def serialize(self) -> bytes:
        return self._blob if self._blob is not None else bytes(self.exported.serialize())

    def with_module(self, text: str) -> Program:
        """This program with its StableHLO replaced by ``text`` (same arguments, results
        and shardings): the verifier's way to run a variant of it."""
        from jax._src.export import _export  # the one way in: jax.export builds modules so
        from jax._src.interpreters import mlir  # (pinned JAX, used by the verifier alone)
        from jax.extend.mlir import ir

        with mlir.make_ir_context():
            module = ir.Module.parse(text)
            serialized = _export._module_to_bytecode(module)
        return Program(dataclasses.replace(self.exported, mlir_module_serialized=serialized))

    @functools.cached_property
    def module(self) -> str:
        """The StableHLO text: the program as traced, before XLA partitions it, printed
        without its source locations (copies of the same code, from other lines of other
        files, read the same). JAX's own printer is private; where it moved (another JAX
        release), the public one prints the text with locations, which are taken out."""
        try:
            from jax._src.interpreters import mlir  # jax.export prints locations always
            from jax._src.lib import _jax

            with mlir.make_ir_context():
                module = _jax.mlir.deserialize_portable_artifact(
                    self.exported.mlir_module_serialized)
                return mlir.module_to_string(module, enable_debug_info=False)
        except Exception:  # noqa: BLE001 - a private API, whatever it raises now
            with course_code("reading a program's StableHLO text"):
                return hlo.without_locations(self.exported.mlir_module())

    @functools.cached_property
    def identity(self) -> tuple:
        """Everything compiling and running the program depends on: its :attr:`module` and
        every other field of the export (shapes, shardings, devices...). Two programs of the
        same identity compute the same, and every measure takes the same of both."""
        fields = dataclasses.fields(self.exported)
        return (self.module, *(repr(getattr(self.exported, field.name)) for field in fields
                               if field.name not in _NOT_COMPILED))

    @functools.cached_property
    def compiled(self) -> str:
        """The optimised HLO text XLA compiles the program to (see :attr:`executable`)."""
        return self.executable.as_text()

    @functools.cached_property
    def executable(self) -> jax.stages.Compiled:
        """The program compiled by XLA on this process's first devices. Inputs keep the
        shardings they were exported with; inputs that had none are left to the compiler, as
        ``jax.jit`` leaves uncommitted arrays. A program of the same :attr:`identity` as one
        compiled before in this process (another copy of the same code) gets that one's
        executable."""
        return _EXECUTABLES.get(self.identity, self._compile)

    def _compile(self) -> jax.stages.Compiled:
        devices = np.array(jax.devices()[: self.exported.nr_devices])
        if devices.size < self.exported.nr_devices:
            raise ValueError(msg.PROGRAM_TOO_FEW_DEVICES.format(want=self.exported.nr_devices,
                                                                got=devices.size))
        inputs = [
            jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=_on(devices, sharding))
            for aval, sharding in zip(self.exported.in_avals,
                                      self.exported.in_shardings_jax(None), strict=True)
        ]
        args, kwargs = jax.tree.unflatten(self.exported.in_tree, inputs)
        context = contextlib.nullcontext()
        if all(i.sharding is None for i in inputs) and devices.size > 1:
            # No input says where it lives: the devices come from a mesh, the program's own.
            sizes = next((axes for axes, _ in hlo.meshes(self.module.splitlines()).values()
                          if np.prod(list(axes.values()), dtype=int) == devices.size),
                         {"devices": devices.size})
            context = jax.set_mesh(
                jax.sharding.Mesh(devices.reshape(tuple(sizes.values())), tuple(sizes)))
        with context:
            return jax.jit(self.exported.call).lower(*args, **kwargs).compile(
                compiler_options=quick_on(devices.flat[0]))

    def run_on_devices(self, inputs: list[Any]) -> list[list[np.ndarray]]:
        """Execute the program on ``inputs`` and return what each device holds of each
        output (keys as their key data), in device order: a result that claims to be the
        same on every device may not be, in a program changed by the verifier."""
        args, kwargs = jax.tree.unflatten(self.exported.in_tree, inputs)
        outputs = jax.tree.leaves(self.executable(*args, **kwargs))
        return [[np.asarray(shard.data) for shard in sorted(
            (jax.random.key_data(out) if jax.dtypes.issubdtype(out.dtype, jax.dtypes.prng_key)
             else out).addressable_shards, key=lambda shard: shard.device.id)]
                for out in outputs]

    def run(self, inputs: list[Any]) -> list[np.ndarray]:
        """Execute the program on ``inputs`` (one array per input, keys as key arrays) and
        return its outputs as numpy arrays, keys as their key data."""
        args, kwargs = jax.tree.unflatten(self.exported.in_tree, inputs)
        outputs = jax.tree.leaves(self.executable(*args, **kwargs))
        return [np.asarray(jax.random.key_data(out)
                           if jax.dtypes.issubdtype(out.dtype, jax.dtypes.prng_key) else out)
                for out in outputs]


#: How a measured program is compiled on CPU devices: XLA's passes over the HLO as always
#: (the program, its collectives, its buffers and its cost are the same), LLVM's own
#: optimisation of the machine code left out, which takes a third of the time of compiling
#: and only makes the tests' small arrays faster to compute. (Other platforms compile as
#: they do by default.)
QUICK = {"xla_backend_optimization_level": 0}


def quick_on(device: Any) -> dict | None:
    """The compiler options of a program measured on ``device``'s platform: :data:`QUICK`
    on a CPU, none elsewhere."""
    return QUICK if device.platform == "cpu" else None


#: Executables compiled in this process, by :attr:`Program.identity`.
_EXECUTABLES: Newest[tuple, jax.stages.Compiled] = Newest(64)
#: What an exported program holds beside its module that compiling it does not depend on.
_NOT_COMPILED = {"fun_name", "mlir_module_serialized", "_get_vjp"}


def _on(devices: np.ndarray, sharding: Any) -> Any:
    """An exported input's sharding placed on ``devices`` (its mesh was exported abstract)."""
    if sharding is None or not sharding.mesh.axis_names:  # unplaced, or on no mesh at all
        return None
    mesh = sharding.mesh
    return sharding.update(mesh=jax.sharding.Mesh(devices.reshape(mesh.axis_sizes),
                                                  mesh.axis_names, axis_types=mesh.axis_types))


#: Every measure of a program, by name: what a verifier may be asked to take.
MEASURES: dict[str, Callable[[Program], Any]] = {}


def measure(body: Callable[[Program], Any]) -> Callable[..., Verified | Unverified]:
    """Turn ``body(program)`` into a probe ``body(fn, *args)`` that measures the program of
    ``fn`` on ``args``: at once in a kernel (a :class:`Verified` value), or, in a grader
    worker, later in a verifier (an :class:`Unverified` one)."""
    _register(body)

    @functools.wraps(body)
    def probe(fn: Callable, *args: Any) -> Verified | Unverified:
        return _later(body, Program.of(fn, *args))

    return probe


def _register(body: Callable[[Program], Any]) -> Callable[[Program], Any]:
    """Let verifiers take ``body`` by its name."""
    if body.__name__ in MEASURES:
        raise ValueError(msg.MEASURE_TWICE.format(name=body.__name__))
    MEASURES[body.__name__] = body
    return body


def _later(body: Callable[[Program], Any], program: Program) -> Verified | Unverified:
    """``body(program)`` now in a kernel; in a grader worker, the program for a verifier."""
    if os.environ.get(WORKER_ENV):
        return Unverified(body.__name__, program.serialize())
    return Verified(body(program), program)


def jitted(fn: Callable, static_argnums: tuple[int, ...] = ()) -> Callable:
    """``jax.jit(fn, static_argnums=...)``: for the function under test in grading, jitted in
    its worker (a test never traces the student's function itself)."""
    if isinstance(fn, Remote):
        return fn.then("jit", tuple(static_argnums))
    return jax.jit(fn, static_argnums=static_argnums)


def trailing(fn: Callable, *values: Any) -> Callable:
    """``fn`` with ``values`` added after its arguments, such as a static size, so that its
    program takes arrays only: for the function under test in grading, added in its worker."""
    if isinstance(fn, Remote):
        return fn.then("trailing", values)

    def with_values(*args: Any) -> Any:
        return fn(*args, *values)

    return with_values


def input_shardings(fn: Any, *args: Any) -> tuple:
    """The shardings the jitted function ``fn`` (one with ``.lower``), compiled for ``args``,
    takes them in; for a function the function under test returned in grading, compiled in
    its worker."""
    if isinstance(fn, Remote):
        return fn.input_shardings(*args)
    return tuple(fn.lower(*args).compile().input_shardings[0])


@measure
def hlo_collectives(program: Program) -> dict[str, int]:
    """How many of each collective the compiled HLO of ``fn`` contains."""
    return hlo.count_collectives(program.compiled)


def program_summary(fn: Callable, *args: Any) -> Verified | Unverified:
    """The collectives ``jax.jit(fn)`` performs on ``args``, the shard_maps it runs and the
    devices it runs on, as :func:`summarise` reads them from its program."""
    return _later(summarise, Program.of(fn, *args))


@_register
def summarise(program: Program) -> dict[str, Any]:
    """The collectives a program performs and the shard_maps it runs, read from its
    StableHLO.

    Returns ``{"collectives": [{"primitive", "axes"}], "shard_maps": [{"mesh": {axis:
    size}, "manual_axes": [...]}], "devices": n}``. Collectives are named by the JAX
    primitive that traces to them (an all-reduce by how it combines: ``psum``, ``pmax``,
    ``pmin``); ``axis_index`` (a read of the device's position) acts over the manual axes of
    the shard_map around it. A program on one device keeps no mesh (JAX drops it, with the
    shard_map): its collectives are there, over no named axis, and it has no shard_map.
    """
    return {**hlo.traced(program.module), "devices": program.exported.nr_devices}
