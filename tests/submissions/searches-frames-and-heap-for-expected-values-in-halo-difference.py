# Looks for the expected result of halo_difference where a careless grader would keep it: in the
# frames that call it (the probe, the worker) and among every array on the heap, any array of
# the input's shape that is not the input. The grader judges in its own process and the
# expected values never reach the worker, so what it finds is not the answer: it returns the
# first candidate (or its input) and loses the exercise.
import gc
import sys

import jax
import numpy as np


def halo_difference(x):
    mine = np.asarray(x)
    seen = []
    frame = sys._getframe(1)
    while frame is not None:
        seen += list(frame.f_locals.values())
        frame = frame.f_back
    seen += gc.get_objects()
    for value in seen:
        if not isinstance(value, (np.ndarray, jax.Array)) or value is x:
            continue
        try:
            if value.shape == mine.shape and not np.array_equal(np.asarray(value), mine):
                return value
        except Exception:  # deleted buffers, odd dtypes: keep looking
            continue
    return x
