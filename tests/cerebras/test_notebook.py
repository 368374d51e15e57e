"""The notebook itself, run by papermill in a real kernel: bad parameters stop it at once; logs are read."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import papermill

from labkit import results

from .conftest import REPO, STUDENT_LOGS

NOTEBOOK = REPO / "notebooks" / "cerebras" / "bert_large.ipynb"


def execute(tmp_path, **parameters):
    out = tmp_path / "out.ipynb"
    try:
        papermill.execute_notebook(str(NOTEBOOK), str(out), parameters=parameters, cwd=str(tmp_path),
                                   kernel_name="python3", progress_bar=False)
        error = None
    except papermill.PapermillExecutionError as exc:
        error = exc
    return nbformat.read(str(out), as_version=4), error


def executed_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]


def test_notebook_is_committed_clean_and_declares_its_spec():
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    assert "config = cerebras.SPEC.from_notebook(globals())" in code[1].source
    assert all(not c.get("outputs") and not c.get("execution_count") for c in code)
    assert nb.metadata["labkit"]["spec"] == "labkit.testbeds.cerebras:SPEC"
    from labkit.testbeds.cerebras.bert_large import SPEC

    namespace = {}
    exec(code[0].source, namespace)  # the parameters cell holds exactly the spec's defaults
    assert {k: v for k, v in namespace.items() if not k.startswith("__")} == SPEC.defaults()


def test_batch_size_zero_stops_at_the_parameters(tmp_path):
    nb, error = execute(tmp_path, batch_size=0, model_size="micro", target="cpu")
    assert error is not None and error.ename == "ParameterError"
    assert "batch_size = 0" in error.evalue
    assert len(executed_cells(nb)) == 3  # parameters, injected parameters, the check: nothing after
    assert results.read(str(tmp_path / "out.ipynb")).runs == []


def test_csx_without_the_stack_stops_before_training(tmp_path, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no ~/R_*/modelzoo here
    monkeypatch.delenv("LABKIT_MODELZOO", raising=False)
    nb, error = execute(work, target="CSX", model_size="micro")
    assert error is not None and error.ename == "DeviceError"
    assert "cerebras_pytorch" in error.evalue
    assert len(executed_cells(nb)) == 4  # parameters, injected parameters, config, the plan that stops
    assert sorted(p.name for p in work.iterdir()) == ["out.ipynb"]  # no params file, no log, no model_dir


def test_reading_logs_records_them_for_the_homework(tmp_path, cerebras_logs):
    nb, error = execute(tmp_path, log_path=str(STUDENT_LOGS[1024]),
                        compare_logs=[str(STUDENT_LOGS[512]), str(STUDENT_LOGS[2048])])
    assert error is None
    runs = results.read(str(tmp_path / "out.ipynb")).runs
    assert sorted(r.params["batch_size"] for r in runs) == [512, 1024, 2048]
    for run in runs:
        text = Path(STUDENT_LOGS[run.params["batch_size"]]).read_text()
        assert run.source == "log" and run.status == "complete"
        assert run.metrics["samples_per_sec"] == float(re.findall(r"GlobalRate=([\d.]+)", text)[-1])
    html = [o["data"]["text/html"] for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "text/html" in o.get("data", {})]
    assert any("5689.40 samples/s" in h for h in html)  # the 2048 log's GlobalRate, in the homework table
