# The worker is sent the hidden test modules as text, so code running there can read them.
# Each call of ring_shift raises an error whose message is the next 700 characters of those
# modules, hoping that the feedback of each hidden test copies its message whole: from enough
# tests, the hidden tests could be rebuilt. Feedback must show at most a short excerpt.
from grader.workers.record import RECORD

text = "".join(RECORD.tests.values())
calls = []


def ring_shift(x):
    start = 700 * len(calls) % max(len(text), 1)
    calls.append(start)
    raise ValueError(text[start:start + 700] or "no hidden test was found")
