"""Where a worker runs and what it may use: bubblewrap's command line, and the limits.

A worker (and a verifier) sees only what it runs from, read-only, with no capability whoever
starts the grader (:class:`Sandbox`); :class:`Limits` bounds its time and memory.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from grader import cases as case_registry
from grader import messages as msg
from grader.course import PACKAGE
from grader.workers import confine

#: bubblewrap, when installed: the sandbox workers run in.
BWRAP = shutil.which("bwrap")


@dataclass(frozen=True)
class Limits:
    """What a worker may use: seconds per exercise, per cell and to start; bytes of memory;
    and seconds in all for one run (a submission on one device count: every cell, test and
    fresh worker together), so that a submission that stalls everything still ends."""

    exercise: float = 60.0
    cell: float = 60.0
    start: float = 120.0
    memory: int = 4 * 2**30
    run: float = 900.0


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True)
class Sandbox:
    """Where a worker may look. With bubblewrap it sees only what it runs from: the system's
    programs and libraries, a few files of /etc, the Python environment and the grader's
    package (its hidden tests replaced by an empty folder), all read-only; a private /tmp and
    home of ``scratch`` bytes each; no network. Nothing else of the machine is there: not the
    course's other folders or its git history, not the submissions or the outputs. The
    ``hidden`` paths are masked too, should one lie inside what the worker sees. Without
    bubblewrap, a plain process."""

    hidden: tuple[Path, ...] = ()
    use_bwrap: bool = True
    scratch: int = 256 * 2**20

    @property
    def sandboxed(self) -> bool:
        return bool(self.use_bwrap and BWRAP)

    def command(self, home: str) -> list[str]:
        """The bubblewrap command line, or none. Everything in the sandbox ends when the
        process that started it does (:func:`grader.workers.process.spawn` starts it from a
        thread that lives as long as the grader: Linux ties that signal to the thread)."""
        if not self.sandboxed:
            return []
        # The private /tmp first: what is bound next may lie under /tmp (a course cloned there).
        args = [BWRAP, *_SYSTEM, "--size", str(self.scratch), "--tmpfs", "/tmp"]
        for path in _VISIBLE:
            args += ["--ro-bind", str(path), str(path)]
        args += ["--dev", "/dev", "--proc", "/proc"]
        for path in (_HIDDEN_TESTS, *(p.resolve() for p in self.hidden)):
            if any(path.is_relative_to(seen) for seen in _VISIBLE):
                args += (["--tmpfs", str(path)] if path.is_dir() else
                         ["--ro-bind", "/dev/null", str(path)] if path.exists() else [])
        args += ["--size", str(self.scratch), "--tmpfs", home, "--chdir", home,
                 *_UNPRIVILEGED,
                 "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                 "--die-with-parent", "--new-session"]
        return args


#: Whoever starts the grader, root included (a container, a CI runner), a sandbox holds no
#: capability: none in effect or in its bounding set, in a user namespace of its own, where it
#: cannot make another (in which it would hold them all again). Without this, bubblewrap
#: started by root keeps root's capabilities: a submission could make a device node of the
#: disk, open any host file by its handle, remount its read-only binds writable and write
#: next to the grader's code, or raise its own memory cap.
_UNPRIVILEGED = ("--unshare-user", "--disable-userns", "--cap-drop", "ALL")

DEFAULT_SANDBOX = Sandbox()
_HIDDEN_TESTS = PACKAGE / case_registry.PACKAGES[True].split(".", 1)[1]
#: Read-only in the sandbox: the Python environment (as named and as resolved) and the grader.
_VISIBLE = tuple(sorted(
    {Path(p) for p in (sys.prefix, sys.base_prefix)}
    | {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, PACKAGE)}
))
#: Files of /etc that the dynamic linker, Python and JAX read: not the whole folder, which
#: may hold secrets (as root, /etc/shadow is readable).
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "hosts", "host.conf",
        "nsswitch.conf", "passwd", "group", "gai.conf")


def _system() -> list[str]:
    """bubblewrap arguments for the system's programs and libraries, read-only."""
    args = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):  # merged /usr: /bin -> usr/bin
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    return args


_SYSTEM = tuple(_system())
_warned = threading.Event()


def warn_without_sandbox(sandbox: Sandbox = DEFAULT_SANDBOX) -> None:
    """Say once per process that workers run unsandboxed, or without control groups, and
    what that leaves open."""
    if _warned.is_set():
        return
    _warned.set()
    if not sandbox.sandboxed:
        print(msg.WARN_NO_SANDBOX if not BWRAP else msg.WARN_SANDBOX_OFF, file=sys.stderr)
    if not confine.available():
        root = " (not at all, as root)" if os.getuid() == 0 else ""
        print(msg.WARN_NO_CGROUPS.format(root=root), file=sys.stderr)
