def ring_shift(x):
    hoard = []
    while True:
        hoard.append(bytearray(256 * 2**20))
