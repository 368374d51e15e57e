"""cerebras/llama2_7b: the spec, the plan (CS-3 node, log, portable, the refusals), the portable
run's metrics and log lines, the report."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from labkit import devices, llm
from labkit.params import ParameterError
from labkit.results import Run
from labkit.testbeds.cerebras import llama2_7b
from labkit.testbeds.cerebras.llama2_7b.cszoo import LLAMA_DIR
from labkit.testbeds.cerebras.llama2_7b.train import train
from tests.cerebras.cs3_stack import CS3Node

SMALL = {"model_size": "tiny", "batch_size": 4, "steps": 12, "log_steps": 4, "sequence_length": 32, "device": "cpu"}


@pytest.fixture(autouse=True)
def cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "llama-cache"))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    os.environ.setdefault("LABKIT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "llama-cache"))
    lines = []
    config = llama2_7b.SPEC.validate(SMALL)
    run = train(config, devices.torch_device("cpu"), echo=lines.append, progress=False)
    return run, lines


def test_defaults_mean_the_course_on_a_cs3_and_a_laptop_run_elsewhere():
    config = llama2_7b.SPEC.validate({})
    assert llama2_7b.effective(config, "cs3") == llama2_7b.COURSE
    assert llama2_7b.effective(config, "portable") == dict(llama2_7b.PORTABLE_DEFAULTS, model_size="small")
    chosen = llama2_7b.effective(llama2_7b.SPEC.validate({"batch_size": 512, "steps": 5}), "cs3")
    assert (chosen["batch_size"], chosen["steps"], chosen["log_steps"]) == (512, 5, 5)


@pytest.mark.parametrize("values, message", [
    ({"batch_size": 0}, "batch_size = 0"),
    ({"steps": 10, "log_steps": 20}, "log_steps = 20: more than steps = 10"),
    ({"model_size": "70b"}, "model_size = '70b'"),
    ({"device": "ipu"}, "device = 'ipu'"),
    ({"log_path": "no_such.log"}, "log_path = 'no_such.log': no such file"),
])
def test_bad_parameters_are_named(values, message):
    with pytest.raises(ParameterError, match=re.escape(message)):
        llama2_7b.SPEC.validate(values)


def test_the_course_sizes_on_a_laptop_are_refused_in_one_line_with_the_time_and_a_run_that_fits():
    with pytest.raises(ParameterError) as refused:
        llama2_7b.plan(llama2_7b.SPEC.validate({"model_size": "7b", "batch_size": 1024, "sequence_length": 4096,
                                                "steps": 200, "device": "cpu"}))
    (line,) = refused.value.problems
    assert re.match(r"model_size = '7b', batch_size = 1024, sequence_length = 4096, steps = 200: on cpu this "
                    r"portable training would take about \d+ days", line)
    assert "model_size='small', batch_size=8, sequence_length=128, steps=40" in line and "log_path" in line
    config = llama2_7b.SPEC.validate({"model_size": "small", "batch_size": 64, "sequence_length": 1024,
                                      "steps": 2000, "device": "cpu"})
    with pytest.raises(ParameterError, match="or set allow_long_run=True"):
        llama2_7b.plan(config)
    assert llama2_7b.plan(config.replace(allow_long_run=True)).path == "portable"


def test_the_estimate_grows_with_batch_length_steps_and_size():
    base = llama2_7b.estimated_seconds("small", 8, 128, 100, "cpu")
    assert llama2_7b.estimated_seconds("small", 16, 128, 100, "cpu") == pytest.approx(2 * base)
    assert llama2_7b.estimated_seconds("small", 8, 128, 200, "cpu") == pytest.approx(2 * base)
    assert llama2_7b.estimated_seconds("7b", 8, 128, 100, "cpu") > 300 * base
    assert llama2_7b.estimated_seconds("small", 8, 128, 100, "cuda") < base


@pytest.fixture()
def cs3_node(tmp_path, monkeypatch):
    """A user node's shape: a `cszoo` on PATH and a modelzoo checkout with the LLaMA model."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    cszoo = bin_dir / "cszoo"
    cszoo.write_text("#!/bin/sh\necho cszoo\n")
    cszoo.chmod(cszoo.stat().st_mode | stat.S_IEXEC)
    modelzoo = tmp_path / "R_2.6.0" / "modelzoo"
    (modelzoo / LLAMA_DIR).mkdir(parents=True)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    return str(modelzoo)


def test_plan_takes_the_cs3_on_a_user_node_and_says_what_is_missing_elsewhere(cs3_node, tmp_path):
    chosen = llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": cs3_node}))
    assert chosen.path == "cs3" and "cszoo fit configs/params_llama2_7b.yaml" in str(chosen)
    assert llama2_7b.cs3_node(cs3_node) == []
    missing = llama2_7b.cs3_node(str(tmp_path / "nowhere"))
    assert len(missing) == 1 and "no modelzoo checkout with src/cerebras/modelzoo/models/nlp/llama" in missing[0]
    with pytest.raises(devices.DeviceError, match="device='CSX' was asked for, but no modelzoo checkout"):
        llama2_7b.plan(llama2_7b.SPEC.validate({"device": "CSX", "modelzoo_dir": str(tmp_path / "nowhere")}))
    portable = llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": cs3_node, "model_size": "tiny"}))
    assert portable.path == "portable" and "model_size='tiny'" in portable.why


def test_plan_without_a_cs3_trains_the_portable_llama_and_a_log_is_read(tmp_path):
    chosen = llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": str(tmp_path)}))
    assert chosen.path == "portable" and "LLaMA small preset, batch 8 x 128 tokens, 40 steps" in str(chosen)
    assert "no CS-3 here" in chosen.why
    log = tmp_path / "mytest.log"
    log.write_text("x\n")
    assert llama2_7b.plan(llama2_7b.SPEC.validate({"log_path": str(log)})).path == "log"


def test_portable_run_reports_the_cs3_metrics_in_their_units(small_run):
    run, _ = small_run
    assert run.status == "complete" and run.source == "portable"
    assert not llama2_7b.METRICS.check(run)
    m = run.metrics
    assert m["steps"] == 12 and m["samples"] == 48
    assert m["tokens_per_s"] == pytest.approx(m["global_rate"] * 32, rel=1e-3)
    assert m["global_rate"] == pytest.approx(m["samples"] / m["train_seconds"], rel=0.05)
    assert 0 < m["first_step_s"] < m["train_seconds"] and m["parameters"] == llm.parameter_count("tiny", 2048)
    # the steady figure: the 11 steps after the first, over the time after it
    assert m["steady_rate"] == pytest.approx(44 / (m["train_seconds"] - m["first_step_s"]), rel=0.05)
    assert run.units["global_rate"] == "samples/s" and run.units["tokens_per_s"] == "tokens/s"
    assert run.units["steady_rate"] == "samples/s"
    losses = run.series["loss"]["y"]
    assert len(losses) == 12 and losses[-1] < losses[0] - 0.3  # it learns
    assert run.series["global_rate"]["x"] == [4, 8, 12]
    assert run.params["batch_size"] == 4 and run.params["model_size"] == "tiny" and run.params["learning_rate"] == 1e-3
    assert any("not the CS-3" in note for note in run.notes) and any("first step" in note for note in run.notes)


def test_portable_run_prints_the_cerebras_2_6_log_lines(small_run):
    _, lines = small_run
    reports = [line for line in lines if "| Train Device=CPU" in line]
    assert len(reports) == 3
    pattern = (r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO:   \| Train Device=CPU, Step=(\d+), Loss=\d+\.\d{5}, "
               r"Rate=\d+\.\d\d samples/sec, GlobalRate=\d+\.\d\d samples/sec, LoopTimeRemaining=\d+:\d\d:\d\d, "
               r"TimeRemaining=\d+:\d\d:\d\d$")
    assert [int(re.match(pattern, line).group(1)) for line in reports] == [4, 8, 12]
    assert "Training completed successfully!" in lines[-2]
    assert re.search(r"INFO:   Processed 48 training sample\(s\) in \d+\.\d+ seconds\.$", lines[-1])


def test_a_last_step_off_the_report_grid_is_reported_with_the_modelzoos_rates():
    lines = []
    config = llama2_7b.SPEC.validate(dict(SMALL, batch_size=3, steps=7, log_steps=3, sequence_length=12))
    run = train(config, devices.torch_device("cpu"), echo=lines.append, progress=False)
    assert [int(re.search(r"Step=(\d+),", line).group(1)) for line in lines if "| Train" in line] == [3, 6, 7]
    assert run.series["rate"]["x"] == [3, 6, 7] and all(rate > 0 for rate in run.series["rate"]["y"])
    assert len(run.series["loss"]["y"]) == 7 and run.metrics["samples"] == 21 and run.metrics["steps"] == 7
    # GlobalRate: every sample since the first step over the time since then (its report is read at step 7)
    assert run.metrics["global_rate"] == pytest.approx(21 / run.metrics["train_seconds"], rel=0.05)


def test_report_tables_label_where_each_run_ran(small_run):
    run, _ = small_run
    table = llama2_7b.metrics_table(run)
    assert table.loc["where", "value"] == "portable PyTorch on CPU"
    assert table.loc["tokens_per_s", "value"].endswith(" tokens/s")
    log_run = Run(exercise=run.exercise, source="log", params={"batch_size": 1024, "sequence_length": 4096},
                  metrics={"global_rate": 31.99, "tokens_per_s": 131031.0})
    throughput = llama2_7b.throughput_table([run, log_run])
    assert list(throughput["where"]) == ["CS-3 (log)", "portable PyTorch on CPU"]
    assert list(throughput["batch_size"]) == [1024, 4]
    assert llama2_7b.plot_throughput([run, log_run]) is not None and llama2_7b.plot_loss(run) is not None


SAMPLE = (Path(__file__).resolve().parent.parent / "fixtures" / "testbed-logs" / "cerebras"
          / "upstream-fall2025-llama2-7b-sample-output.log")


def test_the_course_sample_log_read_through_the_run_step(capsys):
    run = llama2_7b.run_exercise(llama2_7b.SPEC.validate({"log_path": str(SAMPLE)}))
    assert run.source == "log" and run.metrics["steps"] == 200 and run.metrics["global_rate"] == 31.99
    assert run.metrics["tokens_per_s"] == round(31.99 * 4096, 1)  # None: the course's 4096-token data
    assert llama2_7b.where_label(run) == "CS-3 (log)"
    assert "Note: " in capsys.readouterr().out


@pytest.fixture()
def fake_cs3(tmp_path, monkeypatch):
    node = CS3Node(tmp_path).build()
    for key, value in node.environ().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("LABKIT_PROGRESS", "off")
    monkeypatch.chdir(node.work)
    return node


def test_on_a_cs3_the_defaults_keep_the_course_file_and_a_batch_size_is_the_one_change(fake_cs3, capsys):
    config = llama2_7b.SPEC.validate({})
    assert llama2_7b.plan(config).path == "cs3"
    run = llama2_7b.run_exercise(config)
    said = capsys.readouterr().out
    assert "changed: nothing." in said and "cszoo fit configs/params_llama2_7b_bs1024_s200_" in said
    assert run.source == "testbed" and run.status == "complete" and run.metrics["steps"] == 200
    assert llama2_7b.where_label(run) == "CS-3 (cszoo fit)"
    run = llama2_7b.run_exercise(config.replace(batch_size=64, steps=20))
    said = capsys.readouterr().out
    assert "changed: trainer.fit.train_dataloader.batch_size 1024 -> 64, trainer.init.loop.max_steps 200 -> 20" in said
    assert run.params["batch_size"] == 64 and run.metrics["samples"] == 64 * 20


def test_a_checkout_of_another_release_gets_a_release_line_with_alcfs_commands(cs3_node):
    # the fixture's checkout sits in ~/R_2.6.0 and its setup.py names 2.6.0, as Release_2.6.0's does
    Path(cs3_node, "setup.py").write_text('def main():\n    __version__ = "2.6.0"\n')
    chosen = llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": cs3_node}))
    release = [line for line in chosen.more if line.startswith("Release:")]
    assert release and "is Release 2.6.0; labkit was checked against 2.10.0" in release[0]
    assert "mkdir ~/R_2.10.0;" in release[0] and "git checkout Release_2.10.0;" in release[0]
    assert "python3.11 -m venv venv_cerebras_pt;" in release[0] and release[0].endswith("pip install -e modelzoo")
    Path(cs3_node, "setup.py").write_text('def main():\n    __version__ = "2.10.0"\n')
    assert not [line for line in llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": cs3_node})).more
                if line.startswith("Release:")]


def test_the_cs3_plan_says_what_data_parallelism_does_and_the_time_limit(cs3_node, tmp_path):
    checkpoint = tmp_path / "checkpoint_200.mdl"
    checkpoint.write_text("")
    chosen = llama2_7b.plan(llama2_7b.SPEC.validate({"modelzoo_dir": cs3_node, "num_csx": 4, "batch_size": 1024,
                                                     "job_time_sec": 3600, "checkpoint_path": str(checkpoint)}))
    text = str(chosen)
    assert chosen.path == "cs3" and "the CS-3 x 4 (data parallel)" in text
    assert "4 CS-3s, each training 256 samples of every batch of 1024; the global batch, the steps" in text
    assert "samples per second grow up to 4x" in text and "At most 2 training jobs" in text
    assert "Time limit: the CS-3 job stops after 3600 s (job_time_sec)." in text
    assert "Restart: from {} (--checkpoint_path)".format(checkpoint) in text


@pytest.mark.parametrize("values, message", [
    ({"num_csx": 5}, "num_csx = 5: too large; allowed: an int >= 1 and <= 4"),
    ({"num_csx": 0}, "num_csx = 0: too small"),
    ({"num_csx": 2.0}, "num_csx = 2.0: wrong type"),
    ({"job_time_sec": 90000}, "job_time_sec = 90000: too large; allowed: an int >= 60 and <= 86400, or None"),
    ({"checkpoint_path": "/nowhere/checkpoint_1.mdl"}, "checkpoint_path = '/nowhere/checkpoint_1.mdl'"),
])
def test_the_cluster_parameters_are_checked(values, message):
    with pytest.raises(ParameterError, match=re.escape(message)):
        llama2_7b.SPEC.validate(values)
