"""JupyterLab servers the tests start (the browser tests, and `make lab`'s): a free port,
waiting until one answers, and stopping one with everything it started."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

START_TIMEOUT = 90  # seconds for JupyterLab to answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(server: subprocess.Popen, url: str, token: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"JupyterLab exited ({server.returncode}):\n{log.read_text()}")
        try:
            request = urllib.request.Request(f"{url}/api/status",
                                             headers={"Authorization": f"token {token}"})
            with urllib.request.urlopen(request, timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.5)
    raise RuntimeError(f"JupyterLab did not answer in {START_TIMEOUT} s:\n{log.read_text()}")


def stop(server: subprocess.Popen, url: str, token: str) -> None:
    """Ask the server to shut down (it stops its kernels), then end its process group and
    any kernel that outlived it (kernels run in sessions of their own)."""
    children = descendants(server.pid)
    try:
        request = urllib.request.Request(f"{url}/api/shutdown", method="POST",
                                         headers={"Authorization": f"token {token}"})
        urllib.request.urlopen(request, timeout=5).close()
        server.wait(timeout=20)
    except (urllib.error.URLError, OSError, subprocess.TimeoutExpired):
        pass
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if server.poll() is not None:
            break
        os.killpg(server.pid, sig)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    for pid in children:
        try:
            if os.getpgid(pid) == pid:  # a kernel leads its own process group
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux /proc), children first."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")
