"""``make lab``: JupyterLab on the course, started the way people expect.

- It opens on the course's landing notebook, ``start_here.ipynb``, with the repository's root in
  the file browser: the lessons (``notebooks/``) and the exercises (``exercises/``) side by side.
- It listens where it is told (``make lab PORT=8890 IP=0.0.0.0``). A port asked for that is
  taken, or that cannot be had, is a one-line error rather than a server on another port; with
  no port asked for, JupyterLab takes 8888 or the next free one, as it always does.
- It opens a browser only where one can be shown: on Linux and the BSDs that means a display
  (``DISPLAY`` or ``WAYLAND_DISPLAY``), so a server, a container or an SSH session gets none,
  only the address to open. macOS and Windows always have one.
- ``JUPYTER_TOKEN=''`` turns the token off, as Jupyter's documentation says an empty token does
  (Jupyter Server itself takes an empty variable for an unset one and makes a random token).
- As root (a container), JupyterLab is told that this is allowed.

- ``--match-kernel`` (the student bundle's ``make lab``) first writes this Python's language
  details into the metadata of the landing notebook, the lessons and the exercises, where they
  differ: JupyterLab would otherwise show each notebook as changed as soon as its kernel starts.
  Nothing else in a notebook is touched, and a notebook it cannot read is left as it is.

Anything after ``--`` goes to JupyterLab unchanged (``make lab ARGS=--no-browser``).
"""

from __future__ import annotations

import argparse
import errno
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from grader.course import LANDING, ROOT

PORT_TAKEN = ("make lab: port {port} is in use (another JupyterLab?): choose another, "
              "make lab PORT={other}")
PORT_REFUSED = "make lab: cannot listen on {ip} port {port}: {reason}"
BAD_PORT = "make lab: PORT must be a number from 1 to 65535, not {port!r}"


def opens_a_browser(env: Mapping[str, str], platform: str) -> bool:
    """Whether a browser can be shown here: a display on Linux and the BSDs, always on macOS
    and Windows."""
    if platform == "darwin" or platform.startswith(("win", "cygwin")):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def port_problem(ip: str, port: int) -> str | None:
    """Why JupyterLab could not listen on ``ip``:``port``, or None if it can."""
    host = "127.0.0.1" if ip in ("", "localhost") else ip
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        # As JupyterLab (tornado) binds: a port left in TIME_WAIT by a stopped server is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return PORT_TAKEN.format(port=port, other=port + 1 if port < 65535 else 8888)
            return PORT_REFUSED.format(ip=host, port=port, reason=exc.strerror or exc)
    return None


def jupyter_command(port: int | None, ip: str | None, extra: Sequence[str],
                    env: Mapping[str, str], platform: str, root_user: bool) -> list[str]:
    """The ``jupyter lab`` command line for these settings."""
    command = [
        str(Path(sys.executable).parent / "jupyter"), "lab",
        f"--ServerApp.root_dir={ROOT}",
        f"--LabApp.default_url=/lab/tree/{LANDING.name}",
        f"--ServerApp.open_browser={opens_a_browser(env, platform)}",
    ]
    if port is not None:
        command += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if ip:
        command.append(f"--ServerApp.ip={ip}")
    if env.get("JUPYTER_TOKEN") == "":
        command.append("--IdentityProvider.token=")
    if root_user:
        command.append("--allow-root")
    return [*command, *extra]


def kernel_language_info() -> dict:
    """The language details the course's kernel (ipykernel, in this Python) reports."""
    from ipykernel.ipkernel import IPythonKernel

    return dict(IPythonKernel.language_info)


def match_kernel(root: Path = ROOT) -> list[Path]:
    """Write :func:`kernel_language_info` into the landing notebook, the lessons and the
    exercises under ``root`` where theirs differ; return those written."""
    import nbformat

    info = kernel_language_info()
    written = []
    for path in [root / LANDING.name, *sorted(root.glob("notebooks/*.ipynb")),
                 *sorted(root.glob("exercises/*.ipynb"))]:
        try:
            notebook = nbformat.read(path, as_version=4)
            if notebook.metadata.get("language_info") == info:
                continue
            notebook.metadata["language_info"] = info
            temporary = path.with_name(f".{path.name}.language")
            nbformat.write(notebook, temporary)
            os.replace(temporary, path)
        except (OSError, ValueError):  # unreadable or not a notebook: leave it be
            continue
        written.append(path)
    return written


def parse_port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = 0
    if not 1 <= port <= 65535:
        raise ValueError(BAD_PORT.format(port=text))
    return port


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="make lab", description=__doc__.splitlines()[0])
    parser.add_argument("--port", help="the port to listen on (default: 8888 or the next free)")
    parser.add_argument("--ip", help="the address to listen on (default: localhost)")
    parser.add_argument("--match-kernel", action="store_true",
                        help="write this Python's language details into the notebooks first")
    parser.add_argument("extra", nargs="*", help="options passed on to jupyter lab")
    args = parser.parse_args(argv)
    port = None
    if args.port is not None:
        try:
            port = parse_port(args.port)
        except ValueError as exc:
            print(exc, file=sys.stderr)
            return 2
        if problem := port_problem(args.ip or "", port):
            print(problem, file=sys.stderr)
            return 2
    if args.match_kernel:
        match_kernel()
    command = jupyter_command(port, args.ip, args.extra, os.environ, sys.platform,
                              root_user=hasattr(os, "getuid") and os.getuid() == 0)
    sys.stdout.flush()
    os.execv(command[0], command)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
