"""The devices: where a notebook runs (an accelerator or CPU devices, and the line that says
which), the CPU devices the grader and tests use, and a clear error when it is too late."""

import json
import subprocess
import sys

import jax
import pytest

from grader import devices
from grader.devices import DEFAULT_DEVICES, Found, decide, look_for_accelerators

ONE_GPU = Found("gpu", 1, "NVIDIA H200")
EIGHT_TPUS = Found("tpu", 8, "TPU v5 lite")
TWO_GPUS = Found("gpu", 2, "Tesla T4")


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"} | env
    env = {k: v for k, v in env.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


def test_the_test_process_has_the_default_device_count():
    """Did conftest.py give this process 8 devices before JAX started?"""
    assert jax.device_count() == DEFAULT_DEVICES


def test_asking_before_jax_starts_gives_that_many_devices():
    """Does use_cpu_devices(n) in a fresh process give exactly n devices, on the CPU platform
    even where JAX_PLATFORMS does not say so?"""
    done = run_python("from grader.devices import use_cpu_devices; print(use_cpu_devices(3))\n"
                      "import jax; print(jax.default_backend(), jax.config.jax_platforms)",
                      JAX_PLATFORMS=None)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "cpu", "cpu"]


def test_asking_too_late_says_restart_the_kernel():
    """After JAX started with one device, is the error clear instead of a failure later?"""
    code = (
        "import jax; jax.devices()\n"
        "from grader.devices import use_cpu_devices\n"
        "use_cpu_devices(8)\n"
    )
    done = run_python(code)
    assert done.returncode != 0
    assert "DeviceSetupError" in done.stderr and "Restart the kernel" in done.stderr


# --- the decision -------------------------------------------------------------------------
def test_a_machine_with_only_a_cpu_uses_cpu_devices():
    """No GPU or TPU: 8 CPU devices, and the line says none was found."""
    choice = decide(Found(), 8, version="0.10.2")
    assert choice.platform == "cpu"
    assert choice.line == "8 CPU devices (JAX 0.10.2; no GPU or TPU found)."


@pytest.mark.parametrize("found", [ONE_GPU, TWO_GPUS, Found("tpu", 1, "TPU v5 lite")],
                         ids=["one GPU", "two GPUs", "one TPU"])
def test_fewer_accelerators_than_a_lesson_needs_means_cpu_devices_said_so(found):
    """With 1 or 2 accelerators (Colab, Kaggle's two T4s), do the lessons run on 8 CPU devices,
    and does the line name what was found and why the CPU?"""
    choice = decide(found, 8, version="0.11.2")
    assert choice.platform == "cpu"
    assert choice.line.startswith(f"{found.describe()} found: this course uses 8 CPU devices "
                                  "so that meshes and collectives are real")
    assert f"lesson 7 measures the {found.platform.upper()} for its roofline" in choice.line


def test_enough_accelerators_of_one_kind_are_used():
    """Eight TPUs (Kaggle's v5e-8): the lessons run on them, said so."""
    choice = decide(EIGHT_TPUS, 8, version="0.11.2")
    assert choice.platform == "tpu"
    assert choice.line.startswith("8 TPUs (TPU v5 lite): the lessons run on them")


def test_the_overrides_win_over_the_count():
    """COURSE_DEVICES=cpu keeps 8 TPUs unused; =accelerator uses one GPU; JAX_PLATFORMS=cpu,
    set by the user, means the CPU whatever was found."""
    assert decide(EIGHT_TPUS, 8, override="cpu").platform == "cpu"
    assert "COURSE_DEVICES=cpu" in decide(EIGHT_TPUS, 8, override="cpu").line
    assert decide(ONE_GPU, 8, override="accelerator").platform == "gpu"
    assert decide(EIGHT_TPUS, 8, platforms="cpu").platform == "cpu"
    assert decide(Found(), 8, override="accelerator").platform == "cpu"  # nothing to use


def test_a_plugin_without_an_accelerator_is_said():
    """A CUDA plugin installed on a machine without a GPU: CPU devices, and why."""
    choice = decide(Found(problem="no CUDA-capable device is detected"), 8)
    assert choice.platform == "cpu" and "no CUDA-capable device is detected" in choice.line


# --- looking for accelerators without starting JAX here ------------------------------------
def fake_python(tmp_path, answer: str, status: int = 0) -> str:
    """A stand-in for the Python that JAX would run in: prints ``answer`` and exits."""
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\necho '{answer}'\nexit {status}\n")
    path.chmod(0o755)
    return str(path)


def test_no_accelerator_plugin_means_no_process_started(monkeypatch):
    """On a laptop with the course's own install (no plugin), is nothing run at all?"""
    monkeypatch.delenv(devices.FOUND_ENV, raising=False)
    assert devices.accelerator_plugins() == []
    assert look_for_accelerators(python="/nonexistent/python", plugins=[]) == Found()


def test_what_jax_finds_in_another_process_is_read(tmp_path, monkeypatch):
    """JAX's answer in another process (platform, count, kind) becomes what was found; a CPU
    answer is no accelerator; no answer is a problem, said."""
    monkeypatch.delenv(devices.FOUND_ENV, raising=False)
    gpu = json.dumps({"platform": "gpu", "count": 1, "kind": "NVIDIA H200"})
    assert look_for_accelerators(fake_python(tmp_path, gpu), ["xla_cuda13"]) == ONE_GPU
    cpu = json.dumps({"platform": "cpu", "count": 1, "kind": "cpu"})
    assert look_for_accelerators(fake_python(tmp_path, cpu), ["xla_cuda13"]) == Found()
    broken = look_for_accelerators(fake_python(tmp_path, "no GPU answered", 1), ["xla_cuda13"])
    assert broken.platform is None and broken.problem == "exit status 1"


# --- use_devices in a fresh kernel ------------------------------------------------------------
USE = "from grader.devices import use_devices\nuse_devices(8)\n"
SHOW = "import jax; print(jax.default_backend(), jax.device_count(), jax.config.jax_platforms)"


def test_use_devices_on_a_cpu_only_machine_gives_eight_cpu_devices_and_says_so():
    """With no accelerator, is the line printed and are there 8 CPU devices, the CPU platform
    named explicitly? Is running the cell again harmless?"""
    done = run_python(USE + SHOW + "\n" + USE, JAX_PLATFORMS=None)
    assert done.returncode == 0, done.stderr
    line = decide(Found(), 8, version=jax.__version__).line
    assert done.stdout.splitlines() == [line, "cpu 8 cpu", line]


def test_use_devices_with_one_gpu_found_runs_on_cpu_devices():
    """One GPU found (JAX's answer stubbed): 8 CPU devices, and the line says why."""
    found = json.dumps({"platform": "gpu", "count": 1, "kind": "NVIDIA H200", "problem": ""})
    done = run_python(USE + SHOW, JAX_PLATFORMS=None, **{devices.FOUND_ENV: found})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [decide(ONE_GPU, 8, version=jax.__version__).line,
                                        "cpu 8 cpu"]


def test_use_devices_with_eight_accelerators_leaves_jax_its_platform():
    """Eight TPUs found (stubbed): the CPU platform is not forced, float32 matrix products are
    asked at full precision, and the line says the lessons run on them."""
    found = json.dumps({"platform": "tpu", "count": 8, "kind": "TPU v5 lite", "problem": ""})
    code = USE + "import jax; print(jax.config.jax_platforms, " \
                 "jax.config.jax_default_matmul_precision)"
    done = run_python(code, JAX_PLATFORMS=None, **{devices.FOUND_ENV: found})
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [decide(EIGHT_TPUS, 8, version=jax.__version__).line,
                                        "None highest"]


def test_use_devices_after_jax_started_elsewhere_says_restart():
    """JAX code run before the set-up cell: a DeviceSetupError that says to restart."""
    done = run_python("import jax; jax.numpy.ones(1)\n" + USE, JAX_PLATFORMS=None)
    assert "DeviceSetupError" in done.stderr and "Restart the kernel" in done.stderr


def test_use_devices_stands_aside_in_a_grader_worker():
    """In a worker (whose count the grader fixed), does it neither print nor change anything?"""
    done = run_python("import jax; jax.config.update('jax_num_cpu_devices', 2)\n" + USE + SHOW,
                      **{devices.WORKER_ENV: "1"})
    assert done.returncode == 0 and done.stdout.split() == ["cpu", "2", "cpu"], done.stderr


def test_a_bad_override_is_said_and_ignored():
    """COURSE_DEVICES=gpu (not a choice) gets a line saying it is ignored."""
    done = run_python(USE, JAX_PLATFORMS=None, COURSE_DEVICES="gpu")
    assert done.returncode == 0
    assert done.stdout.startswith("COURSE_DEVICES='gpu' is not one of cpu or accelerator")



# --- which JAX the course holds on ------------------------------------------------------------
@pytest.mark.parametrize("version, old", [("0.9.2", True), ("0.10.0rc1", True),
                                          (devices.OLDEST_JAX, False), ("0.10.2", False),
                                          (devices.NEWEST_JAX, False),
                                          ("0.13.0.dev20261201", False), ("1.0", False)])
def test_a_jax_older_than_the_course_holds_on_is_told_apart(version, old):
    """Is a release (or a candidate of it) before OLDEST_JAX too old, and none from it on,
    development builds of later ones included?"""
    assert devices.too_old(version) is old


def test_use_devices_on_a_jax_too_old_says_in_one_line_which_the_course_needs():
    """On a JAX below the range, does the first line name the JAX the course needs and how to
    get it, before the devices' own line, and the range the README states?"""
    fake = "import jax; jax.__version__ = '0.9.2'\n"
    done = run_python(fake + USE, JAX_PLATFORMS=None)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == (f"This course needs JAX {devices.OLDEST_JAX} or newer, and this kernel has "
                     f'JAX 0.9.2: install a newer one (pip install -U "jax>='
                     f'{devices.OLDEST_JAX}") and restart the kernel.')
    assert second == decide(Found(), 8, version="0.9.2").line
    plain = run_python(USE, JAX_PLATFORMS=None)
    assert "This course needs" not in plain.stdout
