"""The CS-2 path against a fake modelzoo run.py: params file, command, live streaming, metrics."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml

from labkit.devices import DeviceError
from labkit.params import ParameterError
from labkit.testbeds.cerebras import bert_large
from labkit.testbeds.cerebras.stream import stream_command

from tests.fakes.cerebras_run import parse as modelzoo_parse

SMALL = {"batch_size": 256, "max_steps": 30, "log_steps": 10, "target": "CSX"}


def config(**values):
    merged = dict(SMALL)
    merged.update(values)
    return bert_large.SPEC.validate(merged)


def test_command_is_the_courses_run_py_csx():
    command = bert_large.modelzoo_command("configs/p.yaml", "model_dir/x", "/home/me/R_2.0.3/modelzoo/",
                                        python="python", compile_dir="me")
    assert command[:3] == ["python", "run.py", "CSX"]
    text = " ".join(command)
    for piece in ("--job_labels name=bert_pt", "--params configs/p.yaml", "--num_csx=1", "--num_workers_per_csx=1",
                  "--mode train", "--model_dir model_dir/x", "--mount_dirs /home/ /software/",
                  "--python_paths /home/me/R_2.0.3/modelzoo/", "--compile_dir me"):
        assert piece in text
    # The modelzoo's parser (flags as in its CSX command line) accepts it as given.
    args = modelzoo_parse(command[2:])
    assert (args.params, args.mode, args.num_csx, args.num_workers_per_csx) == ("configs/p.yaml", "train", 1, 1)
    assert args.mount_dirs == ["/home/", "/software/"]


def test_the_fake_run_py_parses_as_release_2_3s_parser():
    # cli_parser.py get_parser: the device is a sub-command; --model_dir is optional (its default is settled at
    # start-up), --num_workers_per_csx defaults to 1; the CSX flags exist on CSX alone
    args = modelzoo_parse(["CSX", "--params", "p.yaml", "--mode", "train"])
    assert (args.model_dir, args.num_workers_per_csx, args.num_csx) == (None, 1, 1)
    for argv in (["CPU", "--params", "p.yaml", "--mode", "train", "--num_csx", "1"],
                 ["CSX", "--params", "p.yaml", "--mode", "train", "--compile_only", "--validate_only"],
                 ["CSX", "--params", "p.yaml"]):
        with pytest.raises(SystemExit) as stopped:
            modelzoo_parse(argv)
        assert stopped.value.code == 2, argv


def test_command_rejects_zero_systems():
    with pytest.raises(ValueError, match="num_csx"):
        bert_large.modelzoo_command("p.yaml", "m", "/mz", num_csx=0)


def test_params_yaml_changes_only_the_runs_choices(fake_stack, tmp_path):
    out = tmp_path / "params.yaml"
    bert_large.write_params_yaml(config(batch_size=2048, micro_batch_size=256, seed=7), str(fake_stack.template), str(out))
    written = yaml.safe_load(out.read_text())
    original = yaml.safe_load(fake_stack.template.read_text())
    assert written["train_input"]["batch_size"] == 2048
    assert written["train_input"]["micro_batch_size"] == 256
    assert written["runconfig"]["max_steps"] == 30 and written["runconfig"]["log_steps"] == 10
    assert written["runconfig"]["checkpoint_steps"] == 30 and written["runconfig"]["seed"] == 7
    assert written["model"] == original["model"]  # "large" keeps the template's BERT-Large
    assert written["train_input"]["data_dir"] == original["train_input"]["data_dir"]
    assert written["optimizer"] == original["optimizer"]
    bert_large.write_params_yaml(config(model_size="mini"), str(fake_stack.template), str(out))
    assert yaml.safe_load(out.read_text())["model"]["num_hidden_layers"] == 4


def test_csx_without_the_stack_says_what_is_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("LABKIT_MODELZOO", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DeviceError) as info:
        bert_large.run_exercise(config())
    message = str(info.value)
    assert "cerebras_pytorch" in message and "modelzoo" in message and "target='auto'" in message
    assert list(tmp_path.iterdir()) == []  # nothing was written, nothing ran


def test_auto_picks_the_cs2_when_the_stack_is_here(fake_stack):
    chosen = bert_large.plan(config(target="auto", modelzoo_dir=str(fake_stack.modelzoo)))
    assert chosen.path == "modelzoo"
    assert chosen.stack.bert_dir == str(fake_stack.bert_dir)


def test_template_sequence_length_must_match(fake_stack):
    with pytest.raises(ParameterError, match="max_seq_length = 512"):
        bert_large.plan(config(modelzoo_dir=str(fake_stack.modelzoo), max_seq_length=512))


def test_stream_shows_lines_while_the_process_runs(fake_stack, tmp_path, monkeypatch):
    params = tmp_path / "p.yaml"
    bert_large.write_params_yaml(config(), str(fake_stack.template), str(params))
    go = tmp_path / "go"
    monkeypatch.setenv("FAKE_RUNPY_HANDSHAKE", str(go))
    seen = []

    def echo(line):
        seen.append(line)
        go.touch()  # the fake waits for this before its second line: it exits 3 if we only saw lines at the end

    command = bert_large.modelzoo_command(str(params), str(tmp_path / "md"), str(fake_stack.modelzoo), compile_dir="t")
    log = tmp_path / "run.log"
    status = stream_command(command, str(fake_stack.bert_dir), str(log), echo=echo)
    assert status == 0
    assert "Effective batch size is 256." in seen[0]
    assert log.read_text().splitlines()[1:] == seen  # the file is the echo, after the command line
    assert log.read_text().startswith("$ " + sys.executable)


def test_modelzoo_run_reads_its_metrics_from_the_log(fake_stack, tmp_path, capsys, monkeypatch):
    cfg = config(modelzoo_dir=str(fake_stack.modelzoo), model_dir=str(tmp_path / "model_dir"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")  # the notebook's folder: the params file and the log go here
    run = bert_large.run_exercise(cfg)
    out = capsys.readouterr().out
    assert "| Train Device=CSX, Step=30" in out  # streamed into the notebook
    log = run.environment["log_path"]
    assert Path(log).parent == Path(run.environment["params_path"]).parent == tmp_path / "work"
    text = Path(log).read_text()
    last_global = float(re.findall(r"GlobalRate=([\d.]+)", text)[-1])
    samples, seconds = re.search(r"Processed (\d+) sample\(s\) in ([\d.]+) seconds", text).groups()
    assert run.source == "testbed" and run.status == "complete"
    assert run.params["batch_size"] == 256
    assert run.metrics["samples_per_sec"] == last_global
    assert run.metrics["total_samples"] == int(samples) == 256 * 30
    assert run.metrics["time_per_sample"] == pytest.approx(float(seconds) / int(samples))
    assert run.series["loss"]["x"] == [10, 20, 30]
    # Each run gets its own model_dir, so checkpoint autoloading cannot resume an old run.
    checkpoints = list((tmp_path / "model_dir").glob("bs256-*/checkpoint_30.mdl"))
    assert len(checkpoints) == 1
    assert yaml.safe_load(Path(run.environment["params_path"]).read_text())["runconfig"]["max_steps"] == 30


def test_failed_modelzoo_run_is_marked_failed(fake_stack, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_RUNPY_FAIL", "1")
    cfg = config(modelzoo_dir=str(fake_stack.modelzoo), model_dir=str(tmp_path / "md"))
    monkeypatch.chdir(tmp_path)
    run = bert_large.run_exercise(cfg)
    assert run.status == "failed"
    assert any("exited with status 1" in note for note in run.notes)
