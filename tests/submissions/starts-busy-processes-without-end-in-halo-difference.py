"""halo_difference starts as many processes as it can, up to 2000 (more than a worker may run),
sets every one of them spinning on the CPU and waits forever. Were nothing capped it would
start them all and return a wrong answer at once (a failure, not a time-out); capped, it runs
out of processes, and the ones it has spin until the exercise's time is up. The other
exercises of this submission, and every submission graded beside it, must be graded as if
it were not there."""
import os
import time

SPIN = "trap 'while :; do :; done' USR1; sleep 100000 & wait"


def halo_difference(x):
    children = []
    while len(children) < 2000:
        try:
            children.append(os.posix_spawn("/bin/sh", ["sh", "-c", SPIN], {}))
        except OSError:  # the cap
            break
    if len(children) >= 2000:
        return x  # nothing capped it: a wrong answer
    time.sleep(1)  # every shell has set its trap
    for pid in children:
        os.kill(pid, 10)  # SIGUSR1: spin
    while True:
        time.sleep(1)
