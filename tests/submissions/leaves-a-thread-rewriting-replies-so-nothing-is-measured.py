"""A thread that keeps replacing json.dumps (the worker's replies) by a version that turns a
failed measurement into a pass, racing the seal. While a thread the submission started still
runs nothing is measured: every exercise of the notebook fails, with the reason."""
import json
import threading
import time

real_dumps = json.dumps


def always_ok(reply, *args, **kwargs):
    if isinstance(reply, dict) and "req" in reply:
        reply = {**reply, "ok": True}
        reply.pop("error", None)
    return real_dumps(reply, *args, **kwargs)


def keep_patching():
    while True:
        json.dumps = always_ok
        time.sleep(0.0005)


threading.Thread(target=keep_patching, daemon=True).start()
