"""Ctrl-C in `labkit run` is Kernel -> Interrupt: a real SIGINT to the process group, as a terminal sends it.

`labkit run` starts in a session of its own (its process group stands for the terminal's foreground
group); each test waits for what the run prints (``--show-output``) before it presses Ctrl-C, so a busy
machine only makes it slower.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from labkit import results

ROOT = Path(__file__).resolve().parents[2]
MNIST = ROOT / "notebooks" / "graphcore" / "mnist.ipynb"

pytestmark = pytest.mark.timing  # each test presses Ctrl-C at a moment


class Terminal:
    """`labkit run ...` in its own process group; reads its stdout as it comes."""

    def __init__(self, *args: str, cwd: Path, **env_extra: str):
        env = dict(os.environ, PYTHONPATH=str(ROOT), **env_extra)
        self.process = subprocess.Popen([sys.executable, "-m", "labkit", "run", *args, "--show-output"], cwd=str(cwd),
                                        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)
        self.seen = b""

    def wait_for(self, text: str, within: float = 300.0) -> None:
        """Read stdout until ``text`` shows; fail with what was printed if the run ends or time is up."""
        deadline = time.monotonic() + within
        fd = self.process.stdout.fileno()
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, "no {!r} within {} s; printed:\n{}".format(text, within, self.seen.decode()[-2000:])
            ready, _, _ = select.select([fd], [], [], left)
            chunk = os.read(fd, 65536) if ready else b""
            assert chunk or not ready, "labkit run ended before {!r}; printed:\n{}\n{}".format(
                text, self.seen.decode()[-2000:], self.process.stderr.read().decode())
            self.seen += chunk

    def ctrl_c(self) -> None:
        os.killpg(self.process.pid, signal.SIGINT)

    def finish(self, within: float = 120.0):
        try:
            out, err = self.process.communicate(timeout=within)
        finally:
            if self.process.poll() is None:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        return self.process.returncode, (self.seen + out).decode(), err.decode()


def _code_cells(path: Path):
    return [c for c in nbformat.read(str(path), as_version=4).cells if c.cell_type == "code"]


def test_ctrl_c_in_mnist_training_keeps_the_partial_run_and_records_it(tmp_path):
    out = tmp_path / "mnist.ipynb"
    run = Terminal(str(MNIST), str(out), "-p", "epochs", "50", "-p", "max_train_samples", "4000",
                   "-p", "max_test_samples", "400", "-p", "device", "cpu", cwd=tmp_path)
    run.wait_for("Epoch 1/50")  # the steps bar: drawn from the first step on, inside the training loop
    run.ctrl_c()
    code, stdout, stderr = run.finish()

    assert code == 130
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr + stdout, stderr
    assert "interrupted" in stderr and "recorded with status interrupted" in stderr and str(out) in stderr
    recorded = results.read(out)
    assert [r.status for r in recorded.runs] == ["interrupted"] and recorded.error is None
    assert recorded.runs[0].stopped_at().startswith("epoch ")
    # the cells after the run (show, record) ran: papermill wrote every cell, none failed
    assert all(c.metadata.papermill.status == "completed" for c in _code_cells(out))


LOOP = '''\
import time
from labkit import interrupts
with interrupts.graceful() as stop:
    print("looping", flush=True)
    try:
        while True:  # a step that does not end at a boundary (a compile, a long job)
            if stop.requested and not reported:
                print("stop requested", flush=True)
                reported = True
            time.sleep(0.02)
    except KeyboardInterrupt as exc:  # the second interrupt, as labkit's loops take it
        if not stop.interrupted_by(exc):
            raise
print("the step was dropped", flush=True)
'''


def _slow_notebook(tmp_path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("reported = False", metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(LOOP), nbformat.v4.new_code_cell("print('after the loop')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "slow.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_a_second_ctrl_c_stops_at_once_and_still_writes_the_notebook(tmp_path):
    out = tmp_path / "out.ipynb"
    run = Terminal(str(_slow_notebook(tmp_path)), str(out), cwd=tmp_path)
    run.wait_for("looping")
    run.ctrl_c()
    run.wait_for("stop requested")  # the kernel got exactly one interrupt and goes on
    run.ctrl_c()
    code, stdout, stderr = run.finish(within=60)

    assert code == 130
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr + stdout, stderr
    assert "stopped at once" in stderr and "after the loop" not in stdout
    cells = _code_cells(out)
    # the loop ended at the second interrupt; the next cell never ran
    assert "the step was dropped" in stdout
    assert [c.metadata.papermill.status for c in cells][-2:] == ["completed", "failed"]
    assert "stop requested" in "".join(o.get("text", "") for o in cells[-2].outputs)
    assert cells[-1].execution_count is None
    assert results.read(out).error == "KeyboardInterrupt: labkit run stopped here (a second Ctrl-C)"


DEAF = '''\
import os, signal, time
signal.signal(signal.SIGINT, lambda *_: print("got SIGINT", flush=True))  # a cell that will not stop
print("deaf", os.getpid(), flush=True)
while True:
    time.sleep(0.02)
'''


def _alive(pid: int) -> bool:
    try:
        with open("/proc/{}/status".format(pid)) as f:
            return "\nState:\tZ" not in f.read()
    except FileNotFoundError:
        return False


def test_a_kernel_that_ignores_the_second_ctrl_c_is_killed_after_the_grace(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(DEAF), nbformat.v4.new_code_cell("print('never')")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(tmp_path / "deaf.ipynb"))
    out = tmp_path / "out.ipynb"
    run = Terminal(str(tmp_path / "deaf.ipynb"), str(out), cwd=tmp_path)
    run.wait_for("deaf ")
    run.wait_for("\n")
    kernel = int(run.seen.decode().split("deaf ", 1)[1].split()[0])
    run.ctrl_c()
    run.wait_for("got SIGINT")
    run.ctrl_c()
    started = time.monotonic()
    code, stdout, stderr = run.finish(within=60)

    assert code == 130 and time.monotonic() - started < 30
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr + stdout, stderr
    assert "stopped at once" in stderr and "never" not in stdout
    assert not _alive(kernel)
    cells = _code_cells(out)
    assert [c.metadata.papermill.status for c in cells] == ["failed", "pending"]
    assert results.read(out).error == "KeyboardInterrupt: labkit run stopped here (a second Ctrl-C)"


def test_a_stop_between_cells_marks_the_next_code_cell_not_a_markdown_one(tmp_path):
    from labkit.interrupts.runner import CtrlC

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_markdown_cell("## Show"),
                nbformat.v4.new_code_cell("x"), nbformat.v4.new_code_cell("y")]
    for cell in nb.cells:
        cell.metadata["papermill"] = {"status": "completed" if cell is nb.cells[0] else "pending"}
    path = tmp_path / "out.ipynb"
    nbformat.write(nb, str(path))
    stop = CtrlC()
    stop.count, stop.stopped, stop._cell_index = 1, True, 1  # Ctrl-C as papermill reached the markdown cell
    stop.mark_stopped(str(path))
    cells = nbformat.read(str(path), as_version=4).cells
    assert [c.metadata.papermill.status for c in cells] == ["completed", "pending", "failed", "pending"]
    assert results.read(path).error == "KeyboardInterrupt: labkit run stopped here (Ctrl-C between cells)"


# An interrupt that reaches ipykernel in its own code around a cell is caught there ("KeyboardInterrupt
# caught in kernel."), and the cell's reply never comes. These cells widen that moment to seconds: the
# flush ipykernel makes after a cell's code (the code ran), or the input transformer it calls before
# the code (it did not), prints a line and sleeps, and the test presses Ctrl-C on that line.
SLOW_FLUSH = '''\
import sys, time
class SlowFlush:
    def __init__(self, inner):
        self.inner = inner
    def __getattr__(self, name):
        return getattr(self.inner, name)
    def write(self, text):
        return self.inner.write(text)
    def flush(self):
        if sys._getframe(1).f_code.co_name != "execute_request":  # only ipykernel's flush after the code
            return self.inner.flush()
        sys.stdout = self.inner
        self.inner.write("flushing after the code\\n")
        self.inner.flush()
        time.sleep(10)
sys.stdout = SlowFlush(sys.stdout)
'''
SLOW_START = '''\
import time
def slow_start(lines, _slept=[]):
    if any("# slow start" in line for line in lines) and not _slept:
        _slept.append(1)
        print("starting the cell", flush=True)
        time.sleep(10)
    return lines
get_ipython().input_transformers_cleanup.append(slow_start)
'''
MEASURE = '''\
from labkit import interrupts, results
@interrupts.with_phases
def measure():
    return results.Run(exercise="demo", metrics={"x": 1.0})
@interrupts.show_step
def show(run):
    print("drawing the run")
'''


def _notebook(tmp_path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "in.ipynb"
    nbformat.write(nb, str(path))
    return path


def _ctrl_c_on(tmp_path: Path, marker: str, *sources: str):
    out = tmp_path / "out.ipynb"
    run = Terminal(str(_notebook(tmp_path, *sources)), str(out), cwd=tmp_path)
    run.wait_for(marker)
    run.ctrl_c()
    code, stdout, stderr = run.finish(within=90)  # before the fix: labkit run waited for ever
    assert code == 130, (code, stderr)
    assert len(stderr.splitlines()) == 1 and "Traceback" not in stderr + stdout, stderr  # no "caught in kernel"
    return out, stdout, stderr


def test_a_lost_reply_after_the_code_ran_stops_before_the_next_cell(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "flushing after the code", SLOW_FLUSH, "print('the next cell')")
    assert "stopped before the next cell: nothing was measured yet" in stderr
    assert "the next cell" not in stdout
    assert [c.metadata.papermill.status for c in _code_cells(out)] == ["completed", "failed"]


def test_a_lost_reply_after_the_run_cell_still_records_the_run_and_nothing_after(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "flushing after the code", MEASURE, "run = measure()\n" + SLOW_FLUSH,
                                     "show(run)", "results.record(run)", "print('after the record')")
    assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr
    assert interrupts_line() in stdout and "drawing the run" not in stdout and "after the record" not in stdout
    assert [r.status for r in results.read(out).runs] == ["complete"]
    assert [c.metadata.papermill.status for c in _code_cells(out)][-1] == "failed"


OWN_ENVIRONMENT = """import os, sys
env = {name: value for name, value in os.environ.items() if not name.startswith("LABKIT_")}
os.execve(sys.executable, [sys.executable, "-m", "ipykernel_launcher"] + sys.argv[1:], env)"""


def test_a_kernel_with_an_environment_of_its_own_still_has_its_run_recorded(tmp_path):
    """labkit run asks its kernel through Jupyter's own messages, so a kernel whose launcher gives it an
    environment of its own (as ssh or a container does, where no file or variable of labkit run's
    reaches it) still has the run it measured recorded after the Ctrl-C."""
    spec = tmp_path / "jupyter" / "kernels" / "own-env"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", OWN_ENVIRONMENT, "-f", "{connection_file}"],
        "display_name": "own environment", "language": "python"}))
    out = tmp_path / "out.ipynb"
    run = Terminal(str(_notebook(tmp_path, MEASURE, "run = measure()\n" + SLOW_FLUSH, "show(run)",
                                 "results.record(run)", "print('after the record')")),
                   str(out), "--kernel", "own-env", cwd=tmp_path, JUPYTER_PATH=str(tmp_path / "jupyter"))
    run.wait_for("flushing after the code")
    run.ctrl_c()
    code, stdout, stderr = run.finish(within=90)
    assert code == 130, (code, stderr)
    assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr, stderr
    assert [r.status for r in results.read(out).runs] == ["complete"] and "after the record" not in stdout


def test_a_lost_reply_before_the_code_ran_runs_the_record_cell_again(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "starting the cell", MEASURE + SLOW_START, "run = measure()",
                                     "# slow start\nresults.record(run)", "print('after the record')")
    assert [r.status for r in results.read(out).runs] == ["complete"]
    assert "after the record" not in stdout


def test_a_lost_reply_before_the_code_ran_stops_there_when_nothing_was_measured(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "starting the cell", MEASURE + SLOW_START,
                                     "# slow start\nrun = measure()", "results.record(run)")
    assert "nothing was measured yet, so no run was recorded" in stderr and not results.read(out).runs
    assert [c.metadata.papermill.status for c in _code_cells(out)] == ["completed", "failed", "pending"]


PLOTTING = '''\
import time
print("plotting", flush=True)
for _ in range(1200):  # the notebook's own plot after the run step: plain code, the interrupt fails it
    time.sleep(0.05)
'''


def test_ctrl_c_failing_a_cell_after_the_run_step_still_records_the_run(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "plotting", MEASURE, "run = measure()", PLOTTING,
                                     "print('a table after')", "results.record(run)", "print('after the record')")
    assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr
    assert [r.status for r in results.read(out).runs] == ["complete"]
    assert "after the record" not in stdout
    cells = _code_cells(out)
    assert [o.get("ename") for o in cells[2].outputs if o.output_type == "error"] == ["KeyboardInterrupt"]
    assert cells[4].execution_count is not None and cells[5].execution_count is None


# The interrupt may reach a cell as another error. The walk met it in the show cell: Ctrl-C while
# matplotlib first imported, inside a class's __set_name__, which Python 3.11 wraps in RuntimeError
# (3.12 no longer does); libraries also re-raise it as an error of their own.
NAMING = '''\
import time
class SlowName:
    def __set_name__(self, owner, name):
        print("naming", flush=True)
        time.sleep(60)
class Axes:
    get_autoscaley_on = SlowName()
'''
RERAISING = '''\
import time
try:
    print("naming", flush=True)
    time.sleep(60)
except KeyboardInterrupt as stopped:
    raise RuntimeError("the library's own error") from stopped
'''


@pytest.mark.parametrize("cell, error", [
    (NAMING, "RuntimeError" if sys.version_info < (3, 12) else "KeyboardInterrupt"),
    (RERAISING, "RuntimeError")], ids=["set_name", "reraised"])
def test_ctrl_c_turned_into_another_error_after_the_run_step_still_records_the_run(tmp_path, cell, error):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "naming", MEASURE, "run = measure()", cell,
                                     "results.record(run)", "print('after the record')")
    assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr
    assert [r.status for r in results.read(out).runs] == ["complete"]
    assert "after the record" not in stdout
    cells = _code_cells(out)
    assert [o.get("ename") for o in cells[2].outputs if o.output_type == "error"] == [error]


def test_a_cell_failing_after_that_ctrl_c_says_the_measured_run_was_not_recorded(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "plotting", MEASURE, "run = measure()", PLOTTING,
                                     "raise ValueError('a broken table')", "results.record(run)")
    assert "ValueError: a broken table) before the run it measured was recorded" in stderr, stderr
    assert not results.read(out).runs


# ipykernel ignores SIGINT between two messages. A Ctrl-C that `labkit run` passes on as a cell's request
# is on its way reaches the kernel there; so that the test can press it at that moment, the kernel's
# loop gets work of its own after the second cell: it waits 2 s (labkit run sends the third cell
# meanwhile), prints a line and goes on for 5 s, all of it between two messages. Should labkit run
# not have sent the third cell by the time Ctrl-C comes, the Ctrl-C is one between cells in labkit
# run: the same outcome, so a busy machine can only make the test pass without this moment.
BETWEEN_MESSAGES = '''\
import asyncio, sys, time
def busy():
    time.sleep(2)
    sys.__stdout__.write("the kernel is between two messages\\n")
    sys.__stdout__.flush()
    time.sleep(5)
asyncio.get_event_loop().call_later(0.5, busy)
'''
SECOND_CELL = "import time\nprint('the second cell', flush=True)\ntime.sleep(1)"


@pytest.mark.parametrize("measured, third", [(False, "print('the third cell')"), (False, "run = measure()"),
                                             (True, "print('the third cell')"), (True, "show(run)")],
                         ids=["nothing measured, a plain cell", "nothing measured, a run cell",
                              "a run measured, a plain cell", "a run measured, its show cell"])
def test_a_ctrl_c_that_reaches_the_kernel_between_two_messages_is_not_lost(tmp_path, measured, third):
    """Before, the kernel dropped it and every cell ran: a run started after the Ctrl-C was recorded
    complete (the interrupt walk's comparison case). Now the cell already sent starts no run and draws
    none, and the notebook stops: before the next cell, or, holding a run, once the run is recorded."""
    first = "run = measure()\n" if measured else ""
    out, stdout, stderr = _ctrl_c_on(tmp_path, "the kernel is between two messages", MEASURE, first + BETWEEN_MESSAGES,
                                     SECOND_CELL, third, "print('the next cell')", "results.record(run)",
                                     "print('after the record')")
    assert "after the record" not in stdout and "drawing the run" not in stdout, stdout
    if measured:
        assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr
        assert [r.status for r in results.read(out).runs] == ["complete"]
    else:
        assert "nothing was measured yet, so no run was recorded" in stderr, stderr
        assert "the next cell" not in stdout and not results.read(out).runs


# After a cell's reply has gone out, ipykernel is still in its own code (logging, the hook that puts its
# SIGINT handler back): an interrupt there is caught ("KeyboardInterrupt caught in kernel.") and the cell
# has ended well, so labkit run saw nothing of it (the interrupt walk's comparison setup case: once in
# the 350 cases on 1d5c04a). This cell widens that moment: once its own reply is sent, the kernel
# prints a line and sleeps.
SLOW_AFTER_THE_REPLY = '''\
import sys, time
kernel = get_ipython().kernel
send = kernel.session.send
def slow_after_the_reply(stream, msg_or_type, *args, **kwargs):
    sent = send(stream, msg_or_type, *args, **kwargs)
    if msg_or_type == "execute_reply":
        kernel.session.send = send
        sys.__stdout__.write("the reply has gone\\n")
        sys.__stdout__.flush()
        time.sleep(10)
    return sent
kernel.session.send = slow_after_the_reply
'''


def test_a_ctrl_c_caught_by_ipykernel_after_a_cells_reply_stops_before_the_next_cell(tmp_path):
    """Before, every later cell ran and a run started after the Ctrl-C was recorded complete."""
    out, stdout, stderr = _ctrl_c_on(tmp_path, "the reply has gone", MEASURE, SLOW_AFTER_THE_REPLY,
                                     "print('the next cell')", "run = measure()", "results.record(run)")
    assert "stopped before the next cell: nothing was measured yet" in stderr, stderr
    assert "the next cell" not in stdout and not results.read(out).runs
    assert [c.metadata.papermill.status for c in _code_cells(out)] == ["completed", "completed", "failed",
                                                                        "pending", "pending"]


def test_a_ctrl_c_caught_by_ipykernel_after_the_run_cells_reply_still_records_the_run(tmp_path):
    out, stdout, stderr = _ctrl_c_on(tmp_path, "the reply has gone", MEASURE,
                                     "run = measure()\n" + SLOW_AFTER_THE_REPLY, "show(run)", "results.record(run)",
                                     "print('after the record')")
    assert "stopped once the run was recorded; the notebook recorded a run with status complete" in stderr, stderr
    assert interrupts_line() in stdout and "drawing the run" not in stdout and "after the record" not in stdout
    assert [r.status for r in results.read(out).runs] == ["complete"]


def interrupts_line() -> str:
    from labkit.interrupts import SHOW_STOPPED
    return SHOW_STOPPED


KERNEL_STDERR = r'''
import sys, time
ZMQ_RACE = """ERROR:tornado.general:Uncaught exception in ZMQStream callback
Traceback (most recent call last):
  File "site-packages/ipykernel/kernelbase.py", line 408, in process_control
    sys.stderr.flush()
  File "zmq/backend/cython/_zmq.py", line 190, in zmq.backend.cython._zmq._check_rc
zmq.error.ZMQError: Socket operation on non-socket"""
for line in ["a warning the cell wrote",
             "KeyboardInterrupt caught in kernel.",
             "Assertion failed: pfd.revents & POLLIN (src/signaler.cpp:238)",
             ZMQ_RACE]:
    print(line, file=sys.stderr, flush=True)
sys.stdin.readline()  # the test marks the kernel as exiting, then lets it go on
print("Assertion failed: pfd.revents & POLLIN (src/signaler.cpp:238)", file=sys.stderr, flush=True)
print(ZMQ_RACE, file=sys.stderr, flush=True)
print("a last line", file=sys.stderr, flush=True)
'''


def test_the_kernels_stderr_reaches_the_terminal_less_interrupt_and_exit_noise(capfd):
    """A process stands for the kernel, writing to the pipe `labkit run` gives a kernel's stderr: its
    own lines and a libzmq abort or a ZMQError while it runs come through (they say why a kernel died);
    ipykernel's interrupt line does not, nor, once the kernel was told to shut down, libzmq's abort
    (CI printed it after a second Ctrl-C) or ipykernel's ZMQError (seen here after a first one)."""
    from labkit.execute import KernelStderr

    seen = ""

    def read_until(text: str) -> None:  # what the forwarder wrote so far, until ``text`` shows (or 60 s)
        nonlocal seen
        deadline = time.monotonic() + 60
        while text not in seen and time.monotonic() < deadline:
            time.sleep(0.05)
            seen += capfd.readouterr().err

    with KernelStderr() as kernel_stderr:
        kernel = subprocess.Popen([sys.executable, "-c", KERNEL_STDERR], stdin=subprocess.PIPE,
                                  stderr=kernel_stderr.fd)
        read_until("non-socket")
        kernel_stderr.exiting.set()
        kernel.communicate(b"\n", timeout=60)
        read_until("a last line")  # the forwarder's own pace, not the 2 s the with block gives it
    race = ["ERROR:tornado.general:Uncaught exception in ZMQStream callback", "Traceback (most recent call last):",
            '  File "site-packages/ipykernel/kernelbase.py", line 408, in process_control', "    sys.stderr.flush()",
            '  File "zmq/backend/cython/_zmq.py", line 190, in zmq.backend.cython._zmq._check_rc',
            "zmq.error.ZMQError: Socket operation on non-socket"]
    assert seen.splitlines() == ["a warning the cell wrote",
                                 "Assertion failed: pfd.revents & POLLIN (src/signaler.cpp:238)"] + race + ["a last line"]


AT_EXIT = '''\
import atexit, os
os.write(2, b"a line the cell wrote\\n")
atexit.register(os.write, 2, b"Assertion failed: pfd.revents & POLLIN (src/signaler.cpp:238)\\n")
'''


def test_libzmqs_abort_as_the_kernel_exits_does_not_reach_the_terminal(tmp_path):
    """The same through a real `labkit run`: a kernel that writes libzmq's abort as it exits (after
    papermill told it to shut down) prints only what its cell wrote (CI printed the abort: the
    kernel's shutdown went through a path that did not say so)."""
    run = Terminal(str(_notebook(tmp_path, AT_EXIT)), str(tmp_path / "out.ipynb"), cwd=tmp_path)
    code, _, stderr = run.finish()

    assert code == 0, stderr
    assert "a line the cell wrote" in stderr and "Assertion failed" not in stderr, stderr
