"""The batch's compiled programs: XLA executables the reference run compiled, which every
worker of the batch reads instead of compiling the same program again.

A class hands in many programs that are the reference's own (the same operations on the same
shapes, whatever the names), and every test builds its inputs with the same programs. JAX's
persistent compilation cache could share them, but a cached executable is code: whoever
writes an entry runs code in whoever reads it, and entries name and hold the programs they
come from. So:

- **Only the reference run writes** (it runs the course's solutions, nothing of a
  submission); a submission's worker sees the folder read-only, and what JAX asks it to keep
  goes to the worker's own cache, which no other worker reads.
- **A worker reads an entry only by the key of a program it built itself.** An entry is
  stored under a hash of its key, encrypted with a pad drawn from the key (convergent
  encryption): listing the folder and reading every file yields names and noise. The key is
  JAX's, a SHA-256 of the program's operations (not its source lines), its compile options
  and devices: to read the reference's entry, a worker must already hold the same program.
- Each entry carries a check drawn from its key, so that a damaged file is a miss, never an
  executable.

Installed by the worker (:func:`install`) before any code of a submission runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

#: Where the worker finds the folder, and whether it writes there (the reference run only).
FOLDER_ENV = "GRADER_COMPILED"
WRITES_ENV = "GRADER_COMPILED_WRITES"
_CHECK = 16  # bytes of each entry's check


def new_folder() -> Path | None:
    """A folder for a batch's compiled programs, in the temporary folder, that every worker's
    user may read (each entry is sealed: reading the folder tells nothing without a program's
    key); None where that user could not reach it (a grader started by root, whose workers
    run as another user, with a private TMPDIR): then the batch shares nothing."""
    folder = Path(tempfile.mkdtemp(prefix="grader-compiled-"))
    folder.chmod(0o755)
    if not reachable(folder):
        folder.rmdir()
        return None
    return folder


def reachable(folder: Path) -> bool:
    """Whether the workers' user can reach ``folder``: a grader started by root runs them as
    another user (grader.workers.sandbox.worker_user), who must be let through every folder
    above it."""
    return os.geteuid() != 0 or all(p.stat().st_mode & 0o001 for p in folder.parents)


def written(folder: Path) -> None:
    """The reference run is done: nothing writes ``folder`` or its entries from now on,
    whoever they belonged to while the reference's workers wrote them (see
    grader.workers.sandbox)."""
    for entry in folder.iterdir():
        if os.geteuid() == 0:
            os.chown(entry, 0, 0, follow_symlinks=False)
        if not entry.is_symlink():
            entry.chmod(0o444)
    if os.geteuid() == 0:
        os.chown(folder, 0, 0)
    folder.chmod(0o555)


def remove(folder: Path) -> None:
    """Remove a batch's folder, or a tree of them (grader.grading.reference_cache's entries),
    which :func:`written` left read-only."""
    for path in (folder, *folder.rglob("*")):
        try:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        except OSError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


def name(key: str) -> str:
    """The file an entry of ``key`` is stored in: it names neither the key nor the program."""
    return hashlib.sha256(b"name\0" + key.encode()).hexdigest()


def _pad(key: str, size: int) -> bytes:
    return hashlib.shake_256(b"pad\0" + key.encode()).digest(size)


def _check(key: str) -> bytes:
    return hashlib.sha256(b"check\0" + key.encode()).digest()[:_CHECK]


def _xor(data: bytes, pad: bytes) -> bytes:
    return (int.from_bytes(data, "little") ^ int.from_bytes(pad, "little")).to_bytes(
        len(data), "little")


def seal(key: str, value: bytes) -> bytes:
    """``value`` as stored for ``key``: readable only with ``key``."""
    plain = _check(key) + value
    return _xor(plain, _pad(key, len(plain)))


def unseal(key: str, stored: bytes) -> bytes | None:
    """The value :func:`seal` stored for ``key``, or None when ``stored`` is not that."""
    plain = _xor(stored, _pad(key, len(stored)))
    return plain[_CHECK:] if plain[:_CHECK] == _check(key) else None


def write(folder: Path, key: str, value: bytes) -> None:
    """Store ``value`` for ``key`` in ``folder``, whole or not at all (two reference workers
    may write at once)."""
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".writing-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(seal(key, value))
        os.chmod(temporary, 0o444)
        os.replace(temporary, folder / name(key))
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read(folder: Path, key: str) -> bytes | None:
    """The value stored for ``key`` in ``folder``, or None."""
    try:
        stored = (folder / name(key)).read_bytes()
    except OSError:
        return None
    return unseal(key, stored)


def layered(own, folder: Path, writes: bool):
    """A cache for JAX: the worker's ``own`` first, then the batch's ``folder``; what JAX
    keeps goes to ``own``, and to ``folder`` too where the worker ``writes`` it."""
    from jax._src.compilation_cache_interface import CacheInterface

    class Layered(CacheInterface):
        _path = own._path

        def get(self, key: str) -> bytes | None:
            found = own.get(key)
            if found is None:
                found = read(folder, key)
                if found is not None:
                    own.put(key, found)  # read and opened once
            return found

        def put(self, key: str, value: bytes) -> None:
            own.put(key, value)
            if writes:
                write(folder, key, value)

        def clear(self) -> None:
            own.clear()

    return Layered()


def install() -> None:
    """Read the batch's compiled programs in this worker, tester or verifier, as its
    environment says, and take that and JAX's cache settings out of the environment:
    processes it starts get none of them. JAX's own cache must be configured already (the
    process's, in its home)."""
    folder = os.environ.pop(FOLDER_ENV, None)
    writes = os.environ.pop(WRITES_ENV, None) == "1"
    if folder:
        try:  # JAX's internals: should a release change them, the process compiles as before
            from jax._src import compilation_cache

            compilation_cache._initialize_cache()
            if compilation_cache._cache is not None:
                compilation_cache._cache = layered(compilation_cache._cache, Path(folder),
                                                   writes)
        except (ImportError, AttributeError, TypeError):
            pass
    for name in [n for n in os.environ if n.startswith(("JAX_COMPILATION_CACHE_",
                                                         "JAX_PERSISTENT_CACHE_"))]:
        del os.environ[name]  # JAX has read its cache's settings

