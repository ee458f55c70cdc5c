def halo_difference(x):
    raise KeyboardInterrupt
