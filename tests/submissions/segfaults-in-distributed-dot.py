import ctypes


def distributed_dot(v1, v2):
    return ctypes.string_at(0)
