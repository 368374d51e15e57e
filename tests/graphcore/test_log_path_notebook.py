"""A FIFO as the MNIST notebook's ``log_path``: ``labkit run`` refuses it before a kernel starts, and a
real kernel that is given it stops at the parameter check with one line, instead of waiting for ever
for a writer. Each run is bounded, so a regression fails instead of hanging.

    .venv/bin/python -m pytest tests/graphcore/test_log_path_notebook.py -q
"""

from __future__ import annotations

import sys

import nbformat

from tests.faults import bounded, fifo
from tests.shared import REPO

NOTEBOOK = REPO / "notebooks" / "graphcore" / "mnist.ipynb"


def test_labkit_run_refuses_a_fifo_as_log_path_before_a_kernel_starts(tmp_path):
    with fifo(tmp_path / "mnist.log") as pipe:
        done = bounded(sys.executable, "-m", "labkit", "run", str(NOTEBOOK), "out.ipynb", "-p", "log_path",
                       str(pipe), cwd=tmp_path)
        assert pipe.readers == 0
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("labkit run: Bad parameter for graphcore/mnist:\n  - log_path = {!r}: is a FIFO "
                                  "(named pipe), not a regular file; allowed: a path naming a readable file, or "
                                  "None\n".format(str(pipe)))
    assert "Traceback" not in done.stderr and not (tmp_path / "out.ipynb").exists()


def test_a_kernel_given_a_fifo_as_log_path_stops_at_the_check_in_one_line(tmp_path):
    out = tmp_path / "out.ipynb"
    with fifo(tmp_path / "mnist.log") as pipe:
        done = bounded(sys.executable, "-m", "papermill", str(NOTEBOOK), str(out), "-p", "log_path", str(pipe),
                       "--execution-timeout", "120", cwd=tmp_path)
        assert pipe.readers == 0
    assert done.returncode != 0
    nb = nbformat.read(str(out), as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ParameterError"
    assert "log_path = {!r}: is a FIFO (named pipe), not a regular file".format(str(pipe)) in errors[0].evalue
    assert len(errors[0].traceback) == 1  # the message alone, no traceback from inside labkit
    executed = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    assert "from_notebook" in executed[-1].source  # nothing after the check ran


def test_labkit_run_refuses_a_fifo_as_its_parameters_file(tmp_path):
    with fifo(tmp_path / "params.yml") as pipe:
        done = bounded(sys.executable, "-m", "labkit", "run", str(NOTEBOOK), "out.ipynb", "-f", str(pipe),
                       cwd=tmp_path)
        assert pipe.readers == 0
    assert done.returncode == 2, done.stderr
    assert "  - -f {}: is a FIFO (named pipe), not a regular file\n".format(pipe) in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "out.ipynb").exists()
