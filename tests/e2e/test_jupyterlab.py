"""The course used as a learner uses it: JupyterLab in a real browser (Chromium, headless),
cells run with Shift+Enter, answers typed into the editor, feedback read off the page.

Screenshots of every stage are saved under ``build/e2e/``.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from servers import alive

ROOT = Path(__file__).resolve().parents[2]

CELL_TIMEOUT = 120_000  # ms: the first cells start JAX, and CI machines are slow

CORRECT = '''def is_congruent(x_shape, sharding_shape):
    """True if x_shape has one dimension per entry of sharding_shape, each a multiple of it."""
    if len(x_shape) != len(sharding_shape):
        return False
    return all(size % blocks == 0 for size, blocks in zip(x_shape, sharding_shape))
'''
#: zip stops at the shorter shape, so (8,) looks congruent with (4, 2): the hint says so.
FORGETS_THE_LENGTHS = '''def is_congruent(x_shape, sharding_shape):
    return all(size % blocks == 0 for size, blocks in zip(x_shape, sharding_shape))
'''


class Notebook:
    """A notebook open in JupyterLab, driven through its user interface."""

    def __init__(self, page, lab, path: str):
        from playwright.sync_api import expect

        self.page = page
        self.expect = expect
        page.goto(lab.open(path))
        expect(page.locator(".lm-TabBar-tab.lm-mod-current", has_text=path)).to_be_visible()
        self.panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        self.cells = self.panel.locator(".jp-Notebook .jp-Cell")
        expect(self.cells.first).to_be_visible()
        # The kernel named in the notebook has started and waits for work.
        expect(page.get_by_text(re.compile(r"Python 3 \(ipykernel\) \| Idle"))).to_be_visible(
            timeout=CELL_TIMEOUT)

    def cell(self, source: str):
        """The one cell whose code contains ``source``."""
        found = self.cells.filter(has=self.page.locator(".cm-content", has_text=source))
        self.expect(found).to_have_count(1)
        return found

    def run(self, cell) -> None:
        """Select the cell, press Shift+Enter, wait until its execution count is new."""
        prompt = cell.locator(".jp-InputPrompt")
        before = prompt.inner_text()
        prompt.click()
        self.page.keyboard.press("Shift+Enter")
        self.expect(prompt).not_to_have_text(before, timeout=CELL_TIMEOUT)
        self.expect(prompt).to_have_text(re.compile(r"^\[\d+\]:$"), timeout=CELL_TIMEOUT)

    def run_all_code_cells(self) -> None:
        code = self.panel.locator(".jp-Notebook .jp-CodeCell")
        for i in range(code.count()):
            self.run(code.nth(i))

    def type_code(self, cell, code: str) -> None:
        """Replace the cell's code, as a learner pasting an answer into the editor."""
        cell.locator(".cm-content").click()
        self.page.keyboard.press("Control+a")
        self.page.keyboard.insert_text(code)
        self.expect(cell.locator(".cm-content")).to_contain_text(code.splitlines()[-1].strip())

    def errors(self):
        """Every traceback shown in the notebook."""
        return self.panel.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")

    def screenshot(self, cell, path) -> None:
        """The page, scrolled so that ``cell`` is at the top."""
        cell.evaluate("cell => cell.scrollIntoView({block: 'start'})")
        self.page.screenshot(path=path)


def test_a_learner_runs_the_first_exercises_and_checks_a_right_then_a_wrong_answer(
        page, lab, artefacts):
    """Does exercises/01_sharding.ipynb run in JupyterLab, and does check() show 'passed' for
    a right answer, then 'failed' with yours, expected and the hint for a wrong one?"""
    from playwright.sync_api import expect

    from grader import messages as msg
    from grader.hints import sharding

    nb = Notebook(page, lab, lab.copy(ROOT / "exercises" / "01_sharding.ipynb"))
    nb.run_all_code_cells()
    expect(nb.errors()).to_have_count(0)
    expect(nb.cell("print(f\"{jax.device_count()} devices").locator(".jp-OutputArea-output")
           ).to_contain_text("8 devices")
    stub, check = nb.cell("def is_congruent"), nb.cell("check(is_congruent)")
    feedback = check.locator(".jp-OutputArea-output .grader-result")
    expect(feedback).to_have_attribute("data-status", msg.NOT_ATTEMPTED)
    nb.screenshot(stub, artefacts / "01_exercises_run.png")

    nb.type_code(stub, CORRECT)
    nb.run(stub)
    nb.run(check)
    expect(feedback).to_have_attribute("data-status", msg.PASSED)
    expect(feedback).to_contain_text("is_congruent: passed (1 of 1 public tests pass, on 8 "
                                     "devices)")
    nb.screenshot(stub, artefacts / "01_check_passed.png")

    nb.type_code(stub, FORGETS_THE_LENGTHS)
    nb.run(stub)
    nb.run(check)
    expect(feedback).to_have_attribute("data-status", msg.FAILED)
    expect(feedback).to_contain_text("is_congruent: failed (0 of 1 public tests pass, on 8 "
                                     "devices)")
    expect(feedback.locator("td code").first).to_have_text("[True, False, True, True, False, True]")
    expect(feedback.locator("td code").nth(1)).to_have_text(
        "[True, False, False, True, False, True]")
    expect(feedback).to_contain_text(f"Hint: {sharding.HINT_CONGRUENT_LENGTH}")
    expect(nb.errors()).to_have_count(0)
    nb.screenshot(stub, artefacts / "01_check_failed.png")


def test_a_notebook_opened_in_a_student_bundle_is_not_shown_as_changed(page, lab):
    """JupyterLab shows a notebook as changed once its kernel starts, unless the language
    details stored in it are the kernel's own: is a course notebook as stored (which names
    Python only) shown changed, and the same notebook after the bundle's `make lab` wrote the
    kernel's details in (grader.lab's match_kernel) not?"""
    from playwright.sync_api import expect

    from grader.lab import match_kernel

    tab = page.locator("li[data-type=document-title].lm-mod-current")
    dirty = re.compile(r"\bjp-mod-dirty\b")
    for name, matched in (("as_stored", False), ("matched", True)):
        bundle = lab.root / f"bundle_{name}"
        (bundle / "exercises").mkdir(parents=True)
        shutil.copy(ROOT / "exercises" / "04_prng.ipynb", bundle / "exercises" / f"{name}.ipynb")
        if matched:
            assert match_kernel(bundle) == [bundle / "exercises" / f"{name}.ipynb"]
            assert match_kernel(bundle) == []  # once is enough
        shutil.copy(bundle / "exercises" / f"{name}.ipynb", lab.root)  # a tab shows the name
        Notebook(page, lab, f"{name}.ipynb")
        if not matched:
            expect(tab).to_have_class(dirty)
        else:
            time.sleep(5)  # longer than the stored one took to be marked
            expect(tab).not_to_have_class(dirty)


def shown_png(image) -> bytes:
    """The bytes of the picture an <img> shows (ipywidgets gives it a blob: address)."""
    return bytes(image.evaluate(
        "async img => Array.from(new Uint8Array(await (await fetch(img.src)).arrayBuffer()))"))


EXPLORER_CELLS = [
    "from grader.lessons.explorer import collective_stepper, layout_explorer",
    "layout_explorer((8, 6), {'x': 4, 'y': 2}, ('x', 'y'))",
    "collective_stepper('psum', 4)",
]


@pytest.fixture
def explorer_notebook(lab) -> str:
    """A notebook showing the two explorers, as a lesson would."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in EXPLORER_CELLS],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}},
    )
    nbformat.write(nb, lab.root / "explorer.ipynb")
    return "explorer.ipynb"


def test_moving_a_control_of_the_explorers_changes_the_drawing(
        page, lab, artefacts, explorer_notebook):
    """Does the layout explorer redraw when a spec entry changes, explain an invalid shape in
    words, and does the collective stepper draw the next step when 'next' is pressed?"""
    from playwright.sync_api import expect

    from grader.lessons import texts
    from grader.lessons.collective_drawing import collective_figure
    from grader.lessons.drawing import LayoutError, blocks, layout_figure
    from grader.lessons.explorer import figure_png

    mesh = {"x": 4, "y": 2}
    nb = Notebook(page, lab, explorer_notebook)
    nb.run_all_code_cells()
    expect(nb.errors()).to_have_count(0)

    explorer = nb.cell("layout_explorer(")
    drawing = explorer.locator("img.widget-image")
    expect(drawing).to_be_visible()
    expect(explorer).to_contain_text("NamedSharding(mesh, P('x', 'y'))")
    expect(explorer.locator(".explorer-shards")).to_contain_text("no copies")
    assert shown_png(drawing) == figure_png(layout_figure((8, 6), mesh, ("x", "y")))
    first = drawing.get_attribute("src")
    nb.screenshot(explorer, artefacts / "explorer_start.png")

    explorer.locator(".widget-dropdown", has_text="dim 1").locator("select").select_option(
        label="None")
    expect(explorer).to_contain_text("NamedSharding(mesh, P('x', None))")
    expect(drawing).not_to_have_attribute("src", first)
    assert shown_png(drawing) == figure_png(layout_figure((8, 6), mesh, ("x", None)))
    expect(explorer.locator(".explorer-shards")).to_contain_text("2 copies of each block")
    nb.screenshot(explorer, artefacts / "explorer_replicated.png")

    with pytest.raises(LayoutError) as invalid:
        blocks((6, 6), mesh, ("x", None))
    shape = explorer.locator(".widget-text", has_text="array shape").locator("input")
    shape.fill("6, 6")
    shape.press("Enter")
    expect(explorer.locator(".explorer-error")).to_have_text(
        texts.EXPLORER_CANNOT.format(why=invalid.value))
    expect(drawing).to_be_hidden()
    nb.screenshot(explorer, artefacts / "explorer_invalid.png")

    stepper = nb.cell("collective_stepper(")
    step = stepper.locator("img.widget-image")
    expect(stepper).to_contain_text("psum on 4 devices: step 1 of")
    before = step.get_attribute("src")
    stepper.get_by_role("button", name="next ▶").click()
    expect(stepper).to_contain_text("psum on 4 devices: step 2 of")
    expect(step).not_to_have_attribute("src", before)
    assert shown_png(step) == figure_png(collective_figure("psum", 4, step=1))
    nb.screenshot(stepper, artefacts / "stepper_step2.png")


def test_a_lesson_shows_its_figures_and_its_widget_redraws(page, lab, artefacts):
    """Does lesson 8, opened as it is stored, show the schedule its cells drew; and run up to
    its bubble explorer, does typing another number of microbatches redraw the schedule, with
    its bubble in the caption?"""
    from playwright.sync_api import expect

    from grader.lessons.explorer import figure_png
    from grader.lessons.schedule_drawing import gpipe_forward, schedule_figure

    nb = Notebook(page, lab, lab.copy(ROOT / "notebooks" / "08_pipeline.ipynb"))
    stored = nb.cell("schedule_figure(forward, n)").locator(".jp-OutputArea-output img")
    expect(stored).to_be_visible()
    assert stored.evaluate("img => img.complete && img.naturalWidth") > 100  # decoded, drawn
    # Run as a learner who cleared the outputs: each cell's count then shows it ran.
    lesson = nbformat.read(ROOT / "notebooks" / "08_pipeline.ipynb", as_version=4)
    for cell in lesson.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(lesson, lab.root / "08_pipeline_cleared.ipynb")
    nb = Notebook(page, lab, "08_pipeline_cleared.ipynb")
    code = nb.panel.locator(".jp-Notebook .jp-CodeCell")
    for i in range(code.count()):
        nb.run(code.nth(i))
        if "bubble_explorer(n, 4)" in code.nth(i).locator(".cm-content").inner_text():
            break
    expect(nb.errors()).to_have_count(0)
    explorer = nb.cell("bubble_explorer(n, 4)")
    drawing = explorer.locator("img.widget-image")
    expect(drawing).to_be_visible()
    expect(explorer).to_contain_text("GPipe forward, 8 stages x 4 microbatches: 11 ticks")
    first = drawing.get_attribute("src")
    readout = explorer.locator(".widget-slider", has_text="microbatches").locator(
        ".widget-readout")
    readout.click()
    page.keyboard.press("Control+a")
    page.keyboard.type("16")
    page.keyboard.press("Enter")
    expect(explorer).to_contain_text("8 stages x 16 microbatches: 23 ticks, bubble 30.4%")
    expect(drawing).not_to_have_attribute("src", first)
    assert shown_png(drawing) == figure_png(schedule_figure(
        {"GPipe forward, 16 microbatches": gpipe_forward(8, 16)}, 8))
    nb.screenshot(explorer, artefacts / "bubble_explorer_16.png")


#: A stand-in for a test process: it starts JupyterLab as the fixture does, starts a kernel in
#: it, prints their process ids, and waits to be killed.
HOLDS_A_LAB = """\
import json, sys, time, urllib.request
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent)]
import conftest, servers
root, home = Path(sys.argv[2], "root"), Path(sys.argv[2], "home")
root.mkdir(); home.mkdir()
server, lab = conftest.start_lab(root, home, open(Path(sys.argv[2], "lab.log"), "w"))
servers.wait_until_up(server, lab.url, lab.token, Path(sys.argv[2], "lab.log"))
request = urllib.request.Request(f"{lab.url}/api/kernels", data=b"{}", method="POST",
                                 headers={"Authorization": f"token {lab.token}"})
kernel = json.load(urllib.request.urlopen(request, timeout=60))["id"]
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    kernels = [p for p in servers.descendants(server.pid)
               if kernel in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    if kernels:
        break
    time.sleep(0.2)
print(server.pid, *kernels, flush=True)
time.sleep(600)
"""


def test_jupyterlab_and_its_kernels_end_when_the_test_process_is_killed(tmp_path):
    """If the process that started JupyterLab is killed outright (SIGKILL: no teardown, no
    atexit), do the server and its kernel end too, instead of running on as orphans?"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    pids: list[int] = []
    with subprocess.Popen(
        [sys.executable, "-c", HOLDS_A_LAB, str(Path(__file__).parent), str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    ) as holder:
        try:
            line = holder.stdout.readline()
            pids = [int(p) for p in line.split()]
            assert len(pids) == 2, f"no server and kernel in {line!r}: see {tmp_path}/lab.log"
            assert all(alive(p) for p in pids)
            holder.kill()
            holder.wait()
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(alive(p) for p in pids):
                time.sleep(0.2)
            assert [p for p in pids if alive(p)] == []
        finally:
            holder.kill()
            for pid in pids:  # never leave an orphan behind, even when the test fails
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
