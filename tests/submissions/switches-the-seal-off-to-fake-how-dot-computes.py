"""distributed_dot computed with numpy on the host, with JAX told to describe it as a
shard_map with an all-reduce (as in fakes-jax-to-describe-a-host-dot-as-distributed), and every
way around the seal a few lines of Python allow: the seal's restore turned into a no-op (on the
class, and by swapping its code and its module's globals), the worker's export of a program
wrapped so that it fakes JAX again after the seal ran (on the class, in the worker's table of
requests, and on the worker object found with gc), and the grader's table of collectives
rewritten. None of it may earn the marks for how the dot is computed."""
import gc
import re
import types

import jax
import numpy as np

import grader.framework.hlo
import grader.workers.seal
import grader.workers.worker

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


def fake_everything():
    jax.jit, jax.make_jaxpr = fake_jit, fake_make_jaxpr


def nothing_changed(*args, **kwargs):
    return []


real_export = grader.workers.worker.Worker.export


def export_after_faking(self, *args, **kwargs):
    fake_everything()
    return real_export(self, *args, **kwargs)


fake_everything()
grader.workers.seal.Seal.restore = nothing_changed
grader.workers.seal.restore.__code__ = nothing_changed.__code__
grader.workers.seal.types = types.SimpleNamespace(ModuleType=object, MappingProxyType=object)
grader.workers.worker.Worker.export = export_after_faking
grader.workers.worker.SEALED["export"] = export_after_faking
for worker in [o for o in gc.get_objects() if isinstance(o, grader.workers.worker.Worker)]:
    worker.export = types.MethodType(export_after_faking, worker)  # shadows the class's method
grader.framework.hlo._OPCODE = re.compile(r"(all-reduce)()")
