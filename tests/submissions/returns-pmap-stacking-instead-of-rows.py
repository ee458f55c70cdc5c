import jax


def fixed_pmap_port(x, w):
    h = x @ w  # right numbers, but stacked one slice per device as pmap returns them
    return (h - h.mean(axis=0)).reshape(jax.device_count(), -1, w.shape[1])
