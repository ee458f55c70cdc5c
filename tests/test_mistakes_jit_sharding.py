"""The usual mistakes of lesson 2 (jit and sharding), each written as a student would: does
check() fail it with the hint of that mistake, and no other hint? And does a correct function,
written here independently of solutions/, pass with no hint?"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, assert_only_hint, assert_passes_without_hint

from grader.course import EXERCISES
from grader.hints import jit_sharding as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "02_jit_sharding"]
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


# --- correct functions ----------------------------------------------------------------------
def no_comm_matmul_specs():
    return P("x"), P(None, "y")


def counter(text_of):
    def count_collectives(f, *args):
        counts = dict.fromkeys(COLLECTIVES, 0)
        for line in text_of(f, *args).splitlines():
            found = re.match(r"\s*(?:ROOT\s+)?%\S+\s*=\s*\S+\s+([a-z\-]+)\(", line)
            if found:
                name = found.group(1).removesuffix("-start")
                if name in counts:
                    counts[name] += 1
        return counts

    return count_collectives


def compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


def lowered_text(f, *args):
    return jax.jit(f).lower(*args).as_text()


def by_columns():
    return NamedSharding(Mesh(jax.devices(), ("data",)), P(None, "data"))


def normalize_columns(x):
    @jax.jit
    def normalize(v):
        v = jax.lax.with_sharding_constraint(v, by_columns())
        return v / jnp.sqrt(jnp.sum(v * v, axis=0))

    return normalize(x)


def affine_with(w_spec, b_spec, shardings=True):
    def make_sharded_affine(mesh):
        def on(*spec):
            return NamedSharding(mesh, P(*spec))

        def affine(x, w, b):
            return x @ w + b

        if not shardings:
            return jax.jit(affine)
        return jax.jit(affine, in_shardings=(on("data"), on(*w_spec), on(*b_spec)),
                       out_shardings=on("data", "model"))

    return make_sharded_affine


def explicit_with(*spec):
    def explicit_matmul(x, w):
        mesh = x.sharding.mesh
        return jnp.matmul(x, w, out_sharding=NamedSharding(mesh, P(*spec)))

    return explicit_matmul


CORRECT = {
    "no_comm_matmul_specs": no_comm_matmul_specs,
    "count_collectives": counter(compiled_text),
    "normalize_columns": normalize_columns,
    "make_sharded_affine": affine_with((None, "model"), ("model",)),
    "explicit_matmul": explicit_with("x", "y"),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- no_comm_matmul_specs -------------------------------------------------------------------
@mistake("no_comm_matmul_specs", hints.HINT_SPLIT_CONTRACTION)
def splits_the_contracted_dimension():
    return P("x", "y"), P("y", None)


@mistake("no_comm_matmul_specs", hints.HINT_SAME_AXIS_TWICE)
def splits_both_output_dimensions_over_x():
    return P("x", None), P(None, "x")


# --- count_collectives ----------------------------------------------------------------------
mistake("count_collectives", hints.HINT_COUNTED_LOWERED, "reads_the_lowered_text")(
    counter(lowered_text))


@mistake("count_collectives", hints.HINT_COUNTED_TWICE)
def counts_every_mention(f, *args):
    text = compiled_text(f, *args)
    return {op: text.count(op) for op in COLLECTIVES}


# --- normalize_columns ----------------------------------------------------------------------
@mistake("normalize_columns", hints.HINT_CONSTRAINED_TOO_LATE)
def constrains_the_result(x):
    @jax.jit
    def normalize(v):
        out = v / jnp.linalg.norm(v, axis=0, keepdims=True)
        return jax.lax.with_sharding_constraint(out, by_columns())

    return normalize(x)


@mistake("normalize_columns", hints.HINT_NORMS_FROM_ROWS)
def never_reshards(x):
    return jax.jit(lambda v: v / jnp.linalg.norm(v, axis=0, keepdims=True))(x)


# --- make_sharded_affine --------------------------------------------------------------------
mistake("make_sharded_affine", hints.HINT_AFFINE_ONE_DEVICE, "jit_without_shardings")(
    affine_with((), (), shardings=False))
mistake("make_sharded_affine", hints.HINT_AFFINE_W_WHOLE, "w_and_b_replicated")(
    affine_with((), ()))


@mistake("make_sharded_affine", hints.HINT_RETURN_JITTED)
def returns_a_plain_function(mesh):
    return lambda x, w, b: x @ w + b


# --- explicit_matmul ------------------------------------------------------------------------
mistake("explicit_matmul", hints.HINT_EXPLICIT_COLUMNS, "out_sharding_rows_only")(
    explicit_with("x", None))


@mistake("explicit_matmul", hints.HINT_NEEDS_OUT_SHARDING)
def leaves_the_out_sharding_to_jax(x, w):
    return x @ w


@pytest.mark.parametrize("fn, hint, also", mistake.params)
def test_a_usual_mistake_gets_its_own_hint(fn, hint, also):
    """Does this mistaken function fail check() with the hint for its mistake, and no hint
    that would point elsewhere?"""
    assert_only_hint(fn, hint, also)


def test_every_exercise_of_the_lesson_has_two_mistakes_with_hints():
    """Does each exercise of lesson 2 have at least two mistakes whose hints are tested?"""
    counts = {name: 0 for name in LESSON}
    for param in mistake.params:
        counts[param.values[0].__name__] += 1
    assert min(counts.values()) >= 2, counts


@pytest.mark.parametrize("name", LESSON)
def test_a_correct_function_gets_no_hint(name):
    """Does a correct function of each exercise pass check() with no hint at all?"""
    assert_passes_without_hint(CORRECT[name])
