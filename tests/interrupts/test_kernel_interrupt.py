"""Kernel -> Interrupt at every phase boundary of MNIST and inference, through a real kernel.

A student runs the notebook's cells top to bottom in JupyterLab (jupyter_client here) and presses
Kernel -> Interrupt (``KernelManager.interrupt_kernel()``) when the output shows a phase boundary
(tests/interrupts/moments.py), driven by the output the kernel streams, never by sleeps. As
Run All does, the cells after the run go on unless one ends in an error. Each time the student
sees at most one line for the interrupt (no traceback), and the record cell records what was
measured: status interrupted and the phase, or, before the first measurement, no record and a
line saying nothing was measured.

    .venv/bin/python -m pytest tests/interrupts/test_kernel_interrupt.py -q
"""

from __future__ import annotations

import queue
import re
import time
from pathlib import Path
from typing import List, Tuple

import nbformat
import pytest
import yaml

from labkit import results
from tests.interrupts.moments import WALKS, Moment, described, matches, wanted
from tests.student import Student

pytestmark = pytest.mark.timing  # each test interrupts the kernel at a moment

KEYS = ("graphcore/mnist", "sambanova/inference")
CASES = [pytest.param(key, moment, id="{}-{}".format(key, moment.phase.replace(" ", "_").replace("/", "of")))
         for key in KEYS for moment in WALKS[key].moments if moment.walked]
RUN_CELL = "run_exercise(config)"


def _frames(messages: List[dict]) -> List[str]:
    text = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream")
    return re.split(r"[\r\n]", text)


def run_cells_and_interrupt(student: Student, sources: List[str], marker: str,
                            timeout: float = 600) -> Tuple[List[List[dict]], bool]:
    """Run ``sources`` one after another; interrupt the kernel once, when a frame of output matches
    ``marker``. Stops after a cell that ends in an error, as Run All does. Each cell's messages, and
    whether the interrupt was sent."""
    wanted_frame = re.compile(marker)
    sent = False
    shown: List[List[dict]] = []
    for source in sources:
        msg_id = student.kc.execute(source)
        messages: List[dict] = []
        shown.append(messages)
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = student.kc.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError("the cell did not finish in {} s:\n{}".format(timeout, source)) from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind in ("stream", "error", "execute_result", "display_data"):
                messages.append(msg)
            if not sent and kind == "stream" and any(wanted_frame.search(f) for f in _frames(messages)):
                student.km.interrupt_kernel()  # what Kernel -> Interrupt (and the stop button) sends
                sent = True
        if any(m["msg_type"] == "error" for m in messages):
            break
    return shown, sent


def _as_notebook(sources: List[str], shown: List[List[dict]], path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    for source, messages in zip(sources, shown):
        cell = nbformat.v4.new_code_cell(source)
        cell.outputs = [nbformat.v4.output_from_msg(m) for m in messages]
        nb.cells.append(cell)
    nbformat.write(nb, str(path))


@pytest.mark.parametrize("key, moment", CASES)
def test_kernel_interrupt_at_a_phase_boundary_keeps_what_was_measured(key, moment: Moment, tmp_path):
    walk = WALKS[key]
    parameters = yaml.safe_load(walk.arguments[1]) if walk.arguments else {}
    with Student(walk.notebook, parameters, cwd=str(tmp_path)) as student:
        student.run_through(RUN_CELL)
        sources = student.cells[student.cells.index(student.cell(RUN_CELL)):]
        shown, sent = run_cells_and_interrupt(student, sources, moment.after)
    assert sent, "no output matched {!r}".format(moment.after)
    errors = [(source, m["content"]) for source, messages in zip(sources, shown) for m in messages
              if m["msg_type"] == "error"]
    assert len(errors) <= 1, errors
    said = ""
    if errors:
        source, error = errors[0]
        lines = error["traceback"]
        assert len(lines) == 1 and "Traceback" not in lines[0] and "File " not in lines[0], (
            "the cell {!r} showed {}: {} as a traceback of {} lines, not one line".format(
                source.splitlines()[0], error["ename"], error["evalue"], len(lines)))
        said = lines[0]
    _as_notebook(sources, shown, tmp_path / "student.ipynb")
    runs = [run for run in results.read(tmp_path / "student.ipynb").runs if run.exercise == key]
    landed = [m for m in walk.from_(moment) if matches(m, runs, said, walk.phases_at(moment))]
    assert landed, "Kernel -> Interrupt at {!r} ({}) kept {}; wanted {}".format(
        moment.after, moment.phase, described(runs, said), " or ".join(wanted(m) for m in walk.from_(moment)))
