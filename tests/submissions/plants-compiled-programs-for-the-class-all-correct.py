# Tries to make the other workers of its batch run programs of its choosing: the programs the
# reference run compiled for the batch (grader/workers/compiled.py) are code that every worker
# runs. It finds the batch's folder (its own, or the one kept from an earlier batch,
# grader/grading/reference_cache.py), stores under the key of each program it compiled itself
# (the class compiles the same ones) the executable of another, sealed as the reference run
# seals them, and tries to overwrite, rename, open up or remove every entry it finds there.
# Any change it makes, or no folder found, makes halo_difference wrong, so that the test sees it in
# the points; the others of the batch would lose theirs too.
from pathlib import Path

import jax
import jax.numpy as jnp
from jax._src import compilation_cache
from grader.workers import compiled

jax.jit(lambda v: v * 2)(jnp.arange(8.0))
jax.jit(lambda v: v - 1)(jnp.arange(8.0))
own = Path(jax.config.jax_compilation_cache_dir)
keys = sorted(entry.name[: -len("-cache")] for entry in own.glob("*-cache"))
folders = [Path(line.split()[4]) for line in open("/proc/self/mountinfo")  # a batch's own, or
           if "grader-compiled-" in line or line.split()[4].endswith("/compiled")]  # one kept
changed = [] if folders and len(keys) > 1 else ["no folder, or too few programs, to plant in"]
for folder in folders:
    for key, other in zip(keys, keys[1:] + keys[:1]):
        try:
            compiled.write(folder, key, compilation_cache._cache.get(other))
            changed.append(key)
        except OSError:
            pass
    for entry in list(folder.iterdir()):
        for change in (lambda: entry.write_bytes(b"planted"), lambda: entry.chmod(0o666),
                       lambda: entry.rename(entry.with_name("planted")), entry.unlink):
            try:
                change()
                changed.append(entry.name)
            except OSError:
                pass
if changed:
    print("changed", changed[:5])

    def halo_difference(x):
        return x
