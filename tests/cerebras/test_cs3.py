"""The CS-3 path of the LLaMA-2-7B exercise, end to end against the fake ``cszoo`` and ``csctl``.

    PYTHONPATH=$PWD python -m pytest tests/cerebras/test_cs3.py -q

The params file is written from the course's (or the modelzoo's) with only the student's
changes, the course's command is echoed and run, its log streamed and read; an interrupt cancels
the wsjob with ``csctl cancel job`` (real SIGINT to this process, and a KeyboardInterrupt raised
where the output is shown) and keeps the partial run.
"""

from __future__ import annotations

import difflib
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from labkit.testbeds.cerebras.llama2_7b import cszoo
from labkit.testbeds.cerebras.llama2_7b.cszoo import run_on_cs3
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS, read_log
from tests.cerebras.cs3_stack import PARAMS_2_6
from tests.fakes import CSZOO

SAMPLE = (Path(__file__).resolve().parent.parent / "fixtures" / "testbed-logs" / "cerebras"
          / "upstream-fall2025-llama2-7b-sample-output.log")


def _config(**changes):
    values = dict(batch_size=256, steps=20, sequence_length=None, learning_rate=None, model_size="7b",
                  log_path=None, device="CSX")
    values.update(changes)
    return SimpleNamespace(**values)


def _changed_lines(before: str, after: str):
    return [line for line in difflib.ndiff(before.splitlines(), after.splitlines()) if line[:2] in ("- ", "+ ")]


# -- the params file ---------------------------------------------------------------------------------

def test_the_course_file_is_used_when_it_exists_else_the_modelzoos(node, tmp_path):
    course = tmp_path / "software" / "params_llama2_7b.yaml"
    assert cszoo.course_params_file(course_file=str(course)) == str(node.params)
    course.parent.mkdir()
    course.write_text(PARAMS_2_6)
    assert cszoo.course_params_file(course_file=str(course)) == str(course)
    with pytest.raises(FileNotFoundError, match="does not exist .* no modelzoo with src/cerebras"):
        cszoo.course_params_file(modelzoo_dir=str(tmp_path / "nowhere"), course_file=str(tmp_path / "none.yaml"))


def test_only_the_students_changes_are_written_every_other_byte_kept(node, tmp_path):
    out = tmp_path / "out" / "params.yaml"
    edit = cszoo.write_params_yaml(str(node.params), str(out), batch_size=256, steps=20)
    after = out.read_text()
    assert _changed_lines(PARAMS_2_6, after) == [
        "-       max_steps: 200          # the course's short run (2T tokens would take 476837)",
        "+       max_steps: 20          # the course's short run (2T tokens would take 476837)",
        "-       batch_size: 1024", "+       batch_size: 256"]
    assert edit.changes == [("trainer.fit.train_dataloader.batch_size", 1024, 256), ("trainer.init.loop.max_steps", 200, 20)]
    assert edit.sequence_length == 4096 and edit.notes == []
    params = yaml.safe_load(after)
    assert params["trainer"]["fit"]["train_dataloader"]["batch_size"] == 256
    unchanged = cszoo.write_params_yaml(str(node.params), str(tmp_path / "same.yaml"), batch_size=1024, steps=200)
    assert unchanged.changes == [] and (tmp_path / "same.yaml").read_text() == PARAMS_2_6


def test_a_learning_rate_scales_the_schedule_to_its_peak(node, tmp_path):
    out = tmp_path / "lr.yaml"
    edit = cszoo.write_params_yaml(str(node.params), str(out), learning_rate=1.0e-4)
    assert edit.changes == [("learning rate schedule (peak)", 3.0e-4, 1.0e-4)]
    scheds = yaml.safe_load(out.read_text())["trainer"]["init"]["schedulers"][0]["SequentialLR"]["schedulers"]
    assert scheds[0]["LinearLR"]["end_learning_rate"] == pytest.approx(1.0e-4)
    assert scheds[1]["CosineDecayLR"]["end_learning_rate"] == pytest.approx(1.0e-5)
    assert scheds[0]["LinearLR"]["initial_learning_rate"] == 0.0 and "# peak" in out.read_text()
    assert cszoo.params_values(out.read_text())["learning_rate"] == pytest.approx(1.0e-4)


def test_a_sequence_length_the_file_cannot_take_is_kept_and_said(node, tmp_path):
    edit = cszoo.write_params_yaml(str(node.params), str(tmp_path / "a.yaml"), sequence_length=2048)
    assert edit.sequence_length == 4096 and edit.changes == []
    assert "sets no max_sequence_length" in edit.notes[0] and "keeps 4096" in edit.notes[0]
    with_key = PARAMS_2_6.replace("      batch_size: 1024\n", "      batch_size: 1024\n      max_sequence_length: 4096\n")
    source = tmp_path / "with_key.yaml"
    source.write_text(with_key)
    edit = cszoo.write_params_yaml(str(source), str(tmp_path / "b.yaml"), sequence_length=2048)
    assert edit.sequence_length == 2048
    assert edit.changes == [("trainer.fit.train_dataloader.max_sequence_length", 4096, 2048)]


def test_the_older_runconfig_layout_is_edited_too(tmp_path):
    old = ("train_input:\n    batch_size: 1024\n    max_sequence_length: 4096\noptimizer:\n"
           "    learning_rate: 0.0001\nrunconfig:\n    max_steps: 476837       # 2T tokens\n    log_steps: 100\n")
    source = tmp_path / "old.yaml"
    source.write_text(old)
    edit = cszoo.write_params_yaml(str(source), str(tmp_path / "new.yaml"), batch_size=512, steps=10,
                                   learning_rate=2e-4)
    assert [c[0] for c in edit.changes] == ["train_input.batch_size", "runconfig.max_steps", "optimizer.learning_rate"]
    assert "max_steps: 10       # 2T tokens" in (tmp_path / "new.yaml").read_text()


def test_a_file_without_the_key_is_refused_by_name(tmp_path):
    source = tmp_path / "bad.yaml"
    source.write_text("model:\n  hidden_size: 8\n")
    with pytest.raises(ValueError, match="bad.yaml: no batch_size to change .*trainer.fit.train_dataloader.batch_size"):
        cszoo.write_params_yaml(str(source), str(tmp_path / "x.yaml"), batch_size=8)


def test_the_command_is_the_courses(monkeypatch, tmp_path):
    assert cszoo.cszoo_command("configs/params_llama2_7b.yaml", "model_dir_llama2_7b") == [
        "cszoo", "fit", "configs/params_llama2_7b.yaml", "--job_labels", "name=llama2_7b",
        "--model_dir", "model_dir_llama2_7b"]
    monkeypatch.setenv("PATH", str(tmp_path))  # no csctl: the cancel is said in words
    assert cszoo.cancel_job("wsjob-abc") == (
        False, "csctl was not found on PATH: cancel the job by hand with `csctl cancel job wsjob-abc`.")


# -- the fake speaks the CLI -------------------------------------------------------------------------------

def test_the_fake_cszoo_refuses_what_the_real_cli_refuses(node):
    for argv in (["fit", str(node.params), "--num_workers_per_csx=1"], ["fit", str(node.params), "--target_device", "IPU"],
                 ["train", str(node.params)]):
        done = subprocess.run([sys.executable, str(CSZOO)] + argv, capture_output=True, text=True,
                              env=dict(os.environ))
        assert done.returncode == 2, (argv, done.stdout, done.stderr)


# -- the whole run -----------------------------------------------------------------------------------------

def test_a_run_on_the_cs3_echoes_the_command_streams_the_log_and_reads_it(node):
    said = []
    run = run_on_cs3(_config(), workdir=str(node.work), echo=said.append)
    text = "\n".join(said)
    assert "$ cd {} && cszoo fit configs/params_llama2_7b_bs256_s20_".format(node.llama) in text
    assert "--job_labels name=llama2_7b --model_dir model_dir_llama2_7b_bs256_" in text and "|& tee " in text
    assert "changed: trainer.fit.train_dataloader.batch_size 1024 -> 256, trainer.init.loop.max_steps 200 -> 20" in text
    assert run.exercise == "cerebras/llama2_7b" and run.source == "testbed" and run.status == "complete", run.notes
    rate = round(256 / (0.5 + 256 / 32.5), 2)
    m = run.metrics
    assert m["steps"] == 20 and m["global_rate"] == rate and m["samples"] == 20 * 256
    assert m["tokens_per_s"] == round(rate * 4096, 1) and run.params["sequence_length"] == 4096
    assert m["checkpoint_s"] == 464.0 and "compile_s" in m and "compile_cached" not in m  # the first compile
    assert METRICS.check(run) == []
    log = Path(run.environment["log_path"])
    assert log.parent == node.work and not log.read_text().startswith("$ ")  # the output alone, as tee writes it
    assert run.environment["wsjob_ids"][-1] == run.environment["execute_job_id"]
    assert (Path(run.environment["model_dir"]) / "checkpoint_20.mdl").exists()
    written = yaml.safe_load(Path(run.environment["params_path"]).read_text())
    assert written["trainer"]["init"]["loop"]["max_steps"] == 20 and node.params.read_text() == PARAMS_2_6

    again = run_on_cs3(_config(), workdir=str(node.work), echo=said.append)
    assert again.metrics["compile_cached"] is True and "compile_s" not in again.metrics
    assert "no compile time was measured" in " ".join(again.notes)
    assert again.metrics["global_rate"] == rate


@pytest.mark.timing
@pytest.mark.parametrize("how", ["sigint", "raise"])
def test_an_interrupt_cancels_the_wsjob_and_keeps_the_partial_run(node, monkeypatch, how):
    monkeypatch.setenv("FAKE_CSZOO_STEP_SLEEP", "0.2")
    said = []

    def echo(line):
        said.append(line)
        if "Step=50," in line:
            if how == "sigint":
                os.kill(os.getpid(), signal.SIGINT)  # as Kernel -> Interrupt does
            else:
                raise KeyboardInterrupt

    run = run_on_cs3(_config(steps=200, batch_size=64), workdir=str(node.work), echo=echo)
    job = run.environment["execute_job_id"]
    assert node.cancelled() == [job]
    assert run.status == "interrupted" and run.metrics["steps"] == 50
    assert run.stopped_at() == "step 50/200"
    assert "the wsjob {} was cancelled with csctl".format(job) in " ".join(run.notes)
    assert any(line.startswith("Cancelled {} on the cluster with `csctl cancel job {}`".format(job, job))
               for line in said)
    assert run.environment["cancelled_wsjobs"] == [job]


@pytest.mark.timing
def test_without_csctl_the_interrupt_says_how_to_cancel_by_hand(node, monkeypatch):
    (node.bin / "csctl").unlink()
    monkeypatch.setenv("FAKE_CSZOO_STEP_SLEEP", "0.2")

    def echo(line):
        if "Step=50," in line:
            raise KeyboardInterrupt

    result = cszoo.run_cszoo(cszoo.cszoo_command(str(node.params)), str(node.llama), str(node.work / "x.log"),
                             steps=200, echo=lambda line: echo(line))
    assert result.interrupted and result.cancelled == []
    assert "cancel the job by hand with `csctl cancel job {}`".format(result.job_ids[-1]) in result.messages[0]


def test_a_failed_run_is_failed_with_its_numbers(node, monkeypatch):
    monkeypatch.setenv("FAKE_CSZOO_FAIL_AFTER", "100")
    run = run_on_cs3(_config(steps=200), workdir=str(node.work), echo=lambda line: None)
    assert run.status == "failed" and run.metrics["steps"] == 100 and run.metrics["global_rate"] > 0
    assert "cszoo exited with status 1" in " ".join(run.notes)


def test_missing_cszoo_or_modelzoo_is_refused_with_the_courses_fix(node, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="cszoo is not on PATH: source ~/R_2.10.0/venv_cerebras_pt") as refused:
        run_on_cs3(_config(), workdir=str(node.work))
    assert "python3.11 -m venv venv_cerebras_pt" in str(refused.value)
    with pytest.raises(FileNotFoundError, match="mkdir ~/R_2.10.0; .*git checkout Release_2.10.0; .*pip install -e "
                                                "modelzoo"):
        run_on_cs3(_config(), modelzoo_dir=str(tmp_path / "nowhere"))


def test_a_params_file_whose_data_is_missing_is_refused_before_cszoo_runs(node):
    # the modelzoo's own params file names ./shuffled/... data that a node without it does not have
    node.data.rmdir()
    with pytest.raises(FileNotFoundError, match=r"params_llama2_7b.yaml: trainer.fit.train_dataloader.data_dir = "
                                                r"./shuffled/llama_v2_data_test/val does not exist \(seen from .*llama, "
                                                r"where cszoo runs\).*set params_template"):
        run_on_cs3(_config(), workdir=str(node.work), echo=lambda line: None)
    assert not (node.state / "jobs.json").exists() and list(node.work.iterdir()) == []


# -- reading a log for the exercise -----------------------------------------------------------------------

def test_the_course_sample_read_for_the_exercise_gives_tokens_per_second_from_the_config():
    run = read_log(str(SAMPLE), _config(sequence_length=4096, batch_size=1024))
    assert run.exercise == "cerebras/llama2_7b" and run.metrics["global_rate"] == 31.99
    assert run.metrics["tokens_per_s"] == round(31.99 * 4096, 1)
    notes = " ".join(run.notes)
    assert "the sequence length of the config" in notes and "does not give the sequence length" not in notes
    assert METRICS.check(run) == []
    bare = read_log(str(SAMPLE))
    assert "tokens_per_s" not in bare.metrics and "does not give the sequence length" in " ".join(bare.notes)


def test_reading_a_missing_log_names_the_parameter(tmp_path):
    with pytest.raises(FileNotFoundError, match="log_path = .*no such file"):
        read_log(str(tmp_path / "nope.log"))


def test_none_keeps_the_courses_file_and_a_short_run_still_logs_its_rate(node):
    run = run_on_cs3(_config(batch_size=None, steps=None), workdir=str(node.work), echo=lambda line: None)
    assert run.environment["params_changes"] == []
    assert Path(run.environment["params_path"]).read_text() == PARAMS_2_6
    assert run.params["batch_size"] == 1024 and run.params["steps"] == 200 and run.metrics["steps"] == 200
    assert run.series["loss"]["x"] == [50, 100, 150, 200]
    short = run_on_cs3(_config(steps=20, log_steps=None, seed=7), workdir=str(node.work), echo=lambda line: None)
    assert ["trainer.init.logging.log_steps", 50, 20] in short.environment["params_changes"]
    assert ["trainer.init.seed", 1, 7] in short.environment["params_changes"]
    assert "the file's 50 is more than the 20 steps" in " ".join(short.notes)
    assert short.series["loss"]["x"] == [20]


# -- the cluster: CS-3 count, time limit, restart, release ---------------------------------------------------

def test_num_csx_job_time_and_checkpoint_reach_the_command_and_the_params_file(node):
    first = run_on_cs3(_config(), workdir=str(node.work), echo=lambda line: None)
    checkpoint = Path(first.environment["model_dir"]) / "checkpoint_20.mdl"
    said = []
    run = run_on_cs3(_config(steps=40, num_csx=2, job_time_sec=7200, checkpoint_path=str(checkpoint)),
                     workdir=str(node.work), echo=said.append)
    command = run.environment["command"]
    assert command[-2:] == ["--num_csx=2", "--checkpoint_path={}".format(checkpoint)]
    assert "Preparing to execute using 2 CSX" in Path(run.environment["log_path"]).read_text()
    assert run.status == "complete" and run.metrics["steps"] == 40 and run.metrics["samples"] == 20 * 256
    assert run.params["num_csx"] == 2
    written = Path(run.environment["params_path"]).read_text()
    assert yaml.safe_load(written)["trainer"]["init"]["backend"] == {
        "backend_type": "CSX", "cluster_config": {"job_time_sec": 7200}}
    assert ["job_time_sec", None, 7200] in run.environment["params_changes"]
    # the limit was added under the file's backend (its two lines); every other line is the course file's
    added = [line for line in written.splitlines() if line.strip() in ("cluster_config:", "job_time_sec: 7200")]
    assert added == ["      cluster_config:", "        job_time_sec: 7200"]
    assert first.environment["command"][-1] == "--num_csx=1"


def test_a_venv_of_another_release_fails_in_one_sentence_with_alcfs_commands(node, monkeypatch):
    monkeypatch.setenv("FAKE_CSZOO_CLIENT_RELEASE", "2.6.0")
    said = []
    run = run_on_cs3(_config(), workdir=str(node.work), echo=said.append)
    sentence = ("The CS-3 cluster (CLUSTER_SERVER) runs release 2.10.0 and this venv's client is 2.6.0, so the "
                "appliance refused the job: make a venv of release 2.10.0 (mkdir ~/R_2.10.0; cd ~/R_2.10.0; git clone "
                "https://github.com/Cerebras/modelzoo.git; cd modelzoo; git checkout Release_2.10.0; cd ..; "
                "python3.11 -m venv venv_cerebras_pt; source venv_cerebras_pt/bin/activate; pip install -e modelzoo) "
                "and run from it.")
    assert run.status == "failed" and sentence in run.notes and sentence in said
