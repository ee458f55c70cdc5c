"""The one place that decides which devices the course runs on, and says what it decided.

Notebooks call :func:`use_devices` in their first code cell. It looks for GPUs and TPUs without
starting JAX's backend in the kernel (in a short-lived process, and only where an accelerator
plugin is installed at all), then runs on them when there are at least as many of one kind as
the lesson needs, and otherwise asks JAX for that many virtual CPU devices, explicitly on the
CPU platform. Either way it prints one line saying so.

The grader's workers, the verifier, ``python -m grader.notebook_check`` and the tests call
:func:`use_cpu_devices`: grading always runs on CPU devices, whatever the machine has.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass

#: Devices a lesson, an exercise and the hidden tests expect unless told otherwise.
DEFAULT_DEVICES = 8

#: Set inside a grader worker: the device count is fixed, notebook set-up and check() stand down.
WORKER_ENV = "GRADER_WORKER"

#: ``COURSE_DEVICES=cpu`` always uses CPU devices; ``COURSE_DEVICES=accelerator`` uses the GPUs or
#: TPUs found, however few.
OVERRIDE_ENV = "COURSE_DEVICES"
OVERRIDES = ("cpu", "accelerator")

#: What the look for accelerators found, kept for the rest of the kernel's life (lesson 7's
#: roofline measures the accelerator the lessons did not run on).
FOUND_ENV = "COURSE_ACCELERATORS"

#: The JAX releases the lessons and ``check`` hold on, oldest and newest, each run from a fresh
#: environment by tests/test_install.py (a notebook service's own JAX; the lock pins one in
#: between, which CI runs everywhere). The README states this range.
OLDEST_JAX = "0.10.1"
NEWEST_JAX = "0.12.0.1"
LINE_JAX_TOO_OLD = (
    "This course needs JAX {oldest} or newer, and this kernel has JAX {version}: install a "
    'newer one (pip install -U "jax>={oldest}") and restart the kernel.'
)

#: Seconds the look may take: starting a GPU or TPU runtime takes a few.
LOOK_TIMEOUT = 60

TOO_LATE = (
    "JAX has already started with {have}, so it cannot be given {want} any more. "
    "Restart the kernel (Kernel > Restart Kernel) and run this cell first, before any other "
    "JAX code."
)
BAD_OVERRIDE = "{env}={value!r} is not one of {choices}: it is ignored."

#: The lines :func:`use_devices` prints, one per decision.
LINE_CPU = "{n} CPU devices (JAX {version}; no GPU or TPU found)."
LINE_CPU_FEWER = (
    "{found} found: this course uses {n} CPU devices so that meshes and collectives are real "
    "(JAX {version}); lesson 7 measures the {platform} for its roofline."
)
LINE_CPU_ASKED = "{n} CPU devices, as {env}=cpu asks (JAX {version}; {found} found)."
LINE_CPU_FORCED = "{n} CPU devices, as JAX_PLATFORMS={platforms} asks (JAX {version})."
LINE_CPU_LOOK_FAILED = (
    "{n} CPU devices (JAX {version}): an accelerator plugin is installed but no accelerator "
    "answered ({problem})."
)
LINE_ACCELERATOR = (
    "{found}: the lessons run on them (JAX {version}); float32 matrix products at full "
    "precision, as on the CPU the expected values come from."
)
LINE_ACCELERATOR_ASKED = (
    "{found}, as {env}=accelerator asks (JAX {version}): lessons written for {n} devices "
    "use fewer; float32 matrix products at full precision."
)

#: Run in a separate process: what JAX finds when left to choose its platform.
_LOOK = (
    "import json, jax\n"
    "d = jax.devices()\n"
    "print(json.dumps({'platform': jax.default_backend(), 'count': len(d), "
    "'kind': d[0].device_kind}))\n"
)


def jax_range() -> str:
    """The JAX releases the course holds on, as said to students: ``'0.10.1 to 0.12.0.1'``."""
    return f"{OLDEST_JAX} to {NEWEST_JAX}"


def release_numbers(version: str) -> tuple[int, ...]:
    """A JAX version's release numbers, to compare: ``'0.12.0.1'`` -> ``(0, 12, 0, 1)``;
    a development or candidate suffix is left out (``'0.13.0.dev20261201'`` -> ``(0, 13, 0)``)."""
    numbers = []
    for part in version.split("."):
        digits = re.match(r"\d*", part).group()
        if digits:
            numbers.append(int(digits))
        if not digits or digits != part:
            break
    return tuple(numbers)


def too_old(version: str) -> bool:
    """Whether JAX ``version`` is older than the course holds on (:data:`OLDEST_JAX`)."""
    return release_numbers(version) < release_numbers(OLDEST_JAX)


class DeviceSetupError(RuntimeError):
    """JAX was initialised before the devices could be set."""


@dataclass(frozen=True)
class Found:
    """The accelerators of this machine, as JAX names them."""

    platform: str | None = None
    """``'gpu'`` or ``'tpu'`` (what ``jax.default_backend()`` says); None where there are none."""
    count: int = 0
    kind: str = ""
    """The first device's ``device_kind``, e.g. ``'NVIDIA H200'``."""
    problem: str = ""
    """Why looking failed, where an accelerator plugin is installed but none answered."""

    def describe(self) -> str:
        """``'1 GPU (NVIDIA H200)'``, ``'8 TPUs (TPU v5 lite)'``, or ``'no GPU or TPU'``."""
        if not self.platform:
            return "no GPU or TPU"
        name = self.platform.upper() + ("s" if self.count != 1 else "")
        return f"{self.count} {name}" + (f" ({self.kind})" if self.kind else "")


@dataclass(frozen=True)
class Decision:
    """Where the course runs: ``platform`` is ``'cpu'`` or the accelerator's."""

    platform: str
    line: str


def decide(found: Found, n: int = DEFAULT_DEVICES, override: str | None = None,
           platforms: str | None = None, version: str = "") -> Decision:
    """Where a notebook that needs ``n`` devices runs, given what was found.

    ``override`` is :data:`OVERRIDE_ENV`'s value, ``platforms`` the ``JAX_PLATFORMS`` the user
    set (a list that holds only ``cpu`` means the CPU whatever was found)."""
    say = {"n": n, "version": version, "found": found.describe(), "env": OVERRIDE_ENV,
           "platform": (found.platform or "").upper(), "problem": found.problem}
    if _only_cpu(platforms):
        return Decision("cpu", LINE_CPU_FORCED.format(platforms=platforms, **say))
    if not found.platform:
        return Decision("cpu", (LINE_CPU_LOOK_FAILED if found.problem else LINE_CPU).format(**say))
    if override == "cpu":
        return Decision("cpu", LINE_CPU_ASKED.format(**say))
    if override == "accelerator" and found.count < n:
        return Decision(found.platform, LINE_ACCELERATOR_ASKED.format(**say))
    if found.count >= n:
        return Decision(found.platform, LINE_ACCELERATOR.format(**say))
    return Decision("cpu", LINE_CPU_FEWER.format(**say))


def _only_cpu(platforms: str | None) -> bool:
    """Whether a ``JAX_PLATFORMS`` value lets JAX start the CPU only."""
    return bool(platforms) and set(platforms.split(",")) == {"cpu"}


def accelerator_plugins() -> list[str]:
    """The installed packages through which JAX could reach a GPU or TPU (none on a laptop
    with the course's own install): PJRT plugins, and libtpu."""
    found = sorted({ep.name for ep in importlib.metadata.entry_points(group="jax_plugins")})
    namespace = importlib.util.find_spec("jax_plugins")
    if namespace is not None:
        import pkgutil

        found += sorted(m.name for m in pkgutil.iter_modules(namespace.submodule_search_locations))
    if importlib.util.find_spec("libtpu") is not None:
        found.append("libtpu")
    return found


def accelerator_env() -> dict[str, str]:
    """The environment of a process that may use this machine's accelerator although the
    kernel runs on CPU devices: JAX left to choose its platform, and no GPU memory taken
    before it is needed."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    return env | {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}


def look_for_accelerators(python: str = sys.executable, plugins: list[str] | None = None,
                          timeout: float = LOOK_TIMEOUT) -> Found:
    """What JAX finds when left to choose, asked in a short-lived process so that this one's
    backend has not started; no process at all where no accelerator plugin is installed."""
    if os.environ.get(FOUND_ENV):
        return Found(**json.loads(os.environ[FOUND_ENV]))
    if not (accelerator_plugins() if plugins is None else plugins):
        return Found()
    env = accelerator_env() | {"TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        done = subprocess.run([python, "-c", _LOOK], capture_output=True, text=True, env=env,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError) as err:
        return Found(problem=f"{type(err).__name__}: {err}"[:200])
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        platform, count, kind = str(answer["platform"]), int(answer["count"]), str(answer["kind"])
    except (ValueError, IndexError, KeyError, TypeError):
        said = done.stderr.strip().splitlines()
        return Found(problem=(said[-1] if said else f"exit status {done.returncode}")[:200])
    return Found() if platform == "cpu" else Found(platform, count, kind)


def use_devices(n: int = DEFAULT_DEVICES) -> None:
    """Run this notebook on ``n`` devices: the GPUs or TPUs here where there are at least
    ``n`` of one kind, else ``n`` virtual CPU devices; print one line saying which.

    Call it in the first code cell, before any JAX computation. Running it again in the same
    kernel changes nothing; after JAX started on other devices, a :class:`DeviceSetupError`
    says to restart the kernel. ``COURSE_DEVICES=cpu`` or ``=accelerator`` overrides the choice.
    A JAX older than :data:`OLDEST_JAX` gets one line first, saying which the course needs.
    """
    import jax

    if os.environ.get(WORKER_ENV):
        return
    if too_old(jax.__version__):
        print(LINE_JAX_TOO_OLD.format(oldest=OLDEST_JAX, version=jax.__version__))
    override = os.environ.get(OVERRIDE_ENV, "").strip().lower() or None
    if override not in (None, *OVERRIDES):
        print(BAD_OVERRIDE.format(env=OVERRIDE_ENV, value=override, choices=" or ".join(OVERRIDES)))
        override = None
    platforms = os.environ.get("JAX_PLATFORMS", "").strip().lower() or None
    try:  # harmless on an accelerator (it sizes the CPU client only); refused once JAX started
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # a second run of this cell, or JAX code ran first
        found = look_for_accelerators() if os.environ.get(FOUND_ENV) else Found()
        choice = decide(found, n, override, platforms, jax.__version__)
        _already_running(choice.platform, n)
        print(choice.line)
        return
    found = Found() if _only_cpu(platforms) else look_for_accelerators()
    os.environ[FOUND_ENV] = json.dumps(asdict(found))
    choice = decide(found, n, override, platforms, jax.__version__)
    if choice.platform == "cpu":
        jax.config.update("jax_platforms", "cpu")
    else:
        jax.config.update("jax_default_matmul_precision", "highest")
    print(choice.line)


def _already_running(platform: str, n: int) -> None:
    """Refuse, with the way out, when JAX started on other devices than the ones chosen."""
    import jax

    have, kind = jax.device_count(), jax.default_backend()
    if kind != platform or (platform == "cpu" and have < n):
        raise DeviceSetupError(TOO_LATE.format(have=f"{have} {kind.upper()} device(s)",
                                               want=f"{n} {platform.upper()} devices"))


def use_cpu_devices(n: int = DEFAULT_DEVICES) -> int:
    """Ask JAX for ``n`` virtual CPU devices on the CPU platform, whatever accelerators the
    machine has; return how many devices JAX now has.

    For the grader and the tests, which grade and test on CPU devices. Call it before any JAX
    computation. If JAX already runs with at least ``n`` devices nothing changes; if it runs
    with fewer, a :class:`DeviceSetupError` explains how to recover.
    """
    import jax

    if os.environ.get(WORKER_ENV):
        return jax.device_count()
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # the backend is up: the count is whatever it was
        have = jax.device_count()
        if have < n:
            raise DeviceSetupError(TOO_LATE.format(have=f"{have} device(s)",
                                                   want=n)) from None
        return have
    jax.config.update("jax_platforms", "cpu")
    return jax.device_count()
