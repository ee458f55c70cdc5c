"""The course's exercises: the one list every other part reads.

The grader, the generator of ``exercises/``, ``check`` and the tests all take names, lessons
and grading device counts from :data:`EXERCISES`.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.devices import DEFAULT_DEVICES

#: Device counts a hidden test of an "all devices" exercise runs on, the default first.
ALL_DEVICE_COUNTS = (DEFAULT_DEVICES, 2)


@dataclass(frozen=True)
class Exercise:
    """One function a student writes."""

    name: str
    lesson: str
    summary: str
    all_devices: bool = False
    """The function must work for whatever devices there are, so it is graded on several."""

    @property
    def device_counts(self) -> tuple[int, ...]:
        """The device counts the hidden tests of this exercise run on by default."""
        return ALL_DEVICE_COUNTS if self.all_devices else (DEFAULT_DEVICES,)


EXERCISES: tuple[Exercise, ...] = (
    # --- lesson 01_sharding ---
    # --- lesson 02_jit_sharding ---
    # --- lesson 03_collectives ---
    Exercise(
        "shard_map_psum",
        lesson="03_collectives",
        summary="Sum a vector inside jax.shard_map on a 1-device mesh, with an explicit psum.",
    ),
    Exercise(
        "pmap_scaled_sum",
        lesson="03_collectives",
        summary="jax.pmap over all local devices: each device doubles its row, then a psum.",
        all_devices=True,
    ),
    Exercise(
        "distributed_dot",
        lesson="03_collectives",
        summary="A vdot of two row-sharded arrays: local vdot on each device, then a psum.",
        all_devices=True,
    ),
    Exercise(
        "pmean_update_step",
        lesson="03_collectives",
        summary="One data-parallel gradient step for w * x + b, gradients averaged by pmean.",
        all_devices=True,
    ),
    Exercise(
        "ring_shift",
        lesson="03_collectives",
        summary="Every device passes its block to the next one around a ring with ppermute.",
        all_devices=True,
    ),
    # --- lesson 04_prng ---
    # --- lesson 05_training ---
    # --- lesson 06_multiprocess ---
)

BY_NAME: dict[str, Exercise] = {exercise.name: exercise for exercise in EXERCISES}

LESSONS: tuple[str, ...] = tuple(dict.fromkeys(exercise.lesson for exercise in EXERCISES))
