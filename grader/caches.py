"""A bounded cache: what a long-lived process keeps of the work it did, newest last.

A verifier serves one submission after another, so what it keeps (compiled programs, the
reference's programs, measures) must stay bounded however many programs it is handed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Newest(Generic[K, V]):
    """At most ``size`` values by key; the one used least recently goes first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._values: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, make: Callable[[], V]) -> V:
        """The value kept for ``key``, or ``make()``'s, kept from now on. Nothing is kept
        when ``make`` raises."""
        if key in self._values:
            self._values.move_to_end(key)
            return self._values[key]
        value = self._values[key] = make()
        if len(self._values) > self.size:
            self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._values)
