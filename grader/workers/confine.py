"""How many processes a worker may start, how much memory they hold, and their share of the
CPU.

A submission could start thousands of processes, or busy ones, and slow down every other
worker on the machine until their exercises time out; or start children that each stay under
the per-process memory cap and together hold the machine's memory. Each worker and verifier
therefore runs in a control group of its own (cgroup v2, or the ``pids``, ``cpu`` and
``memory`` hierarchies of v1) where the grader may make one: all its processes and threads
together are at most :data:`MAX_TASKS`, they hold at most the worker's memory limit together
(swap included: none), and the group gets the same share of the CPU as every other worker's,
however many processes it runs. Killing a worker kills everything in its group, a process
that left its session included.

Where no cgroup can be made (an unprivileged user without a delegated one, a container with
a read-only ``/sys/fs/cgroup``), the worker caps its own user's processes
(``RLIMIT_NPROC``, :func:`cap_tasks`): in the sandbox, whose user namespace counts only its
own processes, at :data:`MAX_TASKS`; outside it, at that many more than the user runs. That
bounds the number of processes but not their share of the CPU, and root is exempt from it.
"""

from __future__ import annotations

import itertools
import os
import resource
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

#: Processes and threads one worker may run together: JAX's own threads (a pool per core
#: and a few more) and room for a submission's own.
MAX_TASKS = 128 + 4 * (os.cpu_count() or 1)
#: Where this process sees cgroups mounted, and which it belongs to.
_MOUNTS, _OWN = Path("/proc/self/mounts"), Path("/proc/self/cgroup")
_names = itertools.count()


@dataclass(frozen=True)
class Group:
    """One worker's control group: a folder in each hierarchy used (one for cgroup v2; the
    ``pids`` and, when they can be had, the ``cpu`` and ``memory`` hierarchies for v1), and
    the bytes its processes may hold together, where the memory controller caps them."""

    folders: tuple[Path, ...]
    memory: int | None = None

    @classmethod
    def create(cls, memory: int | None = None) -> Group | None:
        """A new group capped at :data:`MAX_TASKS` and, where the memory controller can be
        had, at ``memory`` bytes for all its processes together; None where none can be
        made."""
        bases = _bases()
        if bases is None:
            return None
        name = f"jax-course-grader-{os.getpid()}-{next(_names)}"
        made: list[Path] = []
        try:
            for base in bases:
                (base / name).mkdir()
                made.append(base / name)
            (made[0] / "pids.max").write_text(f"{MAX_TASKS}\n")
            capped = memory is not None and any(_cap_memory(folder, memory) for folder in made)
        except OSError:
            Group(tuple(made)).remove()
            return None
        return cls(tuple(made), memory if capped else None)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for going over its memory cap."""
        for folder in self.folders:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    fields = dict(line.split() for line in (folder / name).read_text()
                                  .splitlines() if len(line.split()) == 2)
                except (OSError, ValueError):
                    continue
                if int(fields.get("oom_kill", "0")) > 0:
                    return True
        return False

    def command(self, args: list[str]) -> list[str]:
        """``args`` run in this group: a shell joins it, then becomes ``args``, so that
        everything the command starts is in the group from its first instruction."""
        joins = "".join(f' && echo $$ > "${k + 1}"' for k in range(len(self.folders)))
        return ["/bin/sh", "-c", f'true{joins} && shift {len(self.folders)} && exec "$@"',
                "sh", *(str(f / "cgroup.procs") for f in self.folders), *args]

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            try:
                found |= {int(p) for p in (folder / "cgroup.procs").read_text().split()}
            except (OSError, ValueError):
                pass
        return found

    def kill(self) -> None:
        """Kill every process in the group (one that forks meanwhile cannot outrun the cap
        on its tasks for long)."""
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def remove(self) -> None:
        """Remove the group's folders once their processes are gone (reaped, they leave)."""
        for folder in self.folders:
            for _ in range(200):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


def _cap_memory(folder: Path, memory: int) -> bool:
    """Cap the processes of the group ``folder`` at ``memory`` bytes together, with no swap,
    if it is a memory controller's folder (v2's ``memory.max``, v1's ``limit_in_bytes``)."""
    if (folder / "memory.max").exists():
        (folder / "memory.max").write_text(f"{memory}\n")
        if (folder / "memory.swap.max").exists():
            (folder / "memory.swap.max").write_text("0\n")
        return True
    if (folder / "memory.limit_in_bytes").exists():
        (folder / "memory.limit_in_bytes").write_text(f"{memory}\n")
        if (folder / "memory.memsw.limit_in_bytes").exists():  # memory and swap together
            (folder / "memory.memsw.limit_in_bytes").write_text(f"{memory}\n")
        return True
    return False


_found: list[tuple[Path, ...] | None] = []
#: Held while they are looked for: workers start from several threads at once (``--jobs``),
#: and two searches at once would remove each other's probe groups, so that one would find a
#: hierarchy unusable (the memory one, say) and the grader would run without its caps.
_finding = threading.Lock()


def available() -> bool:
    """Whether this process can put workers in control groups."""
    return _bases() is not None


def caps_memory() -> bool:
    """Whether this process's groups can cap their processes' memory together."""
    for base in _bases() or ():
        if (base / "memory.limit_in_bytes").exists():
            return True
        try:
            if "memory" in (base / "cgroup.subtree_control").read_text().split():
                return True
        except OSError:
            pass
    return False


def _bases() -> tuple[Path, ...] | None:
    """Where this process may make groups (found once): for cgroup v2, its own group or the
    root of the hierarchy, where ``pids`` is among the controllers; for v1, the same in the
    ``pids`` hierarchy, with the ``cpu`` and ``memory`` ones beside it when writable."""
    with _finding:
        if not _found:
            _found.append(_find())
    return _found[0]


def _sweep(base: Path) -> Path:
    """Remove from ``base`` the empty groups of graders that ended without removing theirs
    (killed, say); return ``base``."""
    for folder in base.glob("jax-course-grader-*-*"):
        try:
            os.kill(int(folder.name.split("-")[3]), 0)
        except ProcessLookupError:
            try:
                folder.rmdir()
            except OSError:
                pass
        except (ValueError, PermissionError):
            pass
    return base


def _find() -> tuple[Path, ...] | None:
    try:
        mounts = [line.split() for line in _MOUNTS.read_text().splitlines()]
        own = [line.split(":", 2) for line in _OWN.read_text().splitlines()]
    except OSError:
        return None
    v2 = next((m[1] for m in mounts if m[2] == "cgroup2"), None)
    v2_path = next((path for number, names, path in own if number == "0" and not names), None)
    if v2 and v2_path:
        for base in _candidates(Path(v2), v2_path):
            if _usable(base, v2=True, capped=True):
                return (_sweep(base),)
    pids = _v1(mounts, own, "pids")
    if pids is None:
        return None
    others = (_v1(mounts, own, "cpu"), _v1(mounts, own, "memory"))
    return tuple(_sweep(base) for base in (pids, *others) if base is not None)


def _v1(mounts: list[list[str]], own: list[list[str]], controller: str) -> Path | None:
    """The folder of the v1 ``controller`` hierarchy where groups may be made, if any."""
    mount = next((m[1] for m in mounts if m[2] == "cgroup"
                  and controller in m[3].split(",")), None)
    path = next((p for _, names, p in own if controller in names.split(",")), None)
    if mount is None or path is None:
        return None
    return next((b for b in _candidates(Path(mount), path)
                 if _usable(b, v2=False, capped=controller == "pids")), None)


def _candidates(mount: Path, path: str) -> list[Path]:
    """This process's own group, then the hierarchy's root."""
    own = mount / path.lstrip("/")
    return [own] if own == mount else [own, mount]


def _usable(base: Path, v2: bool, capped: bool) -> bool:
    """Whether a group can be made under ``base`` (with a cap on its tasks, if ``capped``),
    and joined."""
    probe = base / f"jax-course-grader-{os.getpid()}-probe"
    try:
        if v2:  # the pids controller for its children, and cpu and memory if they can be had
            enabled = (base / "cgroup.subtree_control").read_text().split()
            for controller in ("pids", "cpu", "memory"):
                if controller not in enabled:
                    try:
                        (base / "cgroup.subtree_control").write_text(f"+{controller}\n")
                    except OSError:
                        if controller == "pids":
                            raise
        # One of this name left behind can only be a killed process's of the same pid, which
        # the sweep spares (the pid is alive: it is ours): not a reason to go without groups.
        probe.mkdir(exist_ok=True)
    except OSError:
        return False
    try:
        if capped:
            (probe / "pids.max").write_text(f"{MAX_TASKS}\n")
        return os.access(probe / "cgroup.procs", os.W_OK)
    except OSError:
        return False
    finally:
        try:
            probe.rmdir()
        except OSError:
            pass


def begin() -> tuple[int, int, TextIO, TextIO]:
    """What a worker, a tester or a verifier does first, started as ``python -I -c "..."
    DEVICES MEMORY GRADER TASKS`` (:class:`grader.workers.process.WorkerProcess`): end with
    the grader (GRADER, its pid; 0 in the sandbox, where bubblewrap does it), cap itself
    (:func:`limit`), keep its stdin and stdout for requests and replies (stdin then reads
    nothing, and what it or JAX prints goes to stderr, so nothing printed can pass for a
    reply), and ask JAX for DEVICES CPU devices. Returns that count, the count JAX has, and
    the request and reply streams."""
    from grader.processes import die_with_parent

    devices, memory, grader, tasks = (int(a) for a in sys.argv[1:5])
    if grader:
        die_with_parent(grader)
    limit(memory, bool(tasks))  # before any student code runs, and before any thread starts
    requests = os.fdopen(os.dup(0), "r")
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)

    from grader.devices import use_cpu_devices

    return devices, use_cpu_devices(devices), requests, replies


def limit(memory: int, tasks: bool) -> None:
    """What a worker or verifier does first, before any thread starts: cap its memory at
    ``memory`` bytes and, where no control group holds it (``tasks``), its user's tasks
    (:func:`cap_tasks`). In the sandbox it has no capability to raise either."""
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    if tasks:
        cap_tasks()


def tasks_of(uid: int) -> dict[str, int]:
    """The processes of user ``uid`` that this process can see, by pid, each with its number
    of threads: the tasks the kernel counts against the user's ``RLIMIT_NPROC``."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:  # ended meanwhile
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            found[entry.name] = int(fields.get("Threads", "1"))
    return found


def cap_tasks() -> None:
    """Cap this process's user at :data:`MAX_TASKS` more processes and threads than it runs
    now, as far as this process can see them (in the sandbox, its own namespaces). Root is
    exempt from this cap. A zombie counts, as it does for the kernel until it is reaped: a
    worker started while a killed one's processes wait for that gets a wider cap, never a
    narrower one (which could leave it no room for its own threads)."""
    limit = sum(tasks_of(os.getuid()).values()) + MAX_TASKS
    resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
