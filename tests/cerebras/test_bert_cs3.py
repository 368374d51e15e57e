"""BERT-Large on the CS-3 with ``cszoo fit``, as ALCF runs it at Release 2.10, against the fake ``cszoo``.

    PYTHONPATH=$PWD python -m pytest tests/cerebras/test_bert_cs3.py -q

The params file is the course's /software copy (here :data:`BERT_2_10`, given as params_template); labkit
writes it into the modelzoo's BERT configs with the run's choices, runs ALCF's command with the cluster's
flags, and reads the log with the reader the LLaMA log uses.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from labkit import devices
from labkit.params import ParameterError
from labkit.testbeds.cerebras import bert_large
from labkit.testbeds.cerebras.bert_large.cs3 import BERT_DIR
from tests.cerebras.cs3_stack import BERT_2_10


@pytest.fixture
def bert_node(node, monkeypatch):
    """The stand-in CS-3 node with the modelzoo's BERT folder, the course's params file and its data."""
    folder = node.modelzoo / BERT_DIR
    (folder / "configs").mkdir(parents=True)
    (folder / "bert_data" / "train").mkdir(parents=True)  # the data_dir, relative to cszoo's cwd
    template = node.root / "software" / "bert_large_MSL128_sampleds.yaml"
    template.parent.mkdir()
    template.write_text(BERT_2_10)
    monkeypatch.chdir(node.work)
    node.bert = folder
    node.template = template
    return node


def _config(node, **values):
    merged = {"batch_size": 64, "max_steps": 20, "log_steps": 10, "target": "CSX",
              "params_template": str(node.template)}
    merged.update(values)
    return bert_large.SPEC.validate(merged)


def test_the_plan_takes_the_cs3_with_alcfs_command(bert_node):
    chosen = bert_large.plan(_config(bert_node, num_csx=2))
    assert chosen.path == "cs3" and "the CS-3 x 2 (data parallel), with ALCF's `cszoo fit " \
        "configs/bert_large_MSL128_sampleds.yaml` in {}".format(bert_node.bert) in str(chosen)
    assert "2 CS-3s, each training 32 samples of every batch of 64" in str(chosen)
    with pytest.raises(ParameterError, match="max_seq_length = 512: the data set of"):
        bert_large.plan(_config(bert_node, max_seq_length=512, params_template=str(_with_msl(bert_node, 128))))


def _with_msl(node, msl):
    path = node.root / "software" / "msl.yaml"
    loader_end = "      batch_size: 1024\n    val_dataloader"
    path.write_text(BERT_2_10.replace(loader_end, "      batch_size: 1024\n      max_sequence_length: {}\n    "
                                                  "val_dataloader".format(msl)))
    return path


def test_bert_trains_on_the_cs3_and_its_log_is_read_by_the_same_reader(bert_node, capsys):
    config = _config(bert_node, num_csx=2, job_time_sec=3600)
    run = bert_large.run_exercise(config)
    said = capsys.readouterr().out
    command = run.environment["command"]
    assert command[:4] == ["cszoo", "fit", command[2], "--job_labels"] and command[4] == "name=bert_pt"
    assert command[2].startswith("configs/bert_large_MSL128_sampleds_bs64_") and command[-1] == "--num_csx=2"
    assert "$ cd {} && cszoo fit configs/bert_large_MSL128_sampleds_bs64_".format(bert_node.bert) in said
    assert run.exercise == "cerebras/bert_large" and run.source == "testbed" and run.status == "complete", run.notes
    assert run.metrics["steps"] == 20 and run.metrics["total_samples"] == 20 * 64
    assert run.metrics["samples_per_sec"] == round(64 / (0.5 + 64 / 32.5), 2)
    written = yaml.safe_load(Path(run.environment["params_path"]).read_text())
    assert written["trainer"]["fit"]["train_dataloader"]["batch_size"] == 64
    assert written["trainer"]["init"]["loop"]["max_steps"] == 20
    assert written["trainer"]["init"]["backend"]["cluster_config"] == {"job_time_sec": 3600}
    assert bert_node.template.read_text() == BERT_2_10  # the course's file is copied, never changed
    assert (Path(run.environment["model_dir"]) / "checkpoint_20.mdl").exists()
    assert Path(run.environment["log_path"]).parent == bert_node.work


def test_a_restart_goes_on_from_the_checkpoint(bert_node):
    first = bert_large.run_exercise(_config(bert_node))
    checkpoint = Path(first.environment["model_dir"]) / "checkpoint_20.mdl"
    again = bert_large.run_exercise(_config(bert_node, max_steps=40, checkpoint_path=str(checkpoint)))
    assert again.environment["command"][-1] == "--checkpoint_path={}".format(checkpoint)
    assert again.status == "complete" and again.metrics["steps"] == 40 and again.metrics["total_samples"] == 20 * 64


def test_a_runconfig_file_is_for_the_2024_run_py(bert_node):
    from tests.cerebras.conftest import TEMPLATE

    bert_node.template.write_text(TEMPLATE)
    with pytest.raises(ParameterError, match="the 2024 runconfig layout"):
        bert_large.plan(_config(bert_node))


def test_without_cszoo_or_the_2024_stack_target_csx_says_alcfs_commands(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(devices.DeviceError) as refused:
        bert_large.plan(bert_large.SPEC.validate({"target": "CSX", "modelzoo_dir": str(tmp_path)}))
    text = str(refused.value)
    assert "for the CS-3, no `cszoo` command on PATH" in text and "for the 2024 run.py," in text
    assert "mkdir ~/R_2.10.0;" in text and "python3.11 -m venv venv_cerebras_pt" in text and "python3.8" not in text
