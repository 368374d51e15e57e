"""The real Cerebras modelzoo (Release 2.10, cerebras-pytorch 2.10) against labkit's CS-3 path.

The log tests read tests/fixtures/testbed-logs/cerebras/modelzoo-2.10-cpu-tiny-llama-fit.log: what
``cszoo fit --target_device CPU`` printed for a tiny LLaMA whose params file labkit wrote (see
SOURCES.md there and docs/cerebras.md). The validation test runs the real ``cszoo config validate``
on a params file labkit writes now; it needs the modelzoo's virtual environment (several GB, not
part of ``make setup``) and skips without it::

    LABKIT_CSZOO_VENV=/path/to/venv PYTHONPATH=$PWD python -m pytest tests/cerebras/test_real_modelzoo.py -q
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

import labkit.logs
from labkit.testbeds.cerebras.llama2_7b import cszoo
from labkit.testbeds.cerebras.llama2_7b.metrics import read_log
from labkit.testbeds.cerebras.llama2_7b.report import throughput_table, where_label

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "testbed-logs" / "cerebras"
CPU_LOG = FIXTURES / "modelzoo-2.10-cpu-tiny-llama-fit.log"


def test_the_real_cpu_backend_log_is_read_as_a_cpu_run_not_a_cs3():
    report = labkit.logs.read(str(CPU_LOG))
    assert report.format == "cerebras" and len(report.runs) == 1
    run = report.run
    assert run.environment["device"] == "cpu" and run.status == "complete"
    m = run.metrics
    # the numbers as the file prints them: Step=6 Loss=6.25683 GlobalRate=2.39, "Processed 24 training sample(s)"
    assert (m["steps"], m["final_loss"], m["global_rate"], m["samples"]) == (6, 6.25683, 2.39, 24)
    assert m["train_seconds"] == 15.476671923 and run.params["batch_size"] == 4
    assert run.environment["checkpoints"] == ["model_dir_tiny/checkpoint_6.mdl"]
    for note in run.notes:
        assert "cluster" not in note and "CS-3" not in note, note


def test_the_cpu_runs_place_is_named_in_the_exercises_tables():
    run = read_log(str(CPU_LOG))
    assert where_label(run) == "modelzoo on CPU (log)"
    assert list(throughput_table([run])["where"]) == ["modelzoo on CPU (log)"]


def test_its_train_lines_alone_are_a_cszoo_run_and_not_said_to_be_on_a_cs3():
    lines = [line for line in CPU_LOG.read_text().splitlines() if "Train Device=" in line]
    run = labkit.logs.read("\n".join(lines)).run
    assert run.exercise == "cerebras/llama2_7b" and run.metrics["steps"] == 6
    assert not [note for note in run.notes if "CS-3" in note or "cluster" in note], run.notes


def _cszoo_venv() -> Path:
    venv = os.environ.get("LABKIT_CSZOO_VENV")
    if not venv or not (Path(venv) / "bin" / "cszoo").exists():
        pytest.skip("set LABKIT_CSZOO_VENV to a venv with cerebras-pytorch 2.10 and the modelzoo (docs/cerebras.md)")
    return Path(venv)


def test_the_params_file_labkit_writes_passes_the_real_modelzoos_validation(tmp_path):
    venv = _cszoo_venv()
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import cerebras.modelzoo as m; print(m.__path__[0])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    source = Path(where) / "models" / "nlp" / "llama" / "configs" / "params_llama2_7b.yaml"
    out = tmp_path / "params_llama2_7b_bs256_s20.yaml"
    cszoo.write_params_yaml(str(source), str(out), batch_size=256, steps=20, learning_rate=1e-4, log_steps=20, seed=7)
    # validation checks that each data_dir exists: give the file's relative folders, as a CS-3 node has them
    for loader in ("train_dataloader", "val_dataloader"):
        (tmp_path / yaml.safe_load(out.read_text())["trainer"]["fit"][loader]["data_dir"]).mkdir(parents=True)
    done = subprocess.run([str(venv / "bin" / "cszoo"), "config", "validate", out.name], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # and a value the real validation rejects is refused, with pydantic's message
    out.write_text(out.read_text().replace("batch_size: 256", "batch_size: 0"))
    done = subprocess.run([str(venv / "bin" / "cszoo"), "config", "validate", out.name], cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "fit.train_dataloader.GptHDF5MapDataProcessor.config.batch_size" in done.stderr
    assert "Input should be greater than 0" in done.stderr
