"""The usual mistakes of lesson 6 (several processes) that show in one process, each written
as a student would: does check() fail it with the hint of that mistake, and no other hint? And
does a correct function, written here independently of solutions/, pass with no hint?

The mistakes that only show with several processes (each process's rows placed as if they
were the whole batch, the mean of one process's rows) are judged by the hidden tests that run
two real processes, not here."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, lesson_tests

from grader.course import EXERCISES
from grader.hints import common
from grader.hints import multiprocess as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "06_multiprocess"]


def batch_with(*spec):
    def global_batch(local_rows):
        mesh = Mesh(np.array(jax.devices()), ("data",))
        return jax.make_array_from_process_local_data(NamedSharding(mesh, P(*spec)), local_rows)

    return global_batch


def mean_with(mean):
    def global_mean(local_rows):
        mesh = Mesh(np.array(jax.devices()), ("data",))
        batch = batch_with("data")(local_rows)
        return np.asarray(jax.jit(mean, out_shardings=NamedSharding(mesh, P()))(batch))

    return global_mean


def draws_with(key_of, place):
    def random_global_batch(key, rows_per_process, features):
        rows = jax.random.normal(key_of(key), (rows_per_process, features))
        return place(np.asarray(rows))

    return random_global_batch


CORRECT = {
    "global_batch": batch_with("data"),
    "global_mean": mean_with(lambda x: x.mean(axis=0)),
    "random_global_batch": draws_with(lambda key: jax.random.fold_in(key, jax.process_index()),
                                      batch_with("data")),
}
for _name, _fn in CORRECT.items():
    _fn.__name__ = _fn.__qualname__ = _name


# --- global_batch ---------------------------------------------------------------------------
@mistake("global_batch", hints.HINT_GB_NOT_PLACED)
def returns_the_rows_as_they_are(local_rows):
    return jnp.asarray(local_rows)


mistake("global_batch", hints.HINT_GB_SPEC, "replicated")(batch_with())
mistake("global_batch", common.HINT_DOES_NOT_DIVIDE, "split_by_columns")(batch_with(None, "data"))

# --- global_mean ----------------------------------------------------------------------------
mistake("global_mean", hints.HINT_MEAN_AXIS, "row_means")(mean_with(lambda x: x.mean(axis=1)))
mistake("global_mean", hints.HINT_MEAN_AXIS, "mean_of_everything")(mean_with(jnp.mean))

# --- random_global_batch --------------------------------------------------------------------
mistake("random_global_batch", hints.HINT_SAME_KEY_EVERY_PROCESS, "no_fold_in")(
    draws_with(lambda key: key, batch_with("data")))
mistake("random_global_batch", hints.HINT_GB_NOT_PLACED, "never_placed")(
    draws_with(lambda key: jax.random.fold_in(key, jax.process_index()), jnp.asarray))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "06_multiprocess")
