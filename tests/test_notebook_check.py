"""`python -m grader.notebook_check` (`make check` in a student bundle): a notebook's cells run
in order, a failing cell is named and skipped, then the public tests of each exercise."""

from __future__ import annotations

import json
import shutil

from grader import messages as msg
from grader import notebook_check
from grader.course import EXERCISE_NOTEBOOKS, ROOT

HALO_DIFFERENCE = '''def halo_difference(x):
    n = jax.device_count()
    mesh = Mesh(jax.devices(), ("data",))
    forwards = [(i, (i + 1) % n) for i in range(n)]
    backwards = [(i, (i - 1) % n) for i in range(n)]

    def difference(b):
        before = jax.lax.ppermute(b[-1:], "data", forwards)
        after = jax.lax.ppermute(b[:1], "data", backwards)
        return (jnp.concatenate([b[1:], after]) - jnp.concatenate([before, b[:-1]])) / 2

    return jax.shard_map(difference, mesh=mesh, in_specs=P("data"), out_specs=P("data"))(x)
'''


def test_a_students_notebook_is_checked_exercise_by_exercise(tmp_path):
    """One exercise solved, a cell that raises, the rest untouched: is the solved one passed,
    the cell named, the others not attempted, and the count right?"""
    notebook = json.loads((EXERCISE_NOTEBOOKS / "03_collectives.ipynb").read_text())
    cells = notebook["cells"]
    (ring,) = [c for c in cells if "".join(c["source"]).startswith("def halo_difference")]
    ring["source"] = HALO_DIFFERENCE
    cells.insert(3, {"cell_type": "code", "metadata": {}, "outputs": [],
                     "execution_count": None, "source": "print('noise'); 1 / 0"})
    path = tmp_path / "03_collectives.ipynb"
    path.write_text(json.dumps(notebook))
    lines = notebook_check.check_notebook(path)
    assert lines[0] == f"{path}:"
    code_cells = [c for c in cells if c["cell_type"] == "code"]
    number = next(i for i, c in enumerate(code_cells, 1) if "1 / 0" in c["source"])
    assert msg.CHECK_CELL_RAISED.format(
        number=number, error="ZeroDivisionError: division by zero") in lines
    assert "  halo_difference: passed (2 of 2 public tests pass, on 8 and 2 devices)" in lines
    assert "  row_group_sums: not attempted (0 of 3 public tests pass)" in lines
    assert lines[-1] == msg.CHECK_SUMMARY.format(passed=1, total=11)
    assert not any("noise" in line for line in lines)


def test_what_is_not_an_exercise_notebook_is_one_line_and_exits_2(tmp_path, capsys):
    """Is a notebook that cannot be checked one line, the others still checked, and the exit
    status 2 (`make check NOTEBOOK=missing.ipynb` exited 0)?"""
    shutil.copy(ROOT / "README.md", tmp_path / "notes.ipynb")
    broken = tmp_path / "03_collectives.ipynb"
    broken.write_text("{ not json")
    missing = tmp_path / "04_prng.ipynb"
    assert notebook_check.main([str(tmp_path / "notes.ipynb"), str(broken), str(missing),
                                str(tmp_path / "missing.ipynb")]) == 2
    out = capsys.readouterr().out.splitlines()
    assert out[0] == msg.CHECK_NOT_A_LESSON.format(path=tmp_path / "notes.ipynb")
    assert out[1].startswith(f"{broken}: cannot be read as a notebook")
    assert out[2].startswith(f"{missing}: cannot be read as a notebook")
    assert out[3] == msg.CHECK_NOT_A_LESSON.format(path=tmp_path / "missing.ipynb")
    assert notebook_check.main([]) == 2


def test_a_function_right_on_8_devices_only_fails_as_the_grader_fails_it(tmp_path):
    """Is each exercise also checked on the grader's other device count (its source sent
    from the notebook's cell), so that a dot product on a mesh of 8 devices fails?"""
    notebook = json.loads((EXERCISE_NOTEBOOKS / "03_collectives.ipynb").read_text())
    (dot,) = [c for c in notebook["cells"]
              if "".join(c["source"]).startswith("def distributed_dot")]
    dot["source"] = ("def distributed_dot(v1, v2):\n"
                     "    mesh = jax.make_mesh((8,), ('data',), axis_types=(AxisType.Auto,))\n"
                     "    local = lambda a, b: jax.lax.psum(jnp.vdot(a, b), 'data')\n"
                     "    return jax.shard_map(local, mesh=mesh, in_specs=(P('data'), P('data')),"
                     " out_specs=P())(v1, v2)\n")
    dot["source"] = "from jax.sharding import AxisType\n\n" + dot["source"]
    path = tmp_path / "03_collectives.ipynb"
    path.write_text(json.dumps(notebook))
    said = "\n".join(notebook_check.check_notebook(path))
    # counted as tests, not points (the grader's hidden tests give those), on each device count
    assert ("distributed_dot: failed (0 of 2 public tests pass on every device count: it passes "
            "on 8 devices, fails on 2)") in said
    assert "dot_of_two_small_arrays [2 devices]: error" in said
    assert "Number of devices 2 must be >= the product of mesh_shape (8,)" in said


def test_each_exercise_is_checked_once_though_its_notebook_calls_check_too(monkeypatch):
    """The exercise notebook has a `check(...)` cell under each exercise: do those wait while
    the cells run, so that each exercise's public tests run once, not twice?"""
    import sys

    checking = sys.modules["grader.check"]
    measured = []
    real = checking.measure_here

    def counted(fn, *args):
        measured.append(fn.__name__)
        return real(fn, *args)

    monkeypatch.setattr(checking, "measure_here", counted)
    path = EXERCISE_NOTEBOOKS / "03_collectives.ipynb"
    calls = [c for c in json.loads(path.read_text())["cells"]
             if "".join(c["source"]).startswith("check(")]
    lines = notebook_check.check_notebook(path)
    assert lines[-1] == msg.CHECK_SUMMARY.format(passed=0, total=11)
    assert len(calls) == 11 and sorted(measured) == sorted(set(measured)) and len(measured) == 11
