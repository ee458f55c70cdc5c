"""A seal on the code a worker measures with: what a submission changes there is put back.

The probes measure a student's function in the worker that ran the student's code, so that
code could rebind what they rely on (``jax.jit``, ``jax.make_jaxpr``, ``json.dumps``, a
function of the grader), swap a function's code, or put a module of its own in
``sys.modules``; the probes would then report whatever it liked about how it computed. The
worker seals those modules before any student code runs, restores them before each
measurement and voids a measurement during which they changed.

The seal covers rebinding, not code written against the worker itself (walking the stack to
its reply channel, ctypes); the README says what that leaves open.
"""

from __future__ import annotations

import sys
import types
from typing import Any

#: Modules sealed besides every module of the grader: what the probes and the replies use.
MODULES = (
    "builtins",
    "json",
    "json.decoder",
    "json.encoder",
    "re",
    "numpy",
    "jax",
    "jax.lax",
    "jax.numpy",
    "jax.random",
    "jax.sharding",
    "jax.stages",
    "jax.tree",
    "jax.tree_util",
)

_MISSING = object()
_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: built-in types nobody can patch


def _sealed_module(name: str) -> bool:
    return name in MODULES or name == "grader" or name.startswith("grader.")


def _sealable(value: Any) -> bool:
    """Code rather than data: functions, classes, modules and descriptors."""
    return callable(value) or isinstance(
        value, (types.ModuleType, property, classmethod, staticmethod)
    )


class Seal:
    """The sealed modules, every function, class and method in them, and each function's code,
    as they are when the seal is made."""

    def __init__(self) -> None:
        self.modules = {
            name: module for name, module in sorted(sys.modules.items())
            if _sealed_module(name) and isinstance(module, types.ModuleType)
        }
        # (namespace owner, attribute, value, the function's code or None, label)
        self.entries: list[tuple[Any, str, Any, Any, str]] = []
        seen: set[int] = set()
        for name, module in self.modules.items():
            self._add(module, name, seen)
        # Names a submission adds to the grader's modules would shadow built-ins there.
        self.grader_names = {
            name: set(vars(module)) for name, module in self.modules.items()
            if name.startswith("grader")
        }

    def _add(self, owner: Any, label: str, seen: set[int]) -> None:
        for name, value in list(vars(owner).items()):
            if not _sealable(value):
                continue
            code = value.__code__ if isinstance(value, types.FunctionType) else None
            self.entries.append((owner, name, value, code, f"{label}.{name}"))
            is_open_class = isinstance(value, type) and not value.__flags__ & _IMMUTABLE_TYPE
            if is_open_class and id(value) not in seen:
                seen.add(id(value))
                self._add(value, f"{label}.{name}", seen)

    def restore(self) -> list[str]:
        """Put back everything changed since the seal was made; return what was changed."""
        changed = []
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
                changed.append(f"sys.modules[{name!r}]")
        for owner, name, value, code, label in self.entries:
            if vars(owner).get(name, _MISSING) is not value:
                if isinstance(owner, types.ModuleType):
                    vars(owner)[name] = value
                else:
                    type.__setattr__(owner, name, value)
                changed.append(label)
            if code is not None and value.__code__ is not code:
                value.__code__ = code
                changed.append(f"{label}.__code__")
        for name, known in self.grader_names.items():
            namespace = vars(self.modules[name])
            for added in [n for n in namespace if n not in known]:
                if not isinstance(namespace[added], types.ModuleType):  # imports add modules
                    del namespace[added]
                    changed.append(f"{name}.{added}")
        return changed
