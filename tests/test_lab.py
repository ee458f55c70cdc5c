"""`make lab`: where JupyterLab listens, what it opens on, when it opens a browser, and the
one-line errors of a port it cannot have (grader/lab.py, through the Makefile)."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from servers import alive, descendants, free_port, stop, wait_until_up

from grader import lab
from grader.course import LANDING, ROOT


def make_lab(*settings: str, env: dict[str, str], **popen) -> subprocess.Popen:
    """``make -s lab SETTINGS...`` from the repository, in a session of its own."""
    return subprocess.Popen(["make", "-s", "--no-print-directory", "lab", *settings], cwd=ROOT,
                            env=env, start_new_session=True, **popen)


@pytest.fixture
def lab_env(tmp_path) -> dict[str, str]:
    """No display, a known token, and Jupyter's config and runtime files in a temporary home."""
    env = {k: v for k, v in os.environ.items()  # nor make's, when the tests run under make
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "PYTHONWARNINGS", "MAKELEVEL", "MAKEFLAGS",
                        "MFLAGS")}
    return env | {
        "JUPYTER_TOKEN": "lab-test-token",
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
    }


@pytest.mark.slow
def test_make_lab_listens_on_the_port_asked_for_and_opens_on_the_landing_notebook(
        lab_env, tmp_path):
    """Does `make lab PORT=N` answer on port N, send a visitor of its root to
    start_here.ipynb, open no browser without a display, and stop with everything it started?"""
    port = free_port()
    log = tmp_path / "lab.log"
    with log.open("w") as out:
        server = make_lab(f"PORT={port}", "IP=127.0.0.1", env=lab_env, stdout=out,
                          stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(server, url, "lab-test-token", log)
        with urllib.request.urlopen(f"{url}/?token=lab-test-token", timeout=10) as answer:
            assert answer.url.split("?")[0] == f"{url}/lab/tree/{LANDING.name}"
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                    for pid in [server.pid, *descendants(server.pid)]
                    if Path(f"/proc/{pid}/cmdline").exists()]
        jupyter = [c for c in commands if b"--ServerApp.open_browser=False" in c]
        assert jupyter, commands
    finally:
        everything = [server.pid, *descendants(server.pid)]
        stop(server, url, "lab-test-token")
    assert [pid for pid in everything if alive(pid)] == []
    with socket.socket() as knock, pytest.raises(ConnectionRefusedError):  # nothing listens
        knock.connect(("127.0.0.1", port))


def test_a_port_in_use_is_a_one_line_error(lab_env):
    """Is `make lab PORT=N`, with N taken, one line naming the port and another to try,
    rather than a JupyterLab on some other port?"""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = make_lab(f"PORT={port}", env=lab_env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
        stdout, stderr = done.communicate(timeout=120)
    assert done.returncode != 0
    ours = [line for line in stderr.splitlines() if not line.startswith("make: ***")]
    assert ours == [lab.PORT_TAKEN.format(port=port, other=port + 1)], stderr
    assert stdout == ""


@pytest.mark.parametrize("port", ["eighty", "0", "70000"])
def test_a_port_that_is_no_port_is_a_one_line_error(port, capsys):
    """Is a PORT that is not a number from 1 to 65535 one line, with nothing started?"""
    assert lab.main(["--port", port]) == 2
    assert capsys.readouterr().err.splitlines() == [lab.BAD_PORT.format(port=port)]


@pytest.mark.skipif(os.getuid() == 0, reason="root may listen on any port")
def test_a_port_the_user_may_not_have_is_a_one_line_error():
    """Is a port below 1024, for a user who is not root, one line saying why?"""
    problem = lab.port_problem("127.0.0.1", 80)
    assert problem is not None
    assert problem.startswith("make lab: cannot listen on 127.0.0.1 port 80: ")


@pytest.mark.parametrize(("env", "platform", "opens"), [
    ({}, "linux", False),                       # a server, a container, ssh without X
    ({"DISPLAY": ":0"}, "linux", True),
    ({"WAYLAND_DISPLAY": "wayland-0"}, "linux", True),
    ({"DISPLAY": ""}, "linux", False),
    ({}, "freebsd14", False),
    ({}, "darwin", True),
    ({}, "win32", True),
])
def test_a_browser_is_opened_only_where_one_can_be_shown(env, platform, opens):
    """Does `make lab` open a browser on a desktop, and never where there is no display?"""
    assert lab.opens_a_browser(env, platform) is opens
    command = lab.jupyter_command(None, None, [], env, platform, root_user=False)
    assert f"--ServerApp.open_browser={opens}" in command


def test_the_command_line_follows_the_settings():
    """Port (with no retry on another), address, an empty JUPYTER_TOKEN, root, and options
    passed through: does each reach JupyterLab's command line, and only when asked for?"""
    plain = lab.jupyter_command(None, None, [], {}, "linux", root_user=False)
    assert plain[1] == "lab" and Path(plain[0]).name == "jupyter"
    assert f"--ServerApp.root_dir={ROOT}" in plain
    assert f"--LabApp.default_url=/lab/tree/{LANDING.name}" in plain
    assert not [a for a in plain if a.startswith(("--ServerApp.port", "--ServerApp.ip",
                                                  "--IdentityProvider", "--allow-root"))]
    told = lab.jupyter_command(8890, "0.0.0.0", ["--no-browser"], {"JUPYTER_TOKEN": ""},
                               "linux", root_user=True)
    for option in ("--ServerApp.port=8890", "--ServerApp.port_retries=0",
                   "--ServerApp.ip=0.0.0.0", "--IdentityProvider.token=", "--allow-root"):
        assert option in told
    assert told[-1] == "--no-browser"
    with_token = lab.jupyter_command(None, None, [], {"JUPYTER_TOKEN": "t"}, "linux", False)
    assert not [a for a in with_token if a.startswith("--IdentityProvider")]


def test_the_landing_notebook_and_jupyter_are_where_the_command_says():
    """Do the notebook JupyterLab opens on and the jupyter it starts exist?"""
    assert LANDING.is_file()
    assert (Path(sys.executable).parent / "jupyter").exists()


def test_match_kernel_writes_the_kernels_language_into_the_notebooks_and_nothing_else(
        tmp_path):
    """Does --match-kernel's rewrite change a notebook's language details only, once, and
    leave a file that is not a notebook as it is?"""
    import nbformat

    from grader.lab import kernel_language_info, match_kernel

    (tmp_path / "exercises").mkdir()
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "exercises" / "04_prng.ipynb", tmp_path / "exercises")
    (tmp_path / "notebooks" / "broken.ipynb").write_text("{not json")
    assert match_kernel(tmp_path) == [tmp_path / "exercises" / "04_prng.ipynb"]
    before = nbformat.read(ROOT / "exercises" / "04_prng.ipynb", as_version=4)
    after = nbformat.read(tmp_path / "exercises" / "04_prng.ipynb", as_version=4)
    assert after.metadata.language_info == kernel_language_info()
    assert after.metadata.language_info["version"] == platform.python_version()
    after.metadata.language_info = before.metadata.language_info
    assert after == before
    assert (tmp_path / "notebooks" / "broken.ipynb").read_text() == "{not json"
    assert match_kernel(tmp_path) == []
