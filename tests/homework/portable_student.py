"""A student with no testbed access: the homework done with the lab book's portable runs.

    PYTHONPATH=$PWD python -m tests.homework.portable_student /tmp/pia     # build the hand-in to look at it

``make_runs(folder)`` does what the homework's instructions tell a student to do, at tiny sizes
(the instructions' sizes take about five minutes per testbed; these a few seconds per run):
``labkit sweep`` for Graphcore, Cerebras and SambaNova and ``labkit run`` twice for Groq, each
into ``folder/runs/<testbed>/``. ``hand_in(dest, name, ...)`` writes the homework notebook with
the answers of tests/homework/classroom.py beside those runs and/or testbed logs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

from tests.homework import classroom

REPO = classroom.REPO

#: The homework's portable commands (labkit.testbeds.homework.TESTBEDS), made tiny for tests.
TINY_RUNS: Dict[str, List[List[str]]] = {
    "graphcore": [["sweep", "notebooks/graphcore/mnist.ipynb", "-p", "learning_rate", "0.03,0.3,3", "-p", "epochs", "1",
                   "-p", "max_train_samples", "1600", "-p", "max_test_samples", "400", "-p", "device", "cpu",
                   "--out", "{runs}/graphcore"]],
    "cerebras": [["sweep", "notebooks/cerebras/bert_large.ipynb", "-p", "batch_size", "16,64,1024", "-p", "model_size",
                  "micro", "-p", "max_steps", "2", "-p", "log_steps", "1", "-p", "max_seq_length", "16", "-p", "target",
                  "cpu", "--out", "{runs}/cerebras"]],
    "sambanova": [["sweep", "notebooks/sambanova/bert_large.ipynb", "-p", "ntasks", "1,2,3", "-p", "ntasks_per_node", "4",
                   "-p", "model_size", "micro", "-p", "batch_size", "4", "-p", "steps", "8", "-p", "max_seq_length", "32",
                   "-p", "target", "portable", "-p", "device", "cpu", "--out", "{runs}/sambanova"]],
    "groq": [["run", "notebooks/groq/bert_tiny.ipynb", "{runs}/groq/seq128.ipynb", "-p", "num_samples", "20",
              "-p", "backends", "cpu"],
             ["run", "notebooks/groq/bert_tiny.ipynb", "{runs}/groq/seq32.ipynb", "-p", "num_samples", "20",
              "-p", "backends", "cpu", "-p", "max_seq_length", "32"]],
}


def _only_diverged(out: Path) -> bool:
    import csv

    table = out / "results.csv"
    if not table.is_file():
        return False
    with open(str(table), newline="") as f:
        return {row["status"] for row in csv.DictReader(f)} <= {"complete", "diverged"}


def make_runs(folder: Path, testbeds: Optional[List[str]] = None) -> Path:
    """Run the tiny portable commands from the lab book's folder into ``folder/runs``; return it."""
    runs = Path(folder) / "runs"
    env = dict(os.environ, LABKIT_PROGRESS="text")
    for testbed in testbeds or list(TINY_RUNS):
        (runs / testbed).mkdir(parents=True, exist_ok=True)
        for argv in TINY_RUNS[testbed]:
            cmd = [sys.executable, "-m", "labkit"] + [a.format(runs=runs) for a in argv]
            proc = subprocess.run(cmd, cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            # `labkit sweep` exits 1 when a run is not complete: the large learning rate diverges, as it should.
            diverged_only = proc.returncode == 1 and argv[0] == "sweep" and _only_diverged(Path(cmd[-1]))
            if proc.returncode != 0 and not diverged_only:
                raise RuntimeError("{} failed:\n{}".format(" ".join(cmd), proc.stdout.decode(errors="replace")[-3000:]))
        for png in (runs / testbed).glob("plot_*.png"):  # the sweep's own plots: not evidence, not needed
            png.unlink()
    return runs


def hand_in(dest: Path, name: str, runs: Optional[Path] = None, logs: Optional[List[str]] = None,
            replace: Optional[Dict[str, str]] = None) -> Path:
    """``dest/name/``: the homework with every answer written, plus a copy of ``runs`` and the ``logs``."""
    folder = Path(dest) / name
    folder.mkdir(parents=True, exist_ok=True)
    if runs is not None:
        shutil.copytree(str(runs), str(folder / "runs"))
    for key in logs or []:
        testbed, filename = classroom.LOGS[key]
        (folder / "logs" / testbed).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(str(classroom.fixtures_dir() / testbed / filename), str(folder / "logs" / testbed / filename))
    classroom.write_homework(classroom.HOMEWORK, folder / "ai_testbeds.ipynb", classroom.ANSWERS, replace=replace)
    return folder


if __name__ == "__main__":
    target = Path(sys.argv[1])
    hand_in(target.parent, target.name, make_runs(target.parent / (target.name + "-lab")))
    print(target)
