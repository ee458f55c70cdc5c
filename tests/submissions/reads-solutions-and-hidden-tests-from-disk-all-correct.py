# Looks on disk for anything that would give the answers away: the reference solutions, the
# hidden tests, the course's git history, the example submissions, earlier output folders,
# other students' submissions, the instructor's home and /etc/shadow. In the sandbox only the
# Python environment and the grader (without its hidden tests) are there. Whatever else it
# finds makes halo_difference wrong, so a leak costs points the test sees.
import os
import subprocess
import sys
from pathlib import Path

import grader

package = Path(grader.__file__).resolve().parent
course = package.parent
environment = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), package}


def files_under(top):
    """Files below ``top``, outside the Python environment and the grader."""
    for folder, folders, files in os.walk(top):
        folders[:] = [f for f in folders if Path(folder, f).resolve() not in environment]
        yield from (os.path.join(folder, name) for name in files)


leaks = [p.name for p in (package / "hidden").glob("*.py") if p.name != "__init__.py"]
for top in (course, "/root", "/home", "/work", "/srv", "/opt", "/mnt", "/var"):
    leaks += list(files_under(top))[:3]
for secret in ("/etc/shadow", "/proc/1/root/etc/shadow"):
    try:
        open(secret, "rb").close()
        leaks.append(secret)
    except OSError:
        pass
try:
    shown = subprocess.run(["git", "-C", str(course), "show", "HEAD:solutions"],
                           capture_output=True, timeout=10)
    if shown.returncode == 0:
        leaks.append("git show HEAD:solutions")
except (OSError, subprocess.SubprocessError):
    pass

if leaks:
    print("LEAKED", leaks)

    def halo_difference(x):  # what a leak costs
        return x
