"""Where a worker runs, as whom, and what it may use: bubblewrap's command line, and the limits.

A worker (and a verifier) sees only what it runs from, read-only, with no capability whoever
starts the grader (:class:`Sandbox`), and never as root (:func:`worker_user`); where no such
sandbox can run, :meth:`Sandbox.problem` says why, and grading stops unless the instructor
chose plain processes. :class:`Limits` bounds its time and memory.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, replace
from pathlib import Path

from grader import messages as msg
from grader.course import PACKAGE
from grader.framework import cases as case_registry
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
    bubblewrap, a plain process.

    ``compiled`` is the batch's folder of compiled programs (:mod:`grader.workers.compiled`):
    a worker or verifier reads it, read-only, and only where ``writes_compiled`` (the
    reference run) writes it. ``tested`` is the testers' own, kept apart, since theirs are
    the hidden tests' programs. Only sandboxed processes use them: a plain process could
    write there."""

    hidden: tuple[Path, ...] = ()
    use_bwrap: bool = True
    scratch: int = 256 * 2**20
    compiled: Path | None = None
    writes_compiled: bool = False
    tested: Path | None = None

    def testing(self) -> Sandbox:
        """The sandbox of a tester: the same, with the testers' folder of compiled programs
        where a worker's is."""
        return replace(self, compiled=self.tested, tested=None)

    @property
    def shares_compiled(self) -> bool:
        """Whether a worker started here reads (or writes) the batch's compiled programs."""
        return self.compiled is not None and self.sandboxed

    @property
    def sandboxed(self) -> bool:
        return bool(self.use_bwrap and BWRAP)

    def problem(self) -> str | None:
        """Why no worker can run here as :meth:`launch` would start it, as a sentence that
        says what to do, or None. bubblewrap wanted but not installed, or failing to make its
        sandbox (a container that forbids user namespaces), is refused with the ways out
        (``--no-sandbox`` among them); so is a worker's user (:func:`worker_user`) who cannot
        start the course's Python. Found by starting one, as a worker starts, that imports the
        worker and exits."""
        if self.use_bwrap and not BWRAP:
            return msg.NO_SANDBOX.format(why=msg.BWRAP_MISSING)
        user = worker_user()
        if user is not None or not self.sandboxed:  # the user alone first: a sandbox that
            said = _start(replace(self, use_bwrap=False))  # fails may be the user's doing
            if said is not None:
                return (msg.WORKER_CANNOT_START.format(why=said) if user is None else
                        msg.WORKER_USER_CANNOT_START.format(uid=user[0], why=said))
        said = _start(self) if self.sandboxed else None
        return None if said is None else msg.NO_SANDBOX.format(why=said)

    def launch(self, command: list[str], home: str) -> list[str]:
        """``command`` as a worker runs it, ``home`` its folder: as :func:`worker_user`, in
        the sandbox where there is one. ``home`` is handed to that user."""
        user = worker_user()
        if user is None:
            return [*self.command(home), *command]
        os.chown(home, *user)
        if self.compiled is not None and self.writes_compiled:
            os.chown(self.compiled, *user)
        return [sys.executable, "-I", "-S", "-c", _BECOME, str(user[0]), str(user[1]),
                *self.command(home), *command]

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
        if self.compiled is not None:
            bind = "--bind" if self.writes_compiled else "--ro-bind"
            args += [bind, str(self.compiled), str(self.compiled)]
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

#: How long the check that a worker can start (:meth:`Sandbox.problem`) may take.
PREFLIGHT_SECONDS = 120
_PREFLIGHT = "import grader.workers.worker; print('ready')"
#: Becomes the user and group given, with no other group, then runs the rest of its command
#: line: a process that leaves root gives up every capability with it.
_BECOME = ("import os, sys; os.setgroups([]); os.setgid(int(sys.argv[2])); "
           "os.setuid(int(sys.argv[1])); os.execv(sys.argv[3], sys.argv[3:])")
#: Whom workers run as when the grader runs as root.
UNPRIVILEGED_USER = "nobody"


def _start(sandbox: Sandbox) -> str | None:
    """The last line a worker's start said, if it failed: one started as ``sandbox``
    launches it, that imports the worker and exits."""
    with tempfile.TemporaryDirectory(prefix="grader-preflight-") as home:
        command = sandbox.launch([sys.executable, "-I", "-c", _PREFLIGHT], home)
        try:
            done = subprocess.run(command, capture_output=True, text=True, cwd=home,
                                  env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                       "HOME": home, "JAX_PLATFORMS": "cpu"},
                                  timeout=PREFLIGHT_SECONDS)
        except (OSError, subprocess.SubprocessError) as exc:
            return f"{type(exc).__name__}: {exc}"[:300]
    if done.returncode == 0 and done.stdout.strip() == "ready":
        return None
    said = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
    return said[0][:300]


def worker_user() -> tuple[int, int] | None:
    """The user and group a worker (and a verifier) runs as: the grader's own, except that a
    grader started by root never runs a submission as root, sandboxed or not: then the user
    ``nobody`` (65534 where the system has none)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return 65534, 65534
    return entry.pw_uid, entry.pw_gid


def warn_without_sandbox(sandbox: Sandbox = DEFAULT_SANDBOX) -> None:
    """Say once per process that workers run unsandboxed, or without control groups, and
    what that leaves open."""
    if _warned.is_set():
        return
    _warned.set()
    if not sandbox.sandboxed:
        print(msg.WARN_NO_SANDBOX if not BWRAP else msg.WARN_SANDBOX_OFF, file=sys.stderr)
    if not confine.available():
        print(msg.WARN_NO_CGROUPS, file=sys.stderr)
    elif not confine.caps_memory():
        print(msg.WARN_NO_MEMORY_GROUP, file=sys.stderr)
