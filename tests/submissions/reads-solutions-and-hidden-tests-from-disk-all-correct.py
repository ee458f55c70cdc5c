# Looks for the reference solutions and the hidden tests next to the grader's code. In the
# sandbox those folders are empty, so this finds nothing and the submission stays correct.
from pathlib import Path

import grader

root = Path(grader.__file__).resolve().parent
found = [p.name for folder in (root.parent / "solutions", root / "hidden") for p in folder.iterdir()
         if p.suffix in (".py", ".ipynb")]
if found:
    raise RuntimeError(f"LEAKED {found}")
