"""The MNIST notebook under papermill, with a real kernel: bad parameters stop it before any
data is loaded, with a message that names the parameter; good ones run and record."""

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import papermill
import pytest

from labkit.params import ParameterError
from labkit.results import read
from labkit.testbeds import graphcore

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "graphcore" / "mnist.ipynb"

# (papermill -p NAME VALUE as papermill's CLI would type the value, words the error must contain)
BAD = [
    ("epochs", "ten", ["epochs = 'ten'", "wrong type", "an int >= 1"]),
    ("epochs", 2.5, ["epochs = 2.5", "wrong type", "an int"]),
    ("batch_size", 0, ["batch_size = 0", "too small", ">= 1"]),
    ("learning_rate", -1, ["learning_rate = -1", "too small", "> 0"]),
    ("learning_rate", float("nan"), ["learning_rate = nan", "not a finite number"]),
    ("device", "tpu", ["device = 'tpu'", "one of 'auto', 'ipu', 'cuda', 'mps', 'cpu'"]),
    ("max_train_samples", 3, ["max_train_samples = 3", "fewer samples than one step", "at least 400"]),
    ("epoch", 5, ["'epoch' is not a parameter", "did you mean 'epochs'"]),
    ("data_dir", "/nonexistent/file.txt", ["data_dir = '/nonexistent/file.txt'", "does not exist"]),
]


@pytest.mark.parametrize("name,value,words", BAD, ids=[b[0] + "-" + str(b[1]) for b in BAD])
def test_bad_values_are_refused_by_the_spec(name, value, words):
    with pytest.raises(ParameterError) as err:
        graphcore.SPEC.validate({name: value})
    for word in words:
        assert word in str(err.value)


def test_every_problem_is_reported_at_once():
    with pytest.raises(ParameterError) as err:
        graphcore.SPEC.validate({"epochs": "ten", "batch_size": 0, "epoch": 5})
    assert len(err.value.problems) == 3


def run_cli(tmp_path, *args):
    out = tmp_path / "out.ipynb"
    proc = subprocess.run([sys.executable, "-m", "papermill", str(NOTEBOOK), str(out), *args],
                          capture_output=True, text=True, timeout=300)
    return proc, out


@pytest.mark.parametrize("name,text,words", [
    ("epochs", "ten", ["epochs = 'ten'", "an int >= 1"]),
    ("learning_rate", "nan", ["learning_rate = nan", "not a finite number"]),
    ("epoch", "5", ["'epoch' is not a parameter", "did you mean 'epochs'"]),
    ("data_dir", "/nonexistent/file.txt", ["does not exist"]),
])
def test_papermill_cli_stops_at_the_check_and_still_writes_the_notebook(tmp_path, name, text, words):
    proc, out = run_cli(tmp_path, "-p", name, text)
    assert proc.returncode != 0
    nb = nbformat.read(str(out), as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ParameterError"
    for word in words:
        assert word in errors[0].evalue
    # The failing cell is the check, right after the parameters: nothing was loaded or built.
    executed = [c for c in nb.cells if c.cell_type == "code" and c.get("execution_count")]
    assert "from_notebook" in executed[-1].source
    # The error shows the message only, no traceback from deep inside labkit or torch.
    assert len(errors[0].traceback) == 1 and "site-packages" not in errors[0].traceback[0]


def test_notebook_runs_and_records_what_ran(tmp_path):
    out = tmp_path / "mnist.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), kernel_name="python3", progress_bar=False, parameters={
        "epochs": 1, "learning_rate": 1, "max_train_samples": 800, "max_test_samples": 160,
        "device_iterations": 20, "device": "cpu"})
    results = read(out)
    assert results.error is None
    [run] = results.runs
    assert run.exercise == "graphcore/mnist" and run.status in ("complete", "diverged")
    assert run.params["learning_rate"] == 1.0 and isinstance(run.params["learning_rate"], float)
    assert run.params["device_iterations"] == 20 and run.params["data_source"] == "full"
    assert run.metrics["steps_per_epoch"] == 5 and run.units["train_throughput"] == "samples/s"
    assert {"python", "torch", "labkit"} <= set(run.environment)
    text = "".join(o.get("text", "") for c in nbformat.read(str(out), 4).cells for o in c.get("outputs", []))
    assert "Accuracy on test set: {:0.2f}%".format(run.metrics["test_accuracy"]) in text
    assert "Epoch 1/1" in text and "HBox" not in text  # text progress bars under papermill, not widgets
    # labkit results prints the record and papermill's parameters as one JSON line
    proc = subprocess.run([sys.executable, "-m", "labkit", "results", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    line = json.loads(proc.stdout.strip())
    assert line["parameters"]["learning_rate"] == 1 and line["records"]["run"]["metrics"]["steps_per_epoch"] == 5


def test_notebook_reads_a_testbed_log_instead_of_training(tmp_path, shared):
    log = shared / "fixtures" / "testbed-logs" / "graphcore" / "student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log"
    out = tmp_path / "from-log.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), kernel_name="python3", progress_bar=False,
                               parameters={"log_path": str(log)})
    [run] = read(out).runs
    assert run.source == "log" and run.metrics["test_accuracy"] == 98.88 and run.params["epochs"] == 20
