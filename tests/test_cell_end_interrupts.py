"""Kernel -> Interrupt just after a cell's code has ended.

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


# An interrupt landing at each line labkit runs after a step's own work is done, up to the cell:
# a trace function calls the SIGINT handler in force there, as Python would for a signal that
# arrived just before that line (the interrupt walk found one landing between two handlers).
AT_A_LINE_MODULE = '''\
import os, signal, sys
import labkit
LABKIT = os.path.dirname(labkit.__file__)
def arm(line, after):
    """From the return of code ``after``: at the line-th line labkit runs, an interrupt."""
    state = {"armed": False, "lines": 0}
    def trace(frame, event, arg):
        if event == "return" and frame.f_code is after:
            state["armed"] = True
        elif event == "line" and state["armed"] and frame.f_code.co_filename.startswith(LABKIT):
            state["lines"] += 1
            if state["lines"] == line:
                sys.settrace(None)
                handler = signal.getsignal(signal.SIGINT)
                if callable(handler):
                    handler(signal.SIGINT, frame)
        return trace
    sys.settrace(trace)
    return state
'''
STEP = '''
@interrupts.run_step
def step():  # as the exercises' run steps: keeps what it measures
    run = results.Run(exercise="demo", metrics={"x": 1.0})
    interrupts.keep(lambda: run)
    interrupts.phase("summary")
    return run
'''
AFTER = {  # the cell, and the code whose return starts the count
    "run = measure()": "measure.__wrapped__.__code__",
    "run = step()": "step.__wrapped__.__code__",
    "results.record(run)": "cell.holding_a_run.__code__",
    "show(run)": "show.__wrapped__.__code__",
}


@pytest.mark.parametrize("cell", sorted(AFTER))
def test_an_interrupt_at_any_line_while_a_step_returns_keeps_its_result(cell, tmp_path):
    (tmp_path / "at_a_line.py").write_text(AT_A_LINE_MODULE)
    with _student(tmp_path) as s:
        assert not s.execute(SLOW_END.replace('get_ipython().events.register("post_run_cell", slow_end.slow_end)', "")
                             + STEP + "import sys, at_a_line\nfrom labkit.interrupts import cell\nrun = measure()").errors
        lost, status = {}, {}
        for line in range(1, 200):
            if cell.startswith("run ="):
                s.execute("run = None")
            ran = s.execute("state = at_a_line.arm({}, {})\ntry:\n    {}\nfinally:\n    sys.settrace(None)"
                            .format(line, AFTER[cell], cell))
            if s.value("state['lines']") < line:  # every line up to the cell was tried
                break
            if ran.errors or s.value("run is None"):
                lost[line] = ran.shown
            else:
                status[line] = s.value("run.status")
        assert len(lost) + len(status) >= 3, status  # the trace saw labkit's lines
        assert not lost, "an interrupt at line(s) {} after the step's work lost its result:\n{}".format(
            sorted(lost), next(iter(lost.values())))
        # the work was done: the run is complete, not "interrupted" in its last phase
        assert set(status.values()) == {"complete"}, status
