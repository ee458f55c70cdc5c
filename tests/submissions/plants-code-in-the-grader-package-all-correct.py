# Tries to plant a module in the grader's package and among its public tests, which the trusted
# grader imports: run as root without a sandbox, it could. Any file planted makes halo_difference
# wrong, so that the test sees it in the points as well as on disk. (Not in grader/hidden/:
# in the sandbox that folder is an empty one of the worker's own, where writing is harmless.)
from pathlib import Path

import grader

package = Path(grader.__file__).parent
planted = []
for folder in (package, package / "public"):
    try:
        (folder / "zz_planted_by_a_submission.py").write_text("raise SystemExit('planted')\n")
        planted.append(str(folder))
    except OSError:
        pass
if planted:
    print("planted in", planted)

    def halo_difference(x):
        return x
