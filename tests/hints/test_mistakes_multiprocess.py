"""The usual mistakes of lesson 6 (several processes) that show in one process, each written
as a student would: does check() fail it with the hint of that mistake, and no other hint? And
does a correct function, written here independently of solutions/, pass with no hint?

The mistakes that only show with several processes (a process's own count returned as the
total, the blocks of other processes' devices listed as this one's, the mean of one process's
rows or of the processes' means, reading an array that spans other processes, processes that
stop running the same programs) are judged by the grader's hidden tests, which replay the
student's cells in two real processes: the last tests run them so."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from mistakes import Mistakes, lesson_tests, replayed_result

from grader import messages as msg
from grader.course import EXERCISES
from grader.hints import common
from grader.hints import multiprocess as hints

mistake = Mistakes()
LESSON = [e.name for e in EXERCISES if e.lesson == "06_multiprocess"]


def data_mesh() -> Mesh:
    return Mesh(np.array(jax.devices()), ("data",))


def total_over_processes(count):
    every = multihost_utils.process_allgather(np.int64(count))
    return int(np.sum(every))


def reads_with(index_map, distinct=True):
    def rows_to_read(sharding, shape):
        ranges = [index[0].indices(shape[0])[:2]
                  for index in getattr(sharding, index_map)(shape).values()]
        return sorted(set(ranges)) if distinct else sorted(ranges)

    return rows_to_read


def uneven_with(mean):
    def uneven_global_mean(local_rows, capacity):
        rows_split = NamedSharding(data_mesh(), P("data"))
        part = np.pad(local_rows, ((0, capacity - len(local_rows)), (0, 0)))
        real = np.arange(capacity) < len(local_rows)
        batch = jax.make_array_from_process_local_data(rows_split, part)
        mask = jax.make_array_from_process_local_data(rows_split, real.astype(np.float32))
        replicated = NamedSharding(data_mesh(), P())
        return np.asarray(jax.jit(mean, out_shardings=replicated)(batch, mask))

    return uneven_global_mean


def masked(batch, mask):
    return jnp.einsum("rc,r->c", batch, mask) / jnp.sum(mask)


CORRECT = {
    "total_over_processes": total_over_processes,
    "rows_to_read": reads_with("addressable_devices_indices_map"),
    "uneven_global_mean": uneven_with(masked),
}


# --- total_over_processes -----------------------------------------------------------------
@mistake("total_over_processes", hints.HINT_TOTAL_NOT_INT)
def returns_a_numpy_number(count):
    return multihost_utils.process_allgather(np.int64(count)).sum()


@mistake("total_over_processes", hints.HINT_TOTAL_NOT_INT)
def returns_a_jax_array(count):
    return jnp.sum(multihost_utils.process_allgather(np.int64(count)))


# --- rows_to_read ------------------------------------------------------------------------
mistake("rows_to_read", hints.HINT_READS_TWICE, "a_range_per_device")(
    reads_with("addressable_devices_indices_map", distinct=False))
mistake("rows_to_read", hints.HINT_READS_TWICE, "every_device_a_range_per_device")(
    reads_with("devices_indices_map", distinct=False))


# --- uneven_global_mean --------------------------------------------------------------------
mistake("uneven_global_mean", hints.HINT_UNEVEN_PADDING, "padding_counted")(
    uneven_with(lambda batch, mask: batch.mean(axis=0)))
mistake("uneven_global_mean", hints.HINT_MEAN_AXIS, "row_means")(
    uneven_with(lambda batch, mask: (batch * mask[:, None]).sum(axis=1) / mask.sum()))
mistake("uneven_global_mean", common.HINT_DOES_NOT_DIVIDE, "mask_of_the_real_rows_only")(
    lambda local_rows, capacity: np.asarray(jax.make_array_from_process_local_data(
        NamedSharding(data_mesh(), P("data")), local_rows)).mean(axis=0))


(test_a_usual_mistake_gets_its_own_hint,
 test_every_exercise_of_the_lesson_has_two_mistakes_with_hints,
 test_a_correct_function_gets_no_hint) = lesson_tests(mistake, CORRECT, "06_multiprocess")


# --- mistakes that show with two processes: the grader's own tests, their cells replayed -----
IMPORTS = """
import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
"""
#: What the uneven_global_mean cells below share, as a student's helper: the mesh, and the
#: global batch and mask of every process's rows padded to capacity.
GLOBAL_PARTS = """
def global_parts(local_rows, capacity):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rows_split = NamedSharding(mesh, P("data"))
    part = np.zeros((capacity, local_rows.shape[1]), np.float32)
    part[:len(local_rows)] = local_rows
    real = (np.arange(capacity) < len(local_rows)).astype(np.float32)
    return (mesh, jax.make_array_from_process_local_data(rows_split, part),
            jax.make_array_from_process_local_data(rows_split, real))
"""
CORRECT_CELLS = {
    "total_over_processes": IMPORTS + """
def total_over_processes(count):
    return int(multihost_utils.process_allgather(np.asarray(count)).sum())
""",
    "rows_to_read": IMPORTS + """
def rows_to_read(sharding, shape):
    blocks = sharding.addressable_devices_indices_map(shape).values()
    return sorted({index[0].indices(shape[0])[:2] for index in blocks})
""",
    "uneven_global_mean": IMPORTS + GLOBAL_PARTS + """
def uneven_global_mean(local_rows, capacity):
    mesh, batch, mask = global_parts(local_rows, capacity)
    mean = jax.jit(lambda b, m: (b * m[:, None]).sum(0) / m.sum(),
                   out_shardings=NamedSharding(mesh, P()))
    return np.asarray(mean(batch, mask))
""",
}
TWO_PROCESS_MISTAKES = {
    "own_count": ("total_over_processes:adds_the_counts_of_two_processes", """
def total_over_processes(count):
    return int(count)  # "in one process the total is count itself"
""", hints.HINT_TOTAL_OWN_COUNT),
    "every_device_of_every_process": ("rows_to_read:each_of_two_processes_reads_its_own_blocks", """
def rows_to_read(sharding, shape):
    blocks = sharding.devices_indices_map(shape).values()  # "the sharding's blocks"
    return sorted({index[0].indices(shape[0])[:2] for index in blocks})
""", hints.HINT_READS_OTHER_PROCESSES),
    "mean_of_own_rows": ("uneven_global_mean:weighs_every_real_row_of_two_processes", """
def uneven_global_mean(local_rows, capacity):
    return local_rows.mean(axis=0)
""", hints.HINT_MEAN_OF_LOCAL_ROWS),
    "mean_of_the_processes_means": (
        "uneven_global_mean:weighs_every_real_row_of_two_processes", """
def uneven_global_mean(local_rows, capacity):
    means = multihost_utils.process_allgather(local_rows.mean(axis=0))
    return np.asarray(means).mean(axis=0)
""", hints.HINT_UNEVEN_MEAN_OF_MEANS),
    "device_put_of_own_rows": ("uneven_global_mean:weighs_every_real_row_of_two_processes", """
def uneven_global_mean(local_rows, capacity):
    mesh = Mesh(np.array(jax.devices()), ("data",))
    part = np.zeros((capacity, local_rows.shape[1]), np.float32)
    part[:len(local_rows)] = local_rows
    batch = jax.device_put(part, NamedSharding(mesh, P("data")))
    return np.asarray(jax.jit(lambda b: b.sum(0), out_shardings=NamedSharding(mesh, P()))(
        batch)) / len(local_rows)
""", hints.HINT_DEVICE_PUT_PER_PROCESS),
    "reads_the_global_batch": ("uneven_global_mean:weighs_every_real_row_of_two_processes",
                               GLOBAL_PARTS + """
def uneven_global_mean(local_rows, capacity):
    mesh, batch, mask = global_parts(local_rows, capacity)
    return np.asarray(batch).sum(axis=0) / np.asarray(mask).sum()
""", hints.HINT_FETCH_NON_ADDRESSABLE),
    "only_process_0_computes": ("uneven_global_mean:weighs_every_real_row_of_two_processes",
                                GLOBAL_PARTS + """
def uneven_global_mean(local_rows, capacity):
    mesh, batch, mask = global_parts(local_rows, capacity)
    if jax.process_index() != 0:  # "only one process needs to compute the mean"
        return np.zeros(local_rows.shape[1], np.float32)
    mean = jax.jit(lambda b, m: (b * m[:, None]).sum(0) / m.sum(),
                   out_shardings=NamedSharding(mesh, P()))
    return np.asarray(mean(batch, mask))
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
    "total_over_processes:adds_the_counts_of_two_processes": IMPORTS + """
def total_over_processes(count):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    ones = np.full(jax.local_device_count(), count, np.int32)
    counts = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), ones)
    per_device = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(counts)
    return int(per_device) // jax.local_device_count()
""",
    "rows_to_read:each_of_two_processes_reads_its_own_blocks": IMPORTS + """
def rows_to_read(sharding, shape):
    mine = [d for d in sharding.mesh.devices.flat if d.process_index == jax.process_index()]
    every = sharding.devices_indices_map(shape)
    found = []
    for device in mine:
        rows = every[device][0]
        start = 0 if rows.start is None else rows.start
        stop = shape[0] if rows.stop is None else rows.stop
        if [start, stop] not in found:
            found.append([start, stop])
    return sorted(found)
""",
    "uneven_global_mean:weighs_every_real_row_of_two_processes": IMPORTS + """
def uneven_global_mean(local_rows, capacity):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows_split = NamedSharding(mesh, P("data"))
    with_count = np.zeros((capacity, local_rows.shape[1] + 1), np.float32)
    with_count[:len(local_rows), :-1] = local_rows
    with_count[:len(local_rows), -1] = 1
    batch = jax.make_array_from_process_local_data(rows_split, with_count)
    sums = jax.jit(lambda b: b.sum(axis=0), out_shardings=NamedSharding(mesh, P()))(batch)
    sums = np.asarray(sums)
    return sums[:-1] / sums[-1]
""",
}


@pytest.mark.slow
@pytest.mark.parametrize("case_id", list(OTHER_CORRECT_CELLS))
def test_a_correct_cell_passes_the_two_process_tests(case_id):
    """Does a correct cell, replayed in two processes, pass those tests with no hint?"""
    result = replayed_result(case_id, OTHER_CORRECT_CELLS[case_id],
                             CORRECT_CELLS[case_id.split(":")[0]])
    assert result.status == msg.PASSED and result.hint is None, str(result)
