"""``labkit logs parse``, through labkit.cli.main and as a real subprocess.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_cli.py -q
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from labkit import cli
from tests.logs.conftest import CASES
from tests.shared import REPO

TRAINING = "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-2ndlog.log"
TWO_RUNS = "graphcore/student-tnguyen2211-fall2024-mnist-two-runs.log"


def test_human_summary_lists_runs_metrics_with_units_and_notes(testbed_logs, capsys):
    code = cli.main(["logs", "parse", str(testbed_logs / TRAINING), str(testbed_logs / TWO_RUNS)])
    out = capsys.readouterr().out
    assert code == 0
    assert "sambanova format, 1 run" in out
    assert "e2e_train_time = 479.7 s" in out
    assert "training_sequences_per_second = 275,945.2 tokens/s" in out
    assert "note: The run trained and printed its metrics" in out
    assert "graphcore format, 2 runs" in out
    assert "run 2: graphcore/mnist [complete] job_id=28012" in out
    assert "accuracy = 97.82 %" in out


def test_json_gives_one_object_per_file(testbed_logs, capsys):
    code = cli.main(["logs", "parse", "--json", str(testbed_logs / TWO_RUNS), str(CASES / "empty.log")])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and len(lines) == 2
    first, second = (json.loads(line) for line in lines)
    assert [r["metrics"]["test_accuracy"] for r in first["runs"]] == [98.38, 97.82]
    assert second == {"path": str(CASES / "empty.log"), "format": None, "runs": [],
                      "notes": ["Nothing read: the file is empty."], "pointers": []}


def test_unopenable_file_exits_non_zero_but_the_others_are_still_read(tmp_path, capsys):
    code = cli.main(["logs", "parse", str(tmp_path / "missing.log"), str(CASES / "keras-gpu-crlf.log")])
    captured = capsys.readouterr()
    assert code == 1
    assert "missing.log: no such log file" in captured.err
    assert "keras format, 1 run" in captured.out


def test_an_unknown_format_is_refused_before_any_file_is_read(capsys):
    code = cli.main(["logs", "parse", "--format", "poplar", "x.log"])
    assert code == 2
    err = capsys.readouterr().err
    assert "--format 'poplar' is not a log format labkit reads" in err and "graphcore, cerebras" in err
    assert "x.log" not in err  # refused before reading


def test_python_m_labkit_logs_parse_json_subprocess(testbed_logs, tmp_path):
    binary = tmp_path / "srun.txt"
    with open("/bin/true" if os.path.exists("/bin/true") else sys.executable, "rb") as f:
        binary.write_bytes(f.read())
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "labkit", "logs", "parse", "--json",
                           str(testbed_logs / "cerebras/student-kloiks-spring2024-bert-large-bs1024.log"), str(binary)],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    cerebras, binary_report = (json.loads(line) for line in proc.stdout.splitlines())
    run = cerebras["runs"][0]
    assert run["exercise"] == "cerebras/bert_large"
    assert run["metrics"]["global_rate"] == 4884.95 and run["units"]["global_rate"] == "samples/s"
    assert binary_report["runs"] == [] and "binary" in binary_report["notes"][0]
