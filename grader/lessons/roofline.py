"""A chip's two roofline numbers, for lesson 7: how fast it multiplies matrices (bfloat16
FLOP/s) and how fast it streams memory (bytes/s of an elementwise operation).

Measured on the GPU or TPU that this machine has, whether the lessons run on it or (with fewer
accelerators than a lesson needs) on CPU devices, in which case a separate process measures the
accelerator the kernel left alone. Without one, the figures measured once on an NVIDIA H200 are
shown, marked as such.

``python -m grader.lessons.roofline`` measures this machine's default device and prints JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace

#: A product of two square matrices of this size, in bfloat16 (2 * SIZE**3 FLOPs).
MATMUL_SIZE = 8192
#: An elementwise ``x * 2 + 1`` over this many float32 numbers (2 GiB read, 2 GiB written).
ELEMENTS = 2**29
#: Seconds the measuring process may take, its accelerator's start included.
TIMEOUT = 300


@dataclass(frozen=True)
class Chip:
    """What one chip does per second, and where the figures come from."""

    name: str
    matmul_flops: float
    """bfloat16 matrix-product FLOP/s."""
    bandwidth: float
    """Memory bytes/s of an elementwise operation (bytes read plus bytes written)."""
    source: str

    @property
    def ridge(self) -> float:
        """FLOPs per byte of memory traffic above which a program is compute-bound here."""
        return self.matmul_flops / self.bandwidth

    def __str__(self) -> str:
        return (f"{self.name} ({self.source}): bf16 matmul {self.matmul_flops / 1e12:,.0f} "
                f"TFLOP/s, memory {self.bandwidth / 1e12:,.2f} TB/s, "
                f"ridge {self.ridge:,.0f} FLOP/byte")


#: Measured on a lent machine with one NVIDIA H200 and JAX 0.11.2 with CUDA (2026-11): bf16
#: matmul at 8192^3 (626 TFLOP/s at 16384^3), ``x * 2 + 1`` on 2 GiB of float32.
H200 = Chip("NVIDIA H200", 786e12, 4.2e12,
            "measured once with JAX 0.11.2, on another machine than this one")


def _best_seconds(run, repeats: int) -> float:
    run().block_until_ready()  # compile, and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run().block_until_ready()
        best = min(best, time.perf_counter() - start)
    return best


def measure_here(size: int = MATMUL_SIZE, elements: int = ELEMENTS, repeats: int = 10) -> Chip:
    """Measure JAX's default device in this process (best of ``repeats`` runs)."""
    import jax
    import jax.numpy as jnp

    a, b = (jax.random.normal(jax.random.key(i), (size, size), jnp.bfloat16) for i in (0, 1))
    matmul = jax.jit(jnp.matmul)
    flops = 2 * size**3 / _best_seconds(lambda: matmul(a, b), repeats)
    x = jnp.ones((elements,), jnp.float32)
    scale = jax.jit(lambda v: v * 2 + 1)
    bandwidth = 2 * x.nbytes / _best_seconds(lambda: scale(x), repeats)
    device = jax.devices()[0]
    return Chip(device.device_kind, flops, bandwidth, f"measured here, JAX {jax.__version__}")


def measure() -> Chip:
    """This machine's accelerator, measured, or :data:`H200` where it has none."""
    import jax

    from grader.devices import accelerator_env, look_for_accelerators

    if jax.default_backend() != "cpu":
        return measure_here()
    if not look_for_accelerators().platform:
        return H200
    env = accelerator_env()
    try:
        done = subprocess.run([sys.executable, "-m", "grader.lessons.roofline"], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT, check=True)
        return Chip(**json.loads(done.stdout.strip().splitlines()[-1]))
    except (subprocess.SubprocessError, ValueError, IndexError, TypeError) as err:
        said = (getattr(err, "stderr", "") or "").strip().splitlines() or [type(err).__name__]
        return replace(H200, source=f"{H200.source}: measuring here failed ({said[-1][:120]})")


if __name__ == "__main__":
    print(json.dumps(asdict(measure_here())))
