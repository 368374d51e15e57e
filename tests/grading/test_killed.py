"""A grader killed with SIGKILL leaves no student process running, at every isolation level.

One batch of two: a student whose notebook loops forever and an honest one that takes a few
seconds. When the looping kernel is busy, `labkit grade` gets SIGKILL (no clean-up code can
run); within a few seconds no process of that batch may be left (kernels, sandboxes,
launchers, workers: everything whose command line names the batch's working folder).
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels
from tests.grading import notebooks as N
from tests.grading.conftest import ensure_bubblewrap, level_id
from tests.grading.test_batch import labkit
from tests.grading.test_hostile import RUBRIC


def _processes(marker: str):
    """pid -> (command line, CPU seconds) of every process whose command line contains ``marker``."""
    found = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/{}/cmdline".format(name), "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open("/proc/{}/stat".format(name)) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if marker in cmdline and fields[0] != "Z":  # zombies hold nothing; their parent reaps them
            found[int(name)] = (cmdline, (int(fields[11]) + int(fields[12])) / ticks)
    return found


@pytest.mark.timing
@pytest.mark.parametrize("level", levels.LEVELS, ids=level_id)
def test_sigkill_of_the_grader_leaves_no_student_process(tmp_path, level):
    if level == "bwrap":
        ensure_bubblewrap()
        levels._PROBED.pop("bwrap", None)
    if not levels.level_available(level):
        pytest.skip("isolation level {} does not work on this machine".format(level))
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    N.write(N.homework(extra=[new_code_cell("while True:\n    pass")]), subs / "a_loops.ipynb")
    N.write(N.homework(extra=[new_code_cell("import time\ntime.sleep(20)")]), subs / "b_honest.ipynb")
    grader = labkit(str(subs), "--rubric", RUBRIC, "--out", str(out), "--workers", "2", "--isolation", level,
                    "--timeout", "300", "--cell-timeout", "250", "--memory", "1.5")
    marker = "labkit-grade-{}-".format(grader.pid)  # the batch's working folder: in every command it starts
    deadline = time.monotonic() + 120
    busy = []
    while not busy and time.monotonic() < deadline and grader.poll() is None:
        time.sleep(0.3)
        busy = [pid for pid, (cmd, cpu) in _processes(marker).items() if "ipykernel_launcher" in cmd and cpu > 1.0]
    assert busy, "no busy student kernel appeared: {}".format(grader.communicate(timeout=30))
    kernels = [pid for pid, (cmd, _cpu) in _processes(marker).items() if "ipykernel_launcher" in cmd]
    assert len(kernels) >= 2  # both students' kernels run: the honest one is killed too
    grader.send_signal(signal.SIGKILL)
    grader.communicate(timeout=30)

    left = _processes(marker)
    until = time.monotonic() + 5
    while left and time.monotonic() < until:
        time.sleep(0.1)
        left = _processes(marker)
    assert not left, "still running {:.0f} s after kill -9 at level {}: {}".format(5, level, left)
