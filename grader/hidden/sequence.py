"""Hidden tests of lesson 9 (sequence and context parallelism): only the grader runs them, on
8 devices and on 2, since every exercise of the lesson must work on all devices."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework.cases import case
from grader.framework.judge import compiles_to, traces
from grader.framework.probes import hlo_collectives, program_summary
from grader.hints import sequence as hints
from grader.public.sequence import (
    BYTES_HINTS,
    attention_case,
    attention_inputs,
    bytes_context,
    communicates,
    counted_case,
    gathered_queries,
    gathered_shapes,
    heads_merged,
    local_max,
    local_positions,
    local_queries,
    local_sum,
    multihead_case,
    multihead_inputs,
    no_mask,
    no_rescale,
    predictions,
    predicts_the_counted_bytes,
    scores_input,
    softmax_case,
    split_by_position,
    wrong_block,
)

# --- ring_bytes_per_device --------------------------------------------------------------------
#: Sizes no public test asks for: other head widths, item sizes and device counts.
HIDDEN_SIZES = [(64, 32, 8, 2), (48, 12, 3, 8), (4096, 128, 16, 2), (20, 6, 5, 1),
                (32, 16, 32, 4), (12, 5, 1, 2)]


@case("ring_bytes_per_device", hidden=True, hints=BYTES_HINTS)
def predicts_sizes_never_shown(fn):
    return {"result": predictions(fn, HIDDEN_SIZES), **bytes_context(HIDDEN_SIZES)}


@case("ring_bytes_per_device", hidden=True, judge=predicts_the_counted_bytes)
def matches_the_compiled_ring_in_float32(fn):
    return counted_case(fn, 3, 8, jnp.float32)


@case("ring_bytes_per_device", hidden=True, judge=predicts_the_counted_bytes)
def matches_the_compiled_ring_of_wider_heads(fn):
    return counted_case(fn, 2, 16, jnp.float32)


# --- sequence_softmax -------------------------------------------------------------------------
@case("sequence_softmax", hidden=True, hints=[local_sum, local_max])
def large_scores_that_overflow_without_the_maximum(fn):
    return softmax_case(fn, scores_input(100, 4, 2, scale=60.0))


@case("sequence_softmax", hidden=True, hints=[local_sum, local_max])
def scores_already_split_over_seq(fn):
    x = scores_input(101, 2, 3)
    mesh = jax.make_mesh((jax.device_count(),), ("seq",))
    return softmax_case(fn, jax.device_put(x, NamedSharding(mesh, P(None, "seq"))))


@case("sequence_softmax", hidden=True,
      judge=communicates("all-reduce", hints.HINT_SOFTMAX_NO_ALL_REDUCE, "all-gather",
                         hints.HINT_SOFTMAX_GATHERED))
def all_reduces_on_every_device_count(fn):
    return hlo_collectives(fn, scores_input(102, 3, 2))


@case("sequence_softmax", hidden=True, judge=traces("pmax", "seq", hints.HINT_SOFTMAX_PMAX))
def takes_the_maximum_over_seq(fn):
    return program_summary(fn, scores_input(103, 2, 2))


# --- causal_gathered_attention ----------------------------------------------------------------
@case("causal_gathered_attention", hidden=True, hints=[no_mask, local_queries])
def inputs_already_split_by_position(fn):
    return attention_case(fn, *attention_inputs(110, 3, 5, 2), placed=True)


@case("causal_gathered_attention", hidden=True, hints=[no_mask, local_queries])
def blocks_of_one_position(fn):
    return attention_case(fn, *attention_inputs(111, 1, 3, 4))


@case("causal_gathered_attention", hidden=True,
      judge=compiles_to("all-gather", hints.HINT_CAUSAL_GATHERED_QUERIES))
def compiles_to_an_all_gather(fn):
    return hlo_collectives(fn, *attention_inputs(112, 2, 4, 3))


@case("causal_gathered_attention", hidden=True, hints=[gathered_queries])
def gathers_only_keys_and_values_on_every_device_count(fn):
    return {"gathered": gathered_shapes(fn, *attention_inputs(113, 2, 3, 5))}


# --- multihead_ring_attention -----------------------------------------------------------------
@case("multihead_ring_attention", hidden=True, hints=[heads_merged, no_rescale])
def heads_on_inputs_already_split(fn):
    return multihead_case(fn, *multihead_inputs(130, 3, 2, 5, 3), placed=True)


@case("multihead_ring_attention", hidden=True, hints=[heads_merged, no_rescale])
def one_head_and_large_scores(fn):
    q, k, v = multihead_inputs(131, 2, 1, 4, 2)
    return multihead_case(fn, 8 * q, k, v)


@case("multihead_ring_attention", hidden=True,
      judge=communicates("collective-permute", hints.HINT_RING_NO_PERMUTE, "all-gather",
                         hints.HINT_RING_GATHERED))
def passes_heads_on_every_device_count(fn):
    return hlo_collectives(fn, *multihead_inputs(132, 1, 4, 2, 2))


# --- causal_ring_attention --------------------------------------------------------------------
@case("causal_ring_attention", hidden=True, hints=[no_mask, wrong_block, local_positions])
def ring_on_inputs_already_split(fn):
    return attention_case(fn, *attention_inputs(120, 3, 5, 2), placed=True)


@case("causal_ring_attention", hidden=True, hints=[no_mask, wrong_block, local_positions])
def ring_with_blocks_of_one_position(fn):
    return attention_case(fn, *attention_inputs(121, 1, 4, 3))


@case("causal_ring_attention", hidden=True,
      judge=communicates("collective-permute", hints.HINT_RING_NO_PERMUTE, "all-gather",
                         hints.HINT_RING_GATHERED))
def passes_blocks_on_every_device_count(fn):
    return hlo_collectives(fn, *attention_inputs(122, 2, 3, 4))


@case("causal_ring_attention", hidden=True, judge=traces("ppermute", "seq",
                                                         hints.HINT_RING_NO_PERMUTE))
def permutes_over_seq(fn):
    return program_summary(fn, *split_by_position(*attention_inputs(123, 2, 4, 3)))
