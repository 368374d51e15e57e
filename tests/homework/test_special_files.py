"""A FIFO among a student's logs, lab-book notebooks or sweep tables is said and left out, never opened:
the homework gathers every other run, and the trusted reading of evidence refuses it in one sentence.

    .venv/bin/python -m pytest tests/homework/test_special_files.py -q
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from labkit import sweep
from labkit.testbeds.homework import evidence
from labkit.testbeds.homework.exercise import runs_from_lab_book, runs_from_logs
from labkit.testbeds.sambanova import inference
from tests.faults import fifo

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def test_a_fifo_among_the_logs_is_said_and_the_other_logs_are_read(tmp_path, testbed_logs, capsys):
    folder = tmp_path / "logs" / "graphcore"
    folder.mkdir(parents=True)
    shutil.copy(str(testbed_logs / "graphcore" / "student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log"),
                str(folder / "bs12.log"))
    (folder / "gone.log").symlink_to(tmp_path / "nowhere.log")
    with fifo(folder / "a-pipe.log") as pipe:
        runs = runs_from_logs(tmp_path / "logs", "graphcore")
        assert pipe.readers == 0
    out = capsys.readouterr().out
    assert "not read: log {}: is a FIFO (named pipe), not a regular file".format(pipe) in out
    assert "not read: log {}: no such file".format(folder / "gone.log") in out
    assert [run.metrics["test_accuracy"] for run in runs] == [98.88]


def test_a_fifo_named_like_a_notebook_or_a_sweep_table_is_not_counted(tmp_path, capsys):
    folder = tmp_path / "runs" / "graphcore"
    folder.mkdir(parents=True)
    shutil.copy(str(GOLDEN / "graphcore" / "mnist.ipynb"), str(folder / "mnist.ipynb"))
    swept = folder / "sweep"
    swept.mkdir()
    (swept / sweep.MANIFEST).write_text(json.dumps({}))
    with fifo(folder / "late.ipynb") as notebook, fifo(swept / "results.csv") as table:
        runs = runs_from_lab_book(tmp_path / "runs", "graphcore")
        with pytest.raises(evidence.EvidenceError, match=r"^notebook {}: is a FIFO \(named pipe\), not a regular "
                                                         r"file$".format(notebook)):
            evidence.trusted_record({"evidence": str(notebook)})
        assert notebook.readers == 0 and table.readers == 0
    out = capsys.readouterr().out
    assert "not counted: notebook {}: is a FIFO (named pipe), not a regular file".format(notebook) in out
    assert "not counted: sweep table {}: is a FIFO (named pipe), not a regular file".format(table) in out
    assert [run.params["evidence"] for run in runs] == [str(folder / "mnist.ipynb")]


def test_inference_evidence_refuses_a_fifo_unopened(tmp_path):
    from labkit.files import NotAFile

    with fifo(tmp_path / "curl.txt") as pipe:
        with pytest.raises(NotAFile, match=r"^log_path {}: is a FIFO \(named pipe\), not a regular file$".format(
                pipe)):
            inference.read_evidence([str(pipe)])
        assert pipe.readers == 0
