"""Replies written in the worker's place (the request id found in the worker's frame), each a
valid reply of one value: a text of nearly 4 MiB, under the limit on one reply's bytes and
far under its limit on values. Every test of these five exercises gets one, and a run keeps
its replies until its student is judged: over the whole course, a few gigabytes in the
grader's own process. Each exercise fails; the grader stays small."""
import sys

TEXT = "x" * (4 * 2**20 - 200)


def answer_for_the_worker():
    frame = sys._getframe()
    while frame is not None and frame.f_code.co_name != "serve":
        frame = frame.f_back
    if frame is not None:
        write, flush = frame.f_locals["write"], frame.f_locals["flush"]
        write('{"req": "%s", "ok": true, "data": {"result": "%s"}}\n'
              % (frame.f_locals["req"], TEXT))
        flush()


def nan_mean_var(*args):
    answer_for_the_worker()


def fixed_pmap_port(*args):
    answer_for_the_worker()


def distributed_dot(*args):
    answer_for_the_worker()


def pmean_update_step(*args):
    answer_for_the_worker()


def halo_difference(*args):
    answer_for_the_worker()
