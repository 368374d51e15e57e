"""The notebook itself, executed by papermill in a real kernel."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import papermill
import pytest

from labkit import results

from tests.fakes import GROQFLOW as FAKE_GROQFLOW
from tests.fakes.groqnode import groq_node

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "groq" / "bert_tiny.ipynb"


def _environment(monkeypatch, tmp_path, groq_card: bool):
    root = str(Path(__file__).resolve().parents[2])
    paths = [root] + ([str(FAKE_GROQFLOW)] if groq_card else [])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name, value in groq_node(tmp_path / "node", cards=1).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "groqflow"))


def test_notebook_runs_offline_with_groq_custom_text_and_records(monkeypatch, tmp_path):
    _environment(monkeypatch, tmp_path, groq_card=True)
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), cwd=str(tmp_path), progress_bar=False, kernel_name="python3",
                               parameters={"num_samples": 6, "max_seq_length": 32,
                                           "custom_text": ["What a lovely film.", "Dull and far too long."]})
    read = results.read(out)
    assert read.error is None
    (run,) = read.runs
    assert run.source == "testbed" and run.params["max_seq_length"] == 32
    assert {"cpu_accuracy", "onnxruntime_accuracy", "groq_accuracy", "groq_onchip_latency_ms"} <= set(run.metrics)
    assert run.metrics["onnxruntime_disagreements"] == 0
    assert any("labkit-bert-tiny-sst2-offline" in n for n in run.notes)
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                     for c in nbformat.read(str(out), 4).cells if c.cell_type == "code" for o in c.outputs)
    assert "NOT comparable" in text and "What a lovely film." in text and "INVALID_ARGUMENT" in text


def test_bad_parameter_stops_the_notebook_before_anything_runs(monkeypatch, tmp_path):
    _environment(monkeypatch, tmp_path, groq_card=False)
    out = tmp_path / "bad.ipynb"
    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook(str(NOTEBOOK), str(out), cwd=str(tmp_path), progress_bar=False,
                                   kernel_name="python3", parameters={"max_seq_length": 0, "backends": "cpu,tpu"})
    message = str(err.value)
    assert "ParameterError" in message and "max_seq_length = 0: too small" in message
    assert "unknown backend 'tpu'" in message
    cells = [c for c in nbformat.read(str(out), 4).cells if c.cell_type == "code"]
    run_cell = next(c for c in cells if "run_exercise" in c.source)
    assert run_cell.execution_count is None and not run_cell.outputs
