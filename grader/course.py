"""The course's exercises: the one list every other part reads, and where the course lies.

The grader, the generator of ``exercises/``, ``check`` and the tests all take names, lessons
and grading device counts from :data:`EXERCISES`, and the folders of the course from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.devices import DEFAULT_DEVICES

#: The grader's package (bound read-only in the sandbox, fingerprinted by the resume store),
#: and the clone of the course repository it lies in.
PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent


def in_repository(path: Path) -> str:
    """``path`` as a maintainer reads it: relative to the repository where it lies inside."""
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


#: The reference solutions, and the student notebooks generated from them.
SOLUTIONS = ROOT / "solutions"
EXERCISE_NOTEBOOKS = ROOT / "exercises"
#: The lessons, and the notebook ``make lab`` opens on, which lists them.
LESSON_NOTEBOOKS = ROOT / "notebooks"
LANDING = ROOT / "start_here.ipynb"
#: Where the course is published, and the branch students open: every notebook's Colab and
#: Kaggle links and its set-up cell (which installs the helpers on those services) are written
#: from these by ``make exercises``. Change them here when the course moves.
REPOSITORY = "https://github.com/jax-distributed-course/jax-distributed-course"
BRANCH = "main"
#: Where a notebook's set-up cell installs the course's helpers from, where they are missing,
#: when set: a path to a copy of the course, a wheel, or anything ``pip install`` takes (a
#: fork's ``git+https://...@branch``); unset, the published repository (REPOSITORY, BRANCH).
SOURCE_ENV = "COURSE_SOURCE"

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
    Exercise(
        "is_congruent",
        lesson="01_sharding",
        summary="Whether each dimension of a shape is a multiple of its number of blocks.",
    ),
    Exercise(
        "shard_shape",
        lesson="01_sharding",
        summary="The block shape a spec gives on a mesh {axis: size}; ValueError if uneven.",
    ),
    Exercise(
        "spec_for_block",
        lesson="01_sharding",
        summary="A PartitionSpec whose blocks on a mesh {axis: size} have a given shape, if any.",
    ),
    Exercise(
        "place_transposed",
        lesson="01_sharding",
        summary="Place x so each device holds the transpose of its block of a placed template.",
        all_devices=True,
    ),
    Exercise(
        "block_map",
        lesson="01_sharding",
        summary="From addressable_shards: device id -> (start, stop) of its block per dimension.",
        all_devices=True,
    ),
    Exercise(
        "devices_holding",
        lesson="01_sharding",
        summary="The sorted ids of the devices holding one element of a placed array, copies too.",
        all_devices=True,
    ),
    # --- lesson 02_jit_sharding ---
    Exercise(
        "no_comm_matmul_specs",
        lesson="02_jit_sharding",
        summary="PartitionSpecs for x and w on an ('x', 'y') mesh: x @ w split, no collective.",
    ),
    Exercise(
        "make_sharded_affine",
        lesson="02_jit_sharding",
        summary="x @ w + b under jax.jit with in_shardings and out_shardings on (data, model).",
    ),
    Exercise(
        "fix_residual",
        lesson="02_jit_sharding",
        summary="Find and fix x + tanh(x @ w) that JAX refuses: gather w, never x, rows on 'data'.",
        all_devices=True,
    ),
    Exercise(
        "count_collectives",
        lesson="02_jit_sharding",
        summary="Count each collective in the compiled HLO of jax.jit(f), an async pair once.",
    ),
    Exercise(
        "normalize_columns",
        lesson="02_jit_sharding",
        summary="Row-split x, columns normalised: with_sharding_constraint first, one all-to-all.",
        all_devices=True,
    ),
    Exercise(
        "matmul_type",
        lesson="02_jit_sharding",
        summary="Predict the type spec of x @ w on an Explicit mesh, or None where JAX refuses.",
    ),
    Exercise(
        "init_layer",
        lesson="02_jit_sharding",
        summary="w and b created sharded with out_sharding= under jax.set_mesh: no gather.",
        all_devices=True,
    ),
    Exercise(
        "clip_outliers",
        lesson="02_jit_sharding",
        summary="Clip rows at a quantile Explicit mode refuses, sending no more than a row gather.",
        all_devices=True,
    ),
    # --- lesson 03_collectives ---
    Exercise(
        "nan_mean_var",
        lesson="03_collectives",
        summary="Mean and variance of the non-NaN entries of a split vector: one psum of a pytree.",
        all_devices=True,
    ),
    Exercise(
        "distributed_dot",
        lesson="03_collectives",
        summary="A vdot of two row-sharded arrays: local vdot on each device, then a psum.",
        all_devices=True,
    ),
    Exercise(
        "global_max_normalize",
        lesson="03_collectives",
        summary="x / max(|x|) for a vector split over devices, the maximum taken with pmax.",
        all_devices=True,
    ),
    Exercise(
        "halo_difference",
        lesson="03_collectives",
        summary="Periodic central difference of a split vector: ppermute sends edge elements only.",
        all_devices=True,
    ),
    Exercise(
        "fixed_pmap_port",
        lesson="03_collectives",
        summary="Find and fix a line-by-line shard_map port of pmap code: blocks, P(), no reshape.",
        all_devices=True,
    ),
    Exercise(
        "reduce_scatter_columns",
        lesson="03_collectives",
        summary="Partial sums on ('x', 'y') added over 'x' only, columns scattered: psum_scatter.",
        all_devices=True,
    ),
    Exercise(
        "rows_to_columns",
        lesson="03_collectives",
        summary="Re-split a row-split matrix by columns with one all_to_all inside shard_map.",
        all_devices=True,
    ),
    Exercise(
        "row_group_sums",
        lesson="03_collectives",
        summary="Row sums of a matrix on an ('x', 'y') mesh: a psum over 'y' only, P('x').",
        all_devices=True,
    ),
    Exercise(
        "pmean_update_step",
        lesson="03_collectives",
        summary="A pmap data-parallel step for w * x + b ported to shard_map: pmean, P() out.",
        all_devices=True,
    ),
    Exercise(
        "sharded_cumsum",
        lesson="03_collectives",
        summary="cumsum of a split vector: local cumsums plus the totals of the earlier blocks.",
        all_devices=True,
    ),
    Exercise(
        "allreduce_from_ppermute",
        lesson="03_collectives",
        summary="An all-reduce built from ppermute alone: n - 1 shifts round a ring, no psum.",
        all_devices=True,
    ),
    # --- lesson 04_prng ---
    Exercise(
        "device_keys",
        lesson="04_prng",
        summary="One typed key per device from jax.random.split, device i holding key i.",
        all_devices=True,
    ),
    Exercise(
        "replicated_noise",
        lesson="04_prng",
        summary="Noise on a ('data', 'model') mesh: one draw per row block, equal on its copies.",
        all_devices=True,
    ),
    Exercise(
        "sharded_dropout",
        lesson="04_prng",
        summary="Dropout of a row-sharded array whose mask does not depend on the device count.",
        all_devices=True,
    ),
    Exercise(
        "fixed_noisy_step",
        lesson="04_prng",
        summary="Find and fix: a data-parallel step whose dropout masks and update noise are "
                "drawn with each other's keys.",
        all_devices=True,
    ),
    # --- lesson 05_training ---
    Exercise(
        "dp_step_on_mesh",
        lesson="05_training",
        summary="One jitted SGD step on a given mesh: batch rows split over all its axes.",
        all_devices=True,
    ),
    Exercise(
        "accumulated_grads",
        lesson="05_training",
        summary="Gradient accumulation: microbatches in a scan on each device, one pmean.",
        all_devices=True,
    ),
    Exercise(
        "fsdp_tp_forward",
        lesson="05_training",
        summary="The MLP on ('data', 'model'): hidden units split, FSDP-gathered over 'data'.",
        all_devices=True,
    ),
    Exercise(
        "tp_attention",
        lesson="05_training",
        summary="Multi-head attention on a ('data', 'model') mesh: heads split, one psum.",
        all_devices=True,
    ),
    # --- lesson 06_multiprocess ---
    Exercise(
        "total_over_processes",
        lesson="06_multiprocess",
        summary="A count from every process -> their sum, a Python int in every process.",
        all_devices=True,
    ),
    Exercise(
        "rows_to_read",
        lesson="06_multiprocess",
        summary="The distinct row ranges this process's devices hold of a sharded batch.",
        all_devices=True,
    ),
    Exercise(
        "uneven_global_mean",
        lesson="06_multiprocess",
        summary="Column means over processes with unequal row counts: padding and a mask.",
        all_devices=True,
    ),
    # --- lesson 07_cost ---
    Exercise(
        "training_state_bytes",
        lesson="07_cost",
        summary="Bytes of params, grads and Adam's m, v one device holds under ZeRO stage 0-3.",
    ),
    Exercise(
        "bytes_sent_2d",
        lesson="07_cost",
        summary="Predict the bytes a device sends in a linear layer's step on a data x model mesh.",
    ),
    Exercise(
        "remat_mlp_grads",
        lesson="07_cost",
        summary="Deep-MLP gradients, data-parallel, with jax.checkpoint: half the temporaries.",
        all_devices=True,
    ),
    Exercise(
        "best_mesh_step",
        lesson="07_cost",
        summary="The linear layer's SGD step on the data x model mesh that sends the fewest bytes.",
        all_devices=True,
    ),
    Exercise(
        "zero2_adam_step",
        lesson="07_cost",
        summary="Adam with m, v split over 'data': gradients reduce-scattered, params gathered.",
        all_devices=True,
    ),
    # --- lesson 08_pipeline ---
    Exercise(
        "microbatches_for_bubble",
        lesson="08_pipeline",
        summary="The fewest microbatches whose GPipe bubble is at most a target, for n stages.",
    ),
    Exercise(
        "gpipe_schedule",
        lesson="08_pipeline",
        summary="Which microbatch each stage works on at each tick of GPipe, None when idle.",
    ),
    Exercise(
        "fixed_pipeline",
        lesson="08_pipeline",
        summary="Find and fix the two bugs of a pipeline: the shift and the ticks outputs leave.",
        all_devices=True,
    ),
    Exercise(
        "pipeline_grads",
        lesson="08_pipeline",
        summary="Gradients through a pipeline, the loss on the last stage; split over 'stage'.",
        all_devices=True,
    ),
    Exercise(
        "deep_pipeline",
        lesson="08_pipeline",
        summary="L / n layers with biases per stage, the batch cut into microbatches; replicated.",
        all_devices=True,
    ),
    # --- lesson 09_sequence ---
    Exercise(
        "ring_bytes_per_device",
        lesson="09_sequence",
        summary="Predict the bytes each device sends for K and V in ring attention, as compiled.",
        all_devices=True,
    ),
    Exercise(
        "sequence_softmax",
        lesson="09_sequence",
        summary="Softmax along a sequence split over 'seq': pmax and psum, the output split.",
        all_devices=True,
    ),
    Exercise(
        "causal_gathered_attention",
        lesson="09_sequence",
        summary="Causal attention: K and V all-gathered, queries split, positions from axis_index.",
        all_devices=True,
    ),
    Exercise(
        "multihead_ring_attention",
        lesson="09_sequence",
        summary="Ring attention of every head at once: (L, heads, d) split by position over 'seq'.",
        all_devices=True,
    ),
    Exercise(
        "causal_ring_attention",
        lesson="09_sequence",
        summary="Causal ring attention: K/V blocks passed on with ppermute, never all-gathered.",
        all_devices=True,
    ),
    # --- lesson 10_experts ---
    Exercise(
        "capacity_for_no_drops",
        lesson="10_experts",
        summary="Predict the smallest capacity per expert and group at which no token drops.",
    ),
    Exercise(
        "dispatch_bytes",
        lesson="10_experts",
        summary="Predict the bytes one device sends in the dispatch all-to-all of an MoE layer.",
        all_devices=True,
    ),
    Exercise(
        "top2_slots",
        lesson="10_experts",
        summary="Top-2 routing: slots of both choices per group, first choices first; jnp only.",
    ),
    Exercise(
        "moe_two_experts_per_device",
        lesson="10_experts",
        summary="Top-1 MoE layer, two experts per device: two all-to-all, tokens P('expert').",
        all_devices=True,
    ),
    Exercise(
        "reduce_scatter_matmul",
        lesson="10_experts",
        summary="x @ w, contraction split: rows reduce-scattered by n - 1 ppermutes, no psum.",
        all_devices=True,
    ),
    # --- lesson 11_capstone ---
    Exercise(
        "adam_state_bytes",
        lesson="11_capstone",
        summary="Predict the bytes of weights, Adam moments and step count on one device.",
    ),
    Exercise(
        "fsdp_gather_bytes",
        lesson="11_capstone",
        summary="Predict the bytes FSDP's gradient all-gathers over 'data', with remat or without.",
    ),
    Exercise(
        "checkpoint_bytes",
        lesson="11_capstone",
        summary="Predict the bytes each device writes to an Orbax checkpoint, replicas sharing.",
    ),
    Exercise(
        "mqa_specs",
        lesson="11_capstone",
        summary="Specs of a multi-query attention layer: least weight per device, least moved.",
        all_devices=True,
    ),
    Exercise(
        "fixed_tp_step",
        lesson="11_capstone",
        summary="Find and fix: a tensor-parallel training step that moves far more than it should.",
        all_devices=True,
    ),
)

BY_NAME: dict[str, Exercise] = {exercise.name: exercise for exercise in EXERCISES}

LESSONS: tuple[str, ...] = tuple(dict.fromkeys(exercise.lesson for exercise in EXERCISES))
