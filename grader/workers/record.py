"""What a grader worker ran, kept for lesson 6's tests (:mod:`grader.workers.replay`), whose
launched processes replay it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Record:
    """What a grader worker ran: the cells of each file in order, and its namespaces (to find
    the file that defines a function). A worker receives no tests, so none are recorded."""

    cells: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)

    def file_defining(self, name: str) -> str | None:
        """The last file whose namespace defines ``name``, as the worker looks it up."""
        return next((f for f, ns in reversed(self.namespaces.items()) if name in ns), None)


#: Filled by :mod:`grader.workers.worker` (and empty anywhere else).
RECORD = Record()
