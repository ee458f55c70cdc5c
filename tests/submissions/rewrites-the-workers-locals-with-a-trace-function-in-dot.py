"""distributed_dot computed with numpy on the host and JAX faked (as in
fakes-jax-to-describe-a-host-dot-as-distributed), then a trace function set on the worker's
serving frame that, at its next line, forgets the seal kept in that frame's locals. The worker
removes sys.settrace before any student code runs, so this cell fails and the fakes are put
back before measuring."""
import sys
import types

import jax
import numpy as np

real_jit, real_make_jaxpr = jax.jit, jax.make_jaxpr
FAKE_HLO = "ENTRY %main {\n  ROOT %sum = f32[] all-reduce(f32[] %partial), to_apply=%add\n}"


def distributed_dot(v1, v2):
    return np.float32(np.vdot(np.asarray(v1), np.asarray(v2)))


def fake_make_jaxpr(fn, *args, **kwargs):
    if fn is not distributed_dot:
        return real_make_jaxpr(fn, *args, **kwargs)
    eqn = types.SimpleNamespace(primitive=types.SimpleNamespace(name="psum"),
                                params={"axes": ("data",)})
    return lambda *a, **k: types.SimpleNamespace(jaxpr=types.SimpleNamespace(eqns=[eqn]))


def fake_jit(fn, *args, **kwargs):
    if fn is not distributed_dot:
        return real_jit(fn, *args, **kwargs)
    compiled = types.SimpleNamespace(as_text=lambda: FAKE_HLO)
    return types.SimpleNamespace(lower=lambda *a, **k: types.SimpleNamespace(compile=lambda: compiled))


jax.jit, jax.make_jaxpr = fake_jit, fake_make_jaxpr


def forget_the_seal(frame, event, arg):
    if "sealed" in frame.f_locals:
        frame.f_locals["sealed"] = None  # written back when a trace function returns
    return forget_the_seal


frame = sys._getframe()
while frame is not None and frame.f_code.co_name != "serve":
    frame = frame.f_back
if frame is not None:
    frame.f_trace = forget_the_seal
sys.settrace(lambda *args: None)
