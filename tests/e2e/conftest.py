"""Fixtures of the browser tests: a headless JupyterLab on a free loopback port, serving a
temporary copy of what the test opens, and Debian's Chromium driven by Playwright.

Screenshots and the server's log go to ``build/e2e/`` (a test artefact, not committed).
Without Chromium or Playwright the tests are skipped, except under CI (``CI=true``), where
that is a failure: CI must not pass without having run them.

JupyterLab never outlives the tests: it is stopped (kernels included) when the session ends,
at interpreter exit if the session's teardown did not run, and, if the test process is killed
outright, by the kernel of the operating system: the server is started with
``PR_SET_PDEATHSIG`` (Linux), so it gets SIGKILL when its parent dies, and every kernel
(ipykernel, started with ``JPY_PARENT_PID``) ends itself within a second of its server.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers import free_port, stop, wait_until_up

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "build" / "e2e"
CHROMIUM = Path("/usr/bin/chromium")
JUPYTER = Path(sys.executable).parent / "jupyter"
TIMEOUT = 60_000  # ms for any action or assertion in the page
#: Settings a fresh JupyterLab gets: every cell in the page (no windowing, so that locators
#: see cells out of view), and no news or update pop-ups over the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        '{"fetchNews": "false", "checkForUpdates": false}',
}


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (Debian: apt-get install chromium)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is missing (pip install -e '.[test]')"
    return None


def skip_or_fail(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI must run the browser tests, but {why}", pytrace=False)
    pytest.skip(why)


#: Run before JupyterLab, in the process that becomes it: ask Linux for SIGKILL when the parent
#: (the test process) dies, give up if it died already, then become JupyterLab (the setting
#: survives exec). argv: the parent's pid, then JupyterLab's command. A wrapper rather than
#: Popen's preexec_fn, which is unsafe in a process with threads (Playwright's).
DIE_WITH_PARENT = """\
import ctypes, os, signal, sys
PR_SET_PDEATHSIG = 1
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
    sys.exit(f"prctl(PR_SET_PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}")
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
os.execv(sys.argv[2], sys.argv[2:])
"""


@dataclass(frozen=True)
class Lab:
    """A running JupyterLab: where it is and the folder it serves."""

    url: str
    token: str
    root: Path

    def open(self, path: str) -> str:
        """The address that opens ``path`` (relative to the root) in JupyterLab, alone: the
        workspace is reset, so notebooks opened by earlier tests do not come back."""
        return f"{self.url}/lab/tree/{path}?reset&token={self.token}"

    def copy(self, source: Path) -> str:
        """Copy a notebook into the served folder (the repository's copy is never opened, so
        never saved over); return its path there."""
        shutil.copy(source, self.root / source.name)
        return source.name


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test, so the page fixture knows whether it failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def artefacts() -> Path:
    """build/e2e/, emptied of the last run's screenshots and failure reports."""
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for old in [*ARTEFACTS.glob("*.png"), *ARTEFACTS.glob("FAILED-*.txt")]:
        old.unlink()
    return ARTEFACTS


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium, headless, through Playwright (no browser download)."""
    if why := missing_browser():
        skip_or_fail(why)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def lab(tmp_path_factory, artefacts) -> Iterator[Lab]:
    """JupyterLab on a free loopback port with a random token, serving an empty temporary
    folder (tests put their notebooks there), with its own settings and no user config.
    Shut down afterwards whatever happens, its kernels included."""
    if why := missing_browser():
        skip_or_fail(why)
    root = tmp_path_factory.mktemp("lab-root")
    home = tmp_path_factory.mktemp("lab-home")
    with open(artefacts / "jupyterlab.log", "w") as log:
        server, lab = start_lab(root, home, log)
        atexit.register(stop, server, lab.url, lab.token)  # if the teardown never runs
        try:
            wait_until_up(server, lab.url, lab.token, artefacts / "jupyterlab.log")
            yield lab
        finally:
            stop(server, lab.url, lab.token)
            atexit.unregister(stop)


def start_lab(root: Path, home: Path, log) -> tuple[subprocess.Popen, Lab]:
    """Start JupyterLab serving ``root``, with its settings, config and runtime files in
    ``home`` and its output in the file ``log``; it dies with this process (see
    :data:`DIE_WITH_PARENT`). Wait for it with :func:`wait_until_up`, end it with :func:`stop`.
    """
    for name, text in LAB_SETTINGS.items():
        (home / "settings" / name).parent.mkdir(parents=True, exist_ok=True)
        (home / "settings" / name).write_text(text)
    token, port = secrets.token_hex(16), free_port()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env |= {
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
    }
    command = [
        sys.executable, "-c", DIE_WITH_PARENT, str(os.getpid()),
        str(JUPYTER), "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={home / 'settings'}",
        f"--LabApp.workspaces_dir={home / 'workspaces'}",
        *(["--allow-root"] if os.getuid() == 0 else []),
    ]
    server = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)
    return server, Lab(f"http://127.0.0.1:{port}", token, root)


@pytest.fixture
def page(browser, artefacts, request):
    """A fresh browser page (its own context); a screenshot is saved if the test fails.

    Every wait, for an action or an assertion, may take a minute: the kernel answers each
    click, and CI machines are slow (Playwright's assertions wait only 5 s by default).
    """
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            page.screenshot(path=artefacts / f"FAILED-{request.node.name}.png")
            (artefacts / f"FAILED-{request.node.name}.txt").write_text(report.longreprtext)
        context.close()
