"""Probes: counting collectives in compiled HLO, summarising programs, and array layouts.

conftest.py gives this process 8 CPU devices.
"""

from __future__ import annotations

import re
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from grader.framework import hlo, placement, plain, probes

N = 8


@pytest.fixture(scope="module")
def mesh() -> Mesh:
    assert jax.device_count() == N
    return Mesh(jax.devices(), ("data",))


def psum_of_sums(mesh):
    def fn(x):
        local = lambda block: jax.lax.psum(jnp.sum(block), "data")  # noqa: E731
        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    return fn


def shift_right(mesh):
    ring = [(i, (i + 1) % N) for i in range(N)]

    def fn(x):
        local = lambda block: jax.lax.ppermute(block, "data", ring)  # noqa: E731
        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    return fn


def only_counts(**nonzero) -> dict[str, int]:
    counts = dict.fromkeys(hlo.COLLECTIVES, 0)
    counts.update({k.replace("_", "-"): v for k, v in nonzero.items()})
    return counts


# --- hlo_collectives on compiled functions --------------------------------------------------
def test_a_psum_in_shard_map_compiles_to_one_all_reduce(mesh):
    """Does a shard_map with one psum compile to exactly one all-reduce and nothing else?"""
    found = probes.hlo_collectives(psum_of_sums(mesh), jnp.arange(16.0))
    assert found.value == only_counts(all_reduce=1)


def test_a_ppermute_compiles_to_a_collective_permute(mesh):
    """Does a ring ppermute compile to one collective-permute and no all-reduce?"""
    assert probes.hlo_collectives(shift_right(mesh), jnp.arange(16.0)).value == only_counts(
        collective_permute=1
    )


def test_an_elementwise_function_has_no_collectives():
    """Does x * 2 + 1 on one device compile to no collective at all?"""
    assert probes.hlo_collectives(lambda x: x * 2 + 1, jnp.arange(16.0)).value == only_counts()


def test_elementwise_work_on_a_sharded_input_moves_no_data(mesh):
    """Does elementwise work on a row-sharded array stay on each device (no collective)?"""
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P("data")))
    assert probes.hlo_collectives(lambda v: jnp.sin(v) * 3, x).value == only_counts()


def test_different_collectives_in_one_function_are_each_counted(mesh):
    """Are a ppermute and a psum in one function counted as one of each?"""
    ring = [(i, (i + 1) % N) for i in range(N)]

    def fn(x):
        def local(block):
            return jax.lax.psum(jnp.sum(jax.lax.ppermute(block, "data", ring) * block), "data")

        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    assert probes.hlo_collectives(fn, jnp.arange(16.0)).value == only_counts(
        all_reduce=1, collective_permute=1
    )


def test_a_named_scope_cannot_fake_an_all_reduce():
    """Is an elementwise function under a scope named 'fake all-reduce(x)' still free of
    collectives?"""

    def fn(x):
        with jax.named_scope("fake all-reduce(x)"):
            return x * 2

    assert probes.hlo_collectives(fn, jnp.arange(4.0)).value == only_counts()


# --- program_summary -----------------------------------------------------------------------
def summary(fn, *args) -> dict:
    found = probes.program_summary(fn, *args)
    return found.value if isinstance(found, plain.Verified) else found


def test_a_psum_is_found_with_its_axis_and_its_shard_map_mesh(mesh):
    """Does the summary list a psum over 'data' and a shard_map over {'data': 8}?"""
    found = summary(psum_of_sums(mesh), jnp.arange(16.0))
    assert found["collectives"] == [{"primitive": "psum", "axes": ["data"]}]
    assert found["shard_maps"] == [{"mesh": {"data": N}, "manual_axes": ["data"]}]


def test_reductions_over_positional_axes_are_not_collectives():
    """Is jnp.sum(x, axis=0) left out of the collectives, with no shard_map?"""
    found = summary(lambda x: jnp.sum(x, axis=0) + jnp.max(x), jnp.ones((4, 3)))
    assert found == {"collectives": [], "shard_maps": [], "devices": 1}


def test_a_ppermute_is_listed_with_its_axis(mesh):
    """Does a ppermute show up as a collective over 'data'?"""
    found = summary(shift_right(mesh), jnp.arange(16.0))
    assert found["collectives"] == [{"primitive": "ppermute", "axes": ["data"]}]


def grid() -> Mesh:
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)


@pytest.mark.parametrize(("axes", "want"), [("y", ["y"]), ("x", ["x"]), (("x", "y"), ["x", "y"])])
def test_the_axes_of_a_psum_on_a_grid_are_read_from_its_groups(axes, want):
    """Is a psum over y, over x, or over both on a 2x4 mesh reported over those axes?"""
    mesh = grid()
    fn = jax.shard_map(lambda b: jax.lax.psum(b, axes), mesh=mesh, in_specs=P("x", "y"),
                       out_specs=P(*(None if a in want else a for a in ("x", "y"))))
    assert summary(fn, jnp.ones((4, 8)))["collectives"] == [{"primitive": "psum", "axes": want}]


def test_each_collective_is_named_by_its_primitive(mesh):
    """Are pmax, all_gather, psum_scatter, all_to_all and axis_index named as in JAX?"""

    def local(block):
        top = jax.lax.pmax(block, "data") + jax.lax.axis_index("data")
        whole = jax.lax.all_gather(top, "data", tiled=True)
        part = jax.lax.psum_scatter(whole, "data", tiled=True)
        return jax.lax.all_to_all(part, "data", 0, 0, tiled=True)

    fn = jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P("data"),
                       check_vma=False)
    found = summary(fn, jnp.ones((8 * N,)))
    assert [c["primitive"] for c in found["collectives"]] == [
        "pmax", "axis_index", "all_gather", "reduce_scatter", "all_to_all"]
    assert all(c["axes"] == ["data"] for c in found["collectives"])


def test_a_ppermute_along_x_of_a_grid_acts_over_x():
    """Does a ppermute that swaps the two rows of a 2x4 mesh act over 'x' alone?"""
    mesh = grid()
    fn = jax.shard_map(lambda b: jax.lax.ppermute(b, "x", [(0, 1), (1, 0)]), mesh=mesh,
                       in_specs=P("x", "y"), out_specs=P("x", "y"))
    assert summary(fn, jnp.ones((4, 8)))["collectives"] == [
        {"primitive": "ppermute", "axes": ["x"]}]


def test_collectives_inside_jit_and_loops_are_found(mesh):
    """Are collectives nested in a jit and a fori_loop inside shard_map still found?"""

    def fn(x):
        def local(block):
            partial = jax.jit(jnp.sum)(block)
            body = lambda i, acc: acc + jax.lax.psum(partial, "data")  # noqa: E731
            return jax.lax.fori_loop(0, 3, body, jnp.zeros(()))

        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P())(x)

    found = summary(jax.jit(fn), jnp.arange(16.0))
    assert {"primitive": "psum", "axes": ["data"]} in found["collectives"], found
    assert [m["mesh"] for m in found["shard_maps"]] == [{"data": N}]


def test_a_pmap_psum_is_found_over_its_axis_name():
    """Does a pmap with a psum over 'devices' list that psum?"""
    doubled = jax.pmap(lambda row: jax.lax.psum(row * 2.0, "devices"), axis_name="devices")
    found = summary(doubled, jnp.ones((N, 3)))
    assert found["collectives"] == [{"primitive": "psum", "axes": ["devices"]}]


def test_a_function_without_collectives_has_none(mesh):
    """Does a shard_map that only works locally list no collective?"""

    def fn(x):
        return jax.shard_map(jnp.sin, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    found = summary(fn, jnp.arange(16.0))
    assert found["collectives"] == []
    assert len(found["shard_maps"]) == 1


def test_on_one_device_the_summary_comes_from_the_program_too():
    """Is a psum on a one-device mesh (whose program keeps no mesh and no shard_map) read
    from the program, by a verifier in a worker, as an all-reduce over no named axis on one
    device; and does a summary tell how many devices a program runs on?"""
    one = Mesh(np.array(jax.devices()[:1]), ("data",))
    fn = jax.shard_map(lambda b: jax.lax.psum(b.sum(), "data"), mesh=one, in_specs=P("data"),
                       out_specs=P())
    found = probes.program_summary(fn, jnp.arange(4.0))
    assert found == plain.Verified({"collectives": [{"primitive": "psum", "axes": []}],
                                    "shard_maps": [], "devices": 1})
    assert summary(psum_of_sums(Mesh(jax.devices(), ("data",))),
                   jnp.arange(16.0))["devices"] == 8


def test_names_the_author_chose_cannot_pose_as_collectives(mesh):
    """Do a scope and a function named like StableHLO collectives add no collective?"""

    def fn(x):
        with jax.named_scope('%0 = "stablehlo.all_reduce"(x) replica_groups = dense<[[0]]>'):
            return jax.shard_map(jnp.sin, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    fn.__name__ = "stablehlo.partition_id"
    assert summary(fn, jnp.arange(16.0))["collectives"] == []


def test_the_summary_is_plain_data(mesh):
    """Can a summary be sent as plain data and read back the same?"""
    from grader.framework import plain

    found = probes.program_summary(psum_of_sums(mesh), jnp.arange(16.0))
    back = plain.from_plain(plain.to_plain(found))
    assert back == found.value


# --- measures in a worker: programs for the verifier ---------------------------------------
def test_in_a_worker_a_measure_is_sent_as_a_program(mesh, monkeypatch):
    """In a grader worker, is a measure returned unverified, as the serialized program, and
    does the verifier measure from it what the kernel measures at once?"""
    import base64

    from grader import devices
    from grader.workers import verifier
    monkeypatch.setenv(devices.WORKER_ENV, "1")
    sent = probes.hlo_collectives(psum_of_sums(mesh), jnp.arange(16.0))
    assert isinstance(sent, plain.Unverified) and sent.measure == "hlo_collectives"
    tagged = plain.to_plain({"collectives": sent})
    with pytest.raises(plain.NotPlain, match="not verified"):
        plain.from_plain(tagged)
    blob = tagged["dict"]["collectives"]["program"]["blob"]
    reply = verifier.verify(["hlo_collectives", "summarise", "exec"], blob)
    counts, summary, unknown = reply["measured"]
    assert reply["ok"] and plain.from_plain(counts["data"]) == only_counts(all_reduce=1)
    assert summary["ok"] and unknown == {
        "ok": False, "error": {"type": "ValueError", "message": "no such measure"}}
    assert base64.b64decode(blob) == sent.program


@pytest.mark.parametrize(("measures", "blob", "error"), [
    (["hlo_collectives"], "bm90IGEgcHJvZ3JhbQ==", None),  # "not a program"
    (["hlo_collectives"], "%%% not base64", "Error"),
    ("hlo_collectives", "", "a malformed request"),  # one name, not a list
    (["hlo_collectives"], ["not", "text"], "a malformed request"),
])
def test_the_verifier_refuses_what_is_not_a_program(measures, blob, error):
    """Are bytes that are not a program, text that is not base64 and malformed requests an
    error reply, not an exception?"""
    from grader.workers import verifier

    reply = verifier.verify(measures, blob)
    assert reply["ok"] is False
    assert error is None or error in str(reply["error"])


# --- layout -------------------------------------------------------------------------------
def test_layout_of_a_row_sharded_array(mesh):
    """Is a (16, 3) array split over 8 devices seen as eight (2, 3) shards?"""
    x = jax.device_put(jnp.ones((16, 3)), NamedSharding(mesh, P("data")))
    assert placement.layout(x) == {"on_devices": N, "shard_shapes": [[2, 3]] * N}


def test_layout_of_a_replicated_array(mesh):
    """Is a replicated array a full copy on each of the 8 devices?"""
    x = jax.device_put(jnp.arange(16.0), NamedSharding(mesh, P()))
    assert placement.layout(x) == {"on_devices": N, "shard_shapes": [[16]] * N}


def test_layout_of_an_array_on_one_device():
    """Does an array on a single device have one shard of its full shape?"""
    x = jax.device_put(jnp.arange(16.0), jax.devices()[3])
    assert placement.layout(x) == {"on_devices": 1, "shard_shapes": [[16]]}


def test_layout_of_a_pmap_result_is_one_row_per_device():
    """Does a pmap result live as one row on each device?"""
    out = jax.pmap(lambda row: row + 1)(jnp.ones((N, 3)))
    assert placement.layout(out) == {"on_devices": N, "shard_shapes": [[1, 3]] * N}


def test_layout_of_something_that_is_not_a_jax_array():
    """Is a numpy array or a list said to be on no device?"""
    assert placement.layout(np.ones(4)) == {"on_devices": 0, "shard_shapes": []}
    assert placement.layout([1, 2]) == {"on_devices": 0, "shard_shapes": []}



# The same function twice, its lines in other places of other files, and one other function.
COPIES = """
import re
import types

import jax
from jax.sharding import PartitionSpec as P
def total(x, mesh):
    return jax.shard_map(lambda b: jax.lax.psum(b.sum(), "data"), mesh=mesh,
                         in_specs=P("data"), out_specs=P())(x)
def largest(x, mesh):
    return jax.shard_map(lambda b: jax.lax.pmax(b.max(), "data"), mesh=mesh,
                         in_specs=P("data"), out_specs=P())(x)
"""


def test_a_copy_of_a_program_compiled_before_is_not_compiled_again(mesh):
    """Do two copies of a function, from other lines of other files, get one executable (a
    class handing in the same code), while another function, on the same arguments, gets its
    own, and each computes its own results?"""
    programs = {}
    for copy, (file, blank) in enumerate([("/one/a.py", 0), ("/two/b.py", 5)]):
        found: dict = {}
        exec(compile("\n" * blank + COPIES, file, "exec"), found)  # noqa: S102 - our own code
        for name in ("total", "largest"):
            fn = lambda x, fn=found[name]: fn(x, mesh)  # noqa: E731
            blob = probes.Program.of(fn, jnp.arange(16.0)).serialize()
            programs[name, copy] = probes.Program.load(blob)
    assert programs["total", 0].serialize() != programs["total", 1].serialize()  # other lines
    assert programs["total", 0].executable is programs["total", 1].executable
    assert programs["largest", 0].executable is programs["largest", 1].executable
    assert programs["total", 0].executable is not programs["largest", 0].executable
    x = [jnp.arange(16.0)]
    assert [float(programs[name, 1].run(x)[0]) for name in ("total", "largest")] == [120, 15]


def bare(text: str) -> str:
    """Compiled HLO text without where its lines came from (metadata and the file tables)."""
    return re.sub(r", metadata=\{[^}]*\}", "", text.split("\n\nFileNames")[0])


def test_a_measured_program_compiles_quickly_to_the_same_program(mesh):
    """Is the executable a measure reads (compiled without LLVM's optimisation of the machine
    code, for speed) the same program as JAX's default compile gives: the same optimised HLO
    with its collectives and loops, the same buffers, the same cost, the same results?"""
    ring = [(i, (i + 1) % N) for i in range(N)]

    def ring_sums(x):
        def local(block):
            def turn(_, carry):
                total, passing = carry
                return total + jnp.tanh(passing) @ block.T, jax.lax.ppermute(passing, "data", ring)
            return jax.lax.fori_loop(0, N, turn, (jnp.zeros_like(block @ block.T), block))[0]
        return jax.shard_map(local, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)

    x = jax.device_put(jnp.linspace(-1, 1, 64 * 16).reshape(64, 16), NamedSharding(mesh, P("data")))
    program = probes.Program.of(ring_sums, x)
    quick, default = program.executable, jax.jit(program.exported.call).lower(x).compile()
    assert probes.QUICK  # else this compares the default with itself
    assert "collective-permute" in quick.as_text() and "while" in quick.as_text()
    assert bare(quick.as_text()) == bare(default.as_text())
    for field in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
        assert getattr(quick.memory_analysis(), field) == getattr(default.memory_analysis(),
                                                                  field)
    assert quick.cost_analysis() == default.cost_analysis()
    np.testing.assert_allclose(program.run([x])[0], default(x), rtol=1e-6)


def row_sums_over_y_module() -> str:
    """The StableHLO of a psum over 'y' in a shard_map over a 4 x 2 mesh, as this JAX lowers
    it (replica groups written out as device ids)."""
    mesh = jax.make_mesh((4, 2), ("x", "y"))
    f = jax.shard_map(lambda b: jax.lax.psum(b.sum(1), "y"), mesh=mesh, in_specs=P("x", "y"),
                      out_specs=P("x"))
    x = jax.device_put(jnp.ones((8, 4)), NamedSharding(mesh, P("x", "y")))
    return jax.jit(f).lower(x).as_text()


def summary_of(module: str) -> dict:
    program = types.SimpleNamespace(module=module, exported=types.SimpleNamespace(nr_devices=8))
    return probes.summarise(program)


def test_replica_groups_named_by_mesh_axes_are_read_as_the_groups_they_name():
    """JAX 0.11 lowers a shard_map's collectives with replica groups that name mesh axes
    (`#stablehlo.replica_group_mesh_axes`, JAX's own shard_map tests show the text) instead of
    device ids: is a psum over 'y' read as over 'y' from either form, the mesh cited by symbol
    or inlined, and an axis of size 1 left out as the device-id form leaves it out?"""
    module = row_sums_over_y_module()
    ids = re.search(r"replica_groups = dense<.*?> : tensor<\d+x\d+xi64>", module).group(0)
    by_axes = ('replica_groups = #stablehlo.replica_group_mesh_axes<mesh = {mesh}, axes = '
               '[#stablehlo.axis_ref<name = "{axis}">]>')
    assert summary_of(module)["collectives"] == [{"primitive": "psum", "axes": ["y"]}]
    for mesh, axis, read in [("@mesh", "y", ["y"]), ("@mesh", "x", ["x"]),
                             ('#sdy.mesh<["x"=4, "y"=2]>', "y", ["y"]),
                             ('#sdy.mesh<["x"=8, "y"=1]>', "y", [])]:
        rewritten = module.replace(ids, by_axes.format(mesh=mesh, axis=axis))
        assert summary_of(rewritten)["collectives"] == [{"primitive": "psum", "axes": read}]


def test_a_string_cannot_pass_for_replica_groups_named_by_mesh_axes():
    """An attribute string that spells the mesh-axes form on a psum over 'y' (written out as
    device ids) does not change what is read: the form is looked for with strings blanked."""
    module = row_sums_over_y_module()
    forged = ('mhlo.frontend_attributes = {note = "replica_groups = #stablehlo.replica_group_'
              'mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = \\"x\\">]>"}, ')
    module = module.replace("use_global_device_ids}>", forged + "use_global_device_ids}>", 1)
    assert "replica_group_mesh_axes" in module
    assert summary_of(module)["collectives"] == [{"primitive": "psum", "axes": ["y"]}]


def test_a_string_before_real_mesh_axes_groups_is_not_read_for_them():
    """A psum over 'y' in the mesh-axes form, with an attribute string before it that spells
    the same form over 'x': is 'y' read, from where the blanked line shows the groups?"""
    module = row_sums_over_y_module()
    ids = re.search(r"replica_groups = dense<.*?> : tensor<\d+x\d+xi64>", module).group(0)
    forged = ('mhlo.frontend_attributes = {note = "replica_groups = #stablehlo.replica_group_'
              'mesh_axes<mesh = @mesh, axes = [#stablehlo.axis_ref<name = \\"x\\">]>"}, ')
    real = ('replica_groups = #stablehlo.replica_group_mesh_axes<mesh = @mesh, axes = '
            '[#stablehlo.axis_ref<name = "y">]>')
    module = module.replace("channel_handle", forged + "channel_handle", 1).replace(ids, real)
    assert summary_of(module)["collectives"] == [{"primitive": "psum", "axes": ["y"]}]
