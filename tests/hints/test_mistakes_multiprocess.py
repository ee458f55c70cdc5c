"""The usual mistakes of lesson 6 (several processes) that show in one process, each written
as a student would: does check() fail it with the hint of that mistake, and no other hint? And
does a correct function, written here independently of solutions/, pass with no hint?

The mistakes that only show with several processes (each process's rows placed as if they
were the whole batch, the mean of one process's rows, reading an array that spans other
processes, processes that stop running the same programs) are judged by the grader's hidden
tests, which replay the student's cells in two real processes: the last test runs them so."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, lesson_tests, replayed_result

from grader import messages as msg
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


# --- mistakes that show with two processes: the grader's own tests, their cells replayed -----
IMPORTS = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
"""
CORRECT_CELLS = {
    "global_batch": IMPORTS + """
def global_batch(local_rows):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)
""",
    "global_mean": IMPORTS + """
def global_mean(local_rows):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)
    mean = jax.jit(lambda x: x.mean(axis=0), out_shardings=NamedSharding(mesh, P()))
    return np.asarray(mean(batch))
""",
}
TWO_PROCESS_MISTAKES = {
    "mesh_of_local_devices": ("global_batch:joins_the_rows_of_two_processes", """
def global_batch(local_rows):
    mesh = Mesh(np.array(jax.local_devices()), ("data",))
    return jax.device_put(local_rows, NamedSharding(mesh, P("data")))
""", hints.HINT_GB_LOCAL_ONLY),
    "device_put_of_own_rows": ("global_batch:joins_the_rows_of_two_processes", """
def global_batch(local_rows):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    return jax.device_put(local_rows, NamedSharding(mesh, P("data")))
""", hints.HINT_DEVICE_PUT_PER_PROCESS),
    "mean_of_own_rows": ("global_mean:agrees_across_two_processes", """
def global_mean(local_rows):
    return np.asarray(jnp.mean(local_rows, axis=0))
""", hints.HINT_MEAN_OF_LOCAL_ROWS),
    "reads_the_global_batch": ("global_mean:agrees_across_two_processes", """
def global_mean(local_rows):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)
    return np.asarray(batch).mean(axis=0)
""", hints.HINT_FETCH_NON_ADDRESSABLE),
    "only_process_0_computes": ("global_mean:agrees_across_two_processes", """
def global_mean(local_rows):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)
    if jax.process_index() != 0:  # "only one process needs to compute the mean"
        return np.zeros(local_rows.shape[1], np.float32)
    mean = jax.jit(lambda x: x.mean(axis=0), out_shardings=NamedSharding(mesh, P()))
    return np.asarray(mean(batch))
""", hints.HINT_PROCESSES_DIVERGED),
}


@pytest.mark.slow
@pytest.mark.parametrize("label", list(TWO_PROCESS_MISTAKES))
def test_a_mistake_that_shows_with_two_processes_gets_its_hint_from_the_grader(label):
    """Replayed in two processes by the grader's hidden test, as a worker would replay the
    student's cell: does each mistake fail with its hint?"""
    case_id, cell, hint = TWO_PROCESS_MISTAKES[label]
    result = replayed_result(case_id, IMPORTS + cell, CORRECT_CELLS[case_id.split(":")[0]])
    assert result.status in (msg.FAILED, msg.ERROR) and result.hint == hint, str(result)


#: Correct cells written otherwise than the references above.
OTHER_CORRECT_CELLS = {
    "global_batch:joins_the_rows_of_two_processes": IMPORTS + """
def global_batch(local_rows):
    rows = NamedSharding(jax.make_mesh((jax.device_count(),), ("data",)), P("data"))
    return jax.make_array_from_process_local_data(rows, local_rows)
""",
    "global_mean:agrees_across_two_processes": IMPORTS + """
def global_mean(local_rows):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    batch = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)
    mean = jax.jit(lambda x: jnp.sum(x, axis=0) / x.shape[0],
                   out_shardings=NamedSharding(mesh, P()))(batch)
    return np.asarray(mean.addressable_data(0))
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("case_id", list(OTHER_CORRECT_CELLS))
def test_a_correct_cell_passes_the_two_process_tests(case_id):
    """Does a correct cell, replayed in two processes, pass those tests with no hint?"""
    result = replayed_result(case_id, OTHER_CORRECT_CELLS[case_id],
                             CORRECT_CELLS[case_id.split(":")[0]])
    assert result.status == msg.PASSED and result.hint is None, str(result)
