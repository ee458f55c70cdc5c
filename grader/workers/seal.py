"""A seal on the code a worker calls a function with: what a submission changes there is put
back.

The worker calls a student's function for the tests (which run in the tester, see
:mod:`grader.remote`) in the process that ran the student's code, so that code could rebind
what the call relies on (``jax.jit``, ``jax.export``, ``json.dumps``, the grader's reading of
arrays and shardings), swap a function's code or defaults, or put a module of its own in
``sys.modules``; the worker would then report whatever it liked about what the function
returned or how it computed. The worker seals those modules and itself before any student code
runs; it restores them before each call and voids a call during which they changed.

The seal protects itself: its state is a tuple, and :func:`restore` takes every name it uses
as a default argument, so that it depends on no module a submission could change. The worker
keeps the state, the function and its code and defaults where student code cannot rebind them
(see :meth:`grader.workers.worker.Worker.serve`) and puts the function's code back before each use.

It covers rebinding, not code written against the interpreter itself (a trace function that
rewrites the worker's locals, ctypes) or JAX's private modules. That is why how a function
computes is measured by the verifier instead (:mod:`grader.framework.probes`);
docs/grading.md says what is left open.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

#: Modules sealed besides every module of the grader: what the calls and the replies use.
MODULES = (
    "builtins",
    "json",
    "json.decoder",
    "json.encoder",
    "re",
    "warnings",
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

#: One sealed name: (namespace, owner, name, value, code, defaults, kwdefaults, label), where
#: owner is the module, class or object whose namespace it is (a dict's owner is the dict).
Entry = tuple[Any, Any, str, Any, Any, Any, Any, str]
#: What :func:`restore` puts back: the sealed modules by name, the entries, and the names each
#: grader module and sealed object had, with whether modules added there may stay (a name
#: added to a module could shadow a built-in; one added to an object, a method).
State = tuple[tuple[tuple[str, types.ModuleType], ...], tuple[Entry, ...],
              tuple[tuple[str, dict, frozenset, bool], ...]]


def _sealed_module(name: str) -> bool:
    return name in MODULES or name == "grader" or name.startswith("grader.")


def _is_code(value: Any) -> bool:
    """Code rather than data: functions, classes, modules and descriptors."""
    return callable(value) or isinstance(
        value, (types.ModuleType, property, classmethod, staticmethod)
    )


def _entry(namespace: Any, owner: Any, name: str, value: Any, label: str) -> Entry:
    if isinstance(value, types.FunctionType):
        return (namespace, owner, name, value, value.__code__, value.__defaults__,
                value.__kwdefaults__, label)
    return (namespace, owner, name, value, None, None, None, label)


def _add_class(entries: list[Entry], cls: type, label: str, seen: set[int]) -> None:
    """A class's functions, nested classes and descriptors (its data may change by design)."""
    if cls.__flags__ & _IMMUTABLE_TYPE or id(cls) in seen:
        return
    seen.add(id(cls))
    for name, value in list(vars(cls).items()):
        if _is_code(value):
            entries.append(_entry(vars(cls), cls, name, value, f"{label}.{name}"))
            if isinstance(value, type):
                _add_class(entries, value, f"{label}.{name}", seen)


class Seal:
    """The sealed modules (every name in them, data included), the functions, classes and
    methods of their classes, each function's code and defaults, and the attributes of
    ``objects`` (label, object; the items, for a dict), as they are when the seal is made."""

    def __init__(self, objects: Iterable[tuple[str, Any]] = ()) -> None:
        modules = tuple(
            (name, module) for name, module in sorted(sys.modules.items())
            if _sealed_module(name) and isinstance(module, types.ModuleType)
        )
        entries: list[Entry] = []
        seen: set[int] = set()
        for name, module in modules:
            namespace = vars(module)
            for attribute, value in list(namespace.items()):
                entries.append(_entry(namespace, module, attribute, value, f"{name}.{attribute}"))
                if isinstance(value, type):
                    _add_class(entries, value, f"{name}.{attribute}", seen)
        watched = [(name, vars(module), frozenset(vars(module)), True)
                   for name, module in modules if name.startswith("grader")]
        for label, owner in objects:
            namespace = owner if isinstance(owner, dict) else vars(owner)
            for key, value in list(namespace.items()):
                entries.append(_entry(namespace, owner, key, value, f"{label}[{key!r}]"))
            watched.append((label, namespace, frozenset(namespace), False))
        self.state: State = (modules, tuple(entries), tuple(watched))

    def restore(self) -> list[str]:
        """Put back everything changed since the seal was made; return what was changed."""
        return restore(self.state)


def restore(state: State, _modules=sys.modules, _get=dict.get, _set_class=type.__setattr__,
            _is=isinstance, _module=types.ModuleType, _mapping=types.MappingProxyType,
            _list=list, _str=str, _missing=_MISSING) -> list[str]:
    """Put back what ``state`` recorded; return a label for each thing that had changed.

    Every name it uses is a default argument, bound when this module was imported, so that a
    submission's changes to this module or to the built-ins do not reach it.
    """
    modules, entries, watched = state
    changed = []
    for name, module in modules:
        if _get(_modules, name, _missing) is not module:
            _modules[name] = module
            changed.append("sys.modules['" + name + "']")
    for namespace, owner, name, value, code, defaults, kwdefaults, label in entries:
        if namespace.get(name, _missing) is not value:
            if _is(namespace, _mapping):  # a class's namespace is read-only: set on the class
                _set_class(owner, name, value)
            else:
                namespace[name] = value
            changed.append(label)
        if code is not None:
            if value.__code__ is not code:
                value.__code__ = code
                changed.append(label + ".__code__")
            if value.__defaults__ is not defaults or value.__kwdefaults__ is not kwdefaults:
                value.__defaults__ = defaults
                value.__kwdefaults__ = kwdefaults
                changed.append(label + ".__defaults__")
    for name, namespace, known, imports_may_stay in watched:
        for added in [n for n in _list(namespace) if n not in known]:
            if not (imports_may_stay and _is(namespace[added], _module)):
                del namespace[added]
                changed.append(name + "." + _str(added))
    return changed
