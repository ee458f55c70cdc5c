# Starts a process in a session of its own, which would escape a kill of the process group;
# the sandbox's process namespace ends it with the worker.
import subprocess
import sys

subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "orphan-marker-5b1e"],
                 start_new_session=True)
