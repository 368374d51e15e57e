"""Kernel -> Interrupt just after a cell's code has ended (issue 36).

IPython still has work to do for a cell once its code returns: it stores the result, draws the
figures (matplotlib's inline backend, in ``post_execute``), and ipykernel sends the reply. An
interrupt landing there used to fail a cell whose run had finished (a traceback from IPython's
internals, and under ``labkit run`` the notebook stopped before the record). After a run step, a
show step or a record, labkit sets such an interrupt aside; the cell's own code is still
interrupted as usual. A post_run_cell callback that sleeps widens that moment so the test can
press the button in it.
"""

from __future__ import annotations

import pytest

from tests.student import Student

pytestmark = pytest.mark.timing  # each test presses Kernel -> Interrupt at a moment

MNIST = "notebooks/graphcore/mnist.ipynb"  # any notebook: the cells below are the test's own

# A module, not a cell: IPython's own callbacks (drawing figures) are library code too.
SLOW_END_MODULE = '''\
import time
def slow_end(result):
    if result.info.raw_cell.startswith(("run = measure()", "show(run)", "results.record(run)", "x = 1")):
        print("the code has ended", flush=True)
        time.sleep(10)  # the window the interrupt must land in, wide enough for busy cores
'''
SLOW_END = '''\
from labkit import interrupts, results
import slow_end
@interrupts.with_phases
def measure():
    return results.Run(exercise="demo", metrics={"x": 1.0})
@interrupts.show_step
def show(run):
    print("shown", flush=True)
get_ipython().events.register("post_run_cell", slow_end.slow_end)
'''


def _student(tmp_path) -> Student:
    (tmp_path / "slow_end.py").write_text(SLOW_END_MODULE)
    return Student(MNIST, cwd=str(tmp_path))


@pytest.mark.parametrize("cell", ["run = measure()", "show(run)", "results.record(run)"])
def test_an_interrupt_after_a_labkit_cells_code_is_set_aside(cell, tmp_path):
    with _student(tmp_path) as s:
        assert not s.execute(SLOW_END).errors
        if cell != "run = measure()":
            s.execute("run = measure()")
        ran = s.execute(cell, interrupt_when="the code has ended")
        assert not ran.errors and "Error in callback" not in ran.text, ran.shown + ran.text
        assert s.value("run.status") == "complete"


def test_an_interrupt_in_a_cell_s_own_code_still_raises_after_a_run(tmp_path):
    with _student(tmp_path) as s:
        assert not s.execute(SLOW_END).errors
        ran = s.execute("run = measure()\nprint('waiting', flush=True)\nimport time; time.sleep(30)", interrupt_when="waiting")
        assert [e["ename"] for e in ran.errors] == ["KeyboardInterrupt"]
        # a cell that ran no labkit step keeps IPython's own behaviour
        ran = s.execute("x = 1", interrupt_when="the code has ended")
        assert "Error in callback" in ran.text + ran.shown
