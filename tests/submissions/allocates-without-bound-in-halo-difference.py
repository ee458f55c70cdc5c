# Takes memory without end each time halo_difference is called. The worker's cap is on address
# space (RLIMIT_AS), which a hog needs whether or not it writes to what it takes; this one
# does not write, so that reaching the cap costs the test suite no time.
import numpy as np


def halo_difference(x):
    hoard = []
    while True:
        hoard.append(np.empty(256 * 2**20, np.uint8))
