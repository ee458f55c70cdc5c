"""What a run is given and what it gives back: the code to execute (:class:`Source`) and what
was measured (:class:`Run`), shared by the runner and the verification of its programs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Source:
    """A piece of code to execute: the file it belongs to (each file runs in a namespace of
    its own) and where in it (``lab.ipynb, cell 3``)."""

    file: str
    label: str
    code: str


@dataclass
class Run:
    """What one run measured: an outcome per case id, what went wrong loading the code, and,
    when the grader itself could not finish (a worker that did not start), why: such a run is
    reported but never kept for reuse, so that running the command again grades it anew.
    ``programs`` holds each program a verifier measured, by case id, place in its data and
    measure: the reference run's are what a submission's programs are run against, and the
    only places and measures where a submission's count."""

    devices: int
    outcomes: dict[str, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unfinished: str | None = None
    programs: dict[tuple[str, tuple, str], str] = field(default_factory=dict)
    kept: int = 0  # what the replies kept cost (see grader.workers.replies)
    kept_bytes: int = 0  # and their bytes

    def to_json(self) -> dict:
        """What was measured, as JSON (a reference run kept between batches,
        :mod:`grader.grading.reference_cache`); an unfinished run is never kept."""
        return {"devices": self.devices, "outcomes": self.outcomes, "problems": self.problems,
                "programs": [[case, list(where), measure, blob]
                             for (case, where, measure), blob in self.programs.items()]}

    @classmethod
    def joined(cls, parts: Sequence[Run]) -> Run:
        """One run of the runs that measured parts of the cases on the same device count."""
        whole = cls(parts[0].devices)
        for part in parts:
            whole.outcomes |= part.outcomes
            whole.problems += [p for p in part.problems if p not in whole.problems]
            whole.unfinished = whole.unfinished or part.unfinished
            whole.programs |= part.programs
            whole.kept += part.kept
            whole.kept_bytes += part.kept_bytes
        return whole

    @classmethod
    def from_json(cls, data: dict) -> Run:
        """A run as :meth:`to_json` wrote it."""
        return cls(int(data["devices"]), dict(data["outcomes"]), list(data["problems"]),
                   programs={(case, tuple(where), measure): blob
                             for case, where, measure, blob in data["programs"]})
