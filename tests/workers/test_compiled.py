"""The batch's compiled programs (grader/workers/compiled.py): what the reference run compiled,
every worker of the batch reads instead of compiling it again; no submission can plant an
entry that another worker runs, or list or read an entry for a program it did not build.

Each test starts real sandboxed workers: a writer, as the reference run's, and readers, as a
submission's, on one folder.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from markers import NEEDS_THE_SANDBOX

from grader.workers import compiled
from grader.workers.process import WorkerProcess
from grader.workers.sandbox import DEFAULT_LIMITS, Sandbox

pytestmark = NEEDS_THE_SANDBOX

#: A program a class hands in (every student's worker builds it), and what it returns.
PROGRAM = """
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P

mesh = jax.make_mesh((jax.device_count(),), ("d",))
x = jax.device_put(jnp.arange(32.0).reshape(8, 4), jax.NamedSharding(mesh, P("d")))


def column_totals(x):
    return jax.shard_map(lambda b: jax.lax.psum(b.sum(0), "d"), mesh=mesh,
                         in_specs=P("d"), out_specs=P())(x)
"""
RIGHT = [112.0, 120.0, 128.0, 136.0]

#: Counts this worker's reads of JAX's persistent cache from now on.
COUNT_HITS = """
import jax
HITS = []
jax.monitoring.register_event_listener(
    lambda event, **kw: HITS.append(event) if event.endswith("/cache_hits") else None)
"""

#: Reports, as the message of the error it raises, what the worker's cells found.
REPORT = "raise RuntimeError(json.dumps({report}))"


def started(folder: Path, writes: bool) -> WorkerProcess:
    sandbox = replace(Sandbox(), compiled=folder, writes_compiled=writes)
    worker = WorkerProcess(8, DEFAULT_LIMITS, sandbox)
    assert worker.receive("ready", DEFAULT_LIMITS.start).get("ok")
    return worker


def ran(folder: Path, *cells: str, writes: bool = False) -> dict | None:
    """Run ``cells`` in a fresh worker on the batch's ``folder``; the report of the last one,
    if it made one (see REPORT)."""
    worker = started(folder, writes)
    try:
        for code in ("import json\n", *cells):
            reply = worker.request("cell", 120, file="cell.py", label="cell", source=code)
        if reply.get("ok"):
            return None
        message = reply["error"]["message"]
        return json.loads(message)
    finally:
        worker.close()


def column_totals_in(folder: Path, writes: bool = False) -> dict:
    """What ``column_totals`` returns in a fresh worker, and how many programs it read from
    the persistent cache to compute it."""
    return ran(folder, COUNT_HITS, PROGRAM, "y = jax.jit(column_totals)(x).tolist()",
               REPORT.format(report='{"y": y, "hits": len(HITS)}'), writes=writes)


@pytest.fixture
def folder() -> Path:
    """A batch's folder, as the grader makes it (where a worker run as ``nobody`` may reach)."""
    made = compiled.new_folder()
    assert made is not None, "the temporary folder is out of the workers' reach"
    yield made
    shutil.rmtree(made)


def test_a_worker_reads_what_the_reference_run_compiled_and_nothing_else(folder):
    """Does a submission's worker read the program the reference run's worker compiled (a
    hit), with the same values, where a worker on an empty folder reads none?"""
    written = column_totals_in(folder, writes=True)
    assert written["y"] == RIGHT
    assert any(folder.iterdir())
    read = column_totals_in(folder)
    assert read["y"] == RIGHT
    assert read["hits"] >= 1
    empty = compiled.new_folder()
    assert empty is not None
    try:
        assert column_totals_in(empty)["hits"] == 0
    finally:
        empty.rmdir()


# A submission that builds the program its class hands in and one of its own that looks the
# same to the caller (same arguments, same shapes) but returns what it likes; finds the key
# of the first (its own cache holds an entry named by it), and stores the second's executable
# under that key everywhere it can: through the batch's folder (as the reference run writes
# it, and with a plain open), and through JAX's own cache. Reports what it could write.
PLANTS = PROGRAM + """
import os
from jax._src import compilation_cache
from grader.workers import compiled

def wrong(x):
    return jax.shard_map(lambda b: jax.lax.psum(b.sum(0) * 0 + 7, "d"), mesh=mesh,
                         in_specs=P("d"), out_specs=P())(x)

own = jax.config.jax_compilation_cache_dir
jax.jit(column_totals)(x)
key = [n[:-len("-cache")] for n in os.listdir(own) if n.startswith("jit_column_totals-")][0]
jax.jit(wrong)(x)
wrong_key = [n[:-len("-cache")] for n in os.listdir(own) if n.startswith("jit_wrong-")][0]
executable = compilation_cache._cache.get(wrong_key)
folder = [line.split()[4] for line in open("/proc/self/mountinfo") if "grader-compiled-" in line][0]
written = []
for how, plant in [
    ("as the reference run writes", lambda: compiled.write(Path(folder), key, executable)),
    ("with open", lambda: open(os.path.join(folder, compiled.name(key)), "wb").write(
        compiled.seal(key, executable))),
    ("through JAX's cache", lambda: compilation_cache._cache.put(key, executable)),
]:
    try:
        plant()
        written.append(how)
    except OSError:
        pass
"""


def test_a_submission_cannot_plant_a_program_that_another_worker_runs(folder):
    """A submission stores a program of its own under the key of the program its class hands
    in: does the next student's worker still get the right values? Control: where it may
    write the folder (as only the reference run may), the same plant makes the next worker
    run its program instead, so the attack is real and the read-only folder is what stops
    it."""
    column_totals_in(folder, writes=True)  # the reference run
    planted = ran(folder, "from pathlib import Path\n" + PLANTS,
                  REPORT.format(report="written"))
    assert planted == ["through JAX's cache"]  # the worker's own cache, no one else's
    assert column_totals_in(folder)["y"] == RIGHT

    ran(folder, "from pathlib import Path\n" + PLANTS, writes=True)
    assert column_totals_in(folder)["y"] == [7.0 * 8] * 4


# A submission that finds the batch's folder, lists it and reads every file, and looks for
# the reference's program in it: its function's name, in the file as stored and once
# decompressed as JAX stores entries; and opens every entry with every key it knows (those of
# the programs it compiled itself). Reports what it saw.
ENUMERATES = """
import os, zlib
from jax._src import compilation_cache
from grader.workers import compiled

folder = [line.split()[4] for line in open("/proc/self/mountinfo") if "grader-compiled-" in line][0]
own = jax.config.jax_compilation_cache_dir
keys = [n[:-len("-cache")] for n in os.listdir(own) if n.endswith("-cache")]
seen = {"listed": 0, "named": 0, "decompressed": 0, "opened": []}
for name in os.listdir(folder):
    data = open(os.path.join(folder, name), "rb").read()
    seen["listed"] += 1
    seen["named"] += b"secret_reference" in data
    try:
        seen["named"] += b"secret_reference" in compilation_cache.decompress_executable(data)
        seen["decompressed"] += 1
    except Exception:
        pass
    seen["opened"] += [key.split("-")[0] for key in keys if compiled.unseal(key, data)]
"""

#: The reference's program: its entry, once opened and decompressed, names it.
SECRET = PROGRAM + """
import os
from jax._src import compilation_cache

def secret_reference(x):
    return column_totals(x) * 1234.5

jax.jit(column_totals)(x)
jax.jit(secret_reference)(x)
own = jax.config.jax_compilation_cache_dir
key = [n[:-len("-cache")] for n in os.listdir(own) if n.startswith("jit_secret_reference-")][0]
plain = compilation_cache.decompress_executable(compilation_cache._cache.get(key))
"""


def test_a_submission_can_neither_name_nor_open_the_reference_programs(folder):
    """A submission lists the batch's folder and reads every entry: does it find no name of
    the reference's program and open no entry but those of programs it built itself?
    Control: the reference's entry, opened with its key and decompressed, names it."""
    written = ran(folder, SECRET, REPORT.format(report='b"secret_reference" in plain'),
                  writes=True)
    assert written is True
    seen = ran(folder, PROGRAM, "jax.jit(column_totals)(x)\n" + ENUMERATES,
               REPORT.format(report="seen"))
    assert seen["named"] == 0
    assert seen["decompressed"] == 0
    assert "jit_column_totals" in seen["opened"]  # a program it built itself
    assert "jit_secret_reference" not in seen["opened"]
    assert seen["listed"] > len(seen["opened"])  # it found the folder, the secret's entry too


def test_an_entry_opens_only_with_its_key_and_a_damaged_one_is_a_miss(folder):
    """Is an entry stored under a name that is not its key, unreadable without the key, and
    a miss (not an executable) once damaged?"""
    key = "jit_column_totals-" + "ab" * 32
    value = b"jit_column_totals executable" * 10
    compiled.write(folder, key, value)
    (stored,) = folder.iterdir()
    assert key not in stored.name and b"column_totals" not in stored.read_bytes()
    assert compiled.read(folder, key) == value
    assert compiled.read(folder, key.replace("ab", "cd", 1)) is None
    assert compiled.unseal("jit_column_totals-" + "cd" * 32, stored.read_bytes()) is None
    damaged = bytearray(stored.read_bytes())
    damaged[3] ^= 1
    stored.chmod(0o644)
    stored.write_bytes(bytes(damaged))
    assert compiled.read(folder, key) is None


def test_a_folder_the_workers_cannot_reach_is_not_made(tmp_path, monkeypatch):
    """A grader started by root runs its workers as another user: with a private temporary
    folder (here 0700), is no batch folder made (the batch then shares nothing and grades as
    before), where an ordinary user's grader, whose workers are itself, gets one?"""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    made = compiled.new_folder()
    if os.geteuid() == 0:
        assert made is None
        assert list(private.iterdir()) == []
    else:
        assert made is not None and made.parent == private
