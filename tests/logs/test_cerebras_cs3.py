"""The CS-3 (modelzoo 2.6, ``cszoo fit``) log format, read from the course's real sample and variants of it.

The sample (tests/fixtures/testbed-logs/cerebras/upstream-fall2025-llama2-7b-sample-output.log, see
SOURCES.md there) is a whole run; the variants are made from its own lines: cut after the first
report, a fresh compile in place of the cached one, pasted fragments and single lines, the
warning removed, Markdown indentation, the progress-bar lines other 2.6 samples show.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_cerebras_cs3.py -q
"""

from __future__ import annotations

from pathlib import Path

import pytest

import labkit.logs
from labkit.exercises import metric_table as table_for

SAMPLE = (Path(__file__).resolve().parent.parent / "fixtures" / "testbed-logs" / "cerebras"
          / "upstream-fall2025-llama2-7b-sample-output.log")
LINES = SAMPLE.read_text().splitlines()


def _read(lines, tmp_path, name="pasted.log"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return labkit.logs.read(str(path))


def _notes(run):
    return " ".join(run.notes)


def test_the_course_sample_gives_its_steps_loss_rates_and_processed_line():
    report = labkit.logs.read(str(SAMPLE))
    assert report.format == "cerebras" and len(report.runs) == 1
    run = report.run
    assert run.exercise == "cerebras/llama2_7b" and run.status == "complete"
    m = run.metrics
    assert m["steps"] == 200 and m["final_loss"] == 6.09834
    assert m["global_rate"] == 31.99 and m["last_rate"] == 31.97
    assert m["samples"] == 204800 and m["train_seconds"] == 7303.586917439
    assert m["samples_per_s"] == round(204800 / 7303.586917439, 2) == 28.04
    assert run.series["loss"]["x"] == [50, 100, 150, 200]
    assert run.series["loss"]["y"] == [7.67126, 7.05889, 6.53423, 6.09834]
    assert run.series["global_rate"]["y"] == [31.97, 31.98, 31.98, 31.99]
    assert run.params["batch_size"] == 1024  # 204800 / 200: the log prints no batch size
    assert table_for(run.exercise).check(run) == []


def test_the_sample_times_staging_and_the_checkpoint_apart_from_training():
    run = labkit.logs.read(str(SAMPLE)).run
    m = run.metrics
    assert m["checkpoint_s"] == pytest.approx(464.466)      # 16:40:05,450 -> 16:47:49,916
    assert m["staging_s"] == pytest.approx(283.551)         # Preparing to execute -> Appliance staging is complete
    assert m["execute_queue_s"] == pytest.approx(20.021)
    notes = _notes(run)
    # the Processed seconds hold more than the 6402.7 s of steps: the note says so and points to GlobalRate
    assert "the steps ran 6403 s" in notes and "the other 901 s are not training" in notes
    assert "464 s saving checkpoints" in notes and "compare runs by GlobalRate (31.99 samples/s)" in notes
    assert "is the whole training time" not in notes


def test_the_cached_compile_records_no_compile_time_and_says_so():
    run = labkit.logs.read(str(SAMPLE)).run
    assert run.metrics["compile_cached"] is True
    assert "compile_s" not in run.metrics and "compile_queue_s" not in run.metrics
    assert "no compile time was measured and none is recorded (not 0 s)" in _notes(run)
    assert run.environment["compile_hash"] == "cs_16053036657376785725"


def test_wsjob_ids_versions_and_the_inconsistent_version_warning():
    run = labkit.logs.read(str(SAMPLE)).run
    env = run.environment
    assert env["execute_job_id"] == "wsjob-kgqvqqxnp9zvpmwulcbxuj"
    assert env["execute_workflow_id"] == "wflow-cxj2gwf7idcfanryokatnn"
    assert env["job_image_version"] == "2.5.1-202507111115-6-48e76807"
    assert env["cluster_server_version"].startswith("3.0.1-202508200300")
    assert "InconsistentVersion" in _notes(run)
    assert env["checkpoints"] == ["model_dir_llama2_7b/checkpoint_200.mdl"]


def test_without_the_warning_there_is_no_version_note(tmp_path):
    run = _read([line for line in LINES if "InconsistentVersion" not in line], tmp_path).run
    assert "InconsistentVersion" not in _notes(run) and "job_image_version" not in run.environment


def test_the_missing_sequence_length_is_said_and_a_logged_one_is_read(tmp_path):
    run = labkit.logs.read(str(SAMPLE)).run
    assert "sequence_length" not in run.params and "does not give the sequence length" in _notes(run)
    lines = ["2025-10-13 14:47:30,000 INFO:   train_dataloader: max_sequence_length: 2048"] + LINES
    run = _read(lines, tmp_path, "mytest.log").run
    assert run.params["sequence_length"] == 2048 and "sequence length" not in _notes(run)
    assert run.metrics["tokens_per_s"] == round(31.99 * 2048, 1) and table_for(run.exercise).check(run) == []


def test_a_run_that_stopped_after_its_first_report_keeps_its_rate_as_incomplete(tmp_path):
    first = next(i for i, line in enumerate(LINES) if "Step=50," in line)
    run = _read(LINES[:first + 1], tmp_path, "llama2_7b_bs1024.log").run
    assert run.status == "incomplete"
    assert run.metrics["global_rate"] == 31.97 and run.metrics["steps"] == 50 and run.metrics["final_loss"] == 7.67126
    assert "stopped after its first report (step 50)" in _notes(run)
    assert "samples" not in run.metrics and "checkpoint_s" not in run.metrics
    assert run.exercise == "cerebras/llama2_7b"  # from the file name: the cut log never names the model
    assert "read from the file name" in _notes(run)


def test_a_fresh_compile_is_timed_and_not_called_cached(tmp_path):
    fresh = [
        "2025-10-13 14:20:00,000 INFO:   Compiling the model. This may take a few minutes.",
        "2025-10-13 14:20:01,000 INFO:   Initiating a new compile wsjob against the cluster server.",
        "2025-10-13 14:20:01,050 INFO:   Job id: wsjob-freshcompile0000000000, workflow id: wflow-cxj2gwf7idcfanryokatnn,"
        " namespace: job-operator, remote log path: /n1/wsjob/workdir/job-operator/wsjob-freshcompile0000000000",
        "2025-10-13 14:21:01,050 INFO:   Poll ingress status: Waiting for job running, current job status: Queueing",
        "2025-10-13 14:22:01,050 INFO:   Poll ingress status: Waiting for job ingress readiness.",
        "2025-10-13 14:25:00,000 INFO:   Exploring floorplans",
        "2025-10-13 14:47:41,091 INFO:   Compile artifacts successfully written to remote compile directory. "
        "Compile hash is: cs_16053036657376785725",
    ]
    lines = fresh + [line for line in LINES if "Found existing cached compile" not in line
                     and "Compile artifacts" not in line]
    run = _read(lines, tmp_path, "llama.log").run
    assert "compile_cached" not in run.metrics
    assert run.metrics["compile_queue_s"] == pytest.approx(120.0)   # job id -> first poll not queueing
    assert run.metrics["compile_s"] == pytest.approx(27 * 60 + 46.918 - 120.0, abs=1e-3)
    assert run.environment["compile_job_id"] == "wsjob-freshcompile0000000000"
    assert run.environment["execute_job_id"] == "wsjob-kgqvqqxnp9zvpmwulcbxuj"
    assert "cached" not in _notes(run)
    assert "(compile job 120 s, execute job 20 s)" in _notes(run)


def test_markdown_indentation_and_other_2_6_decorations_read_the_same(tmp_path):
    decorated = []
    for line in LINES:
        decorated.append("  " + line.replace("TimeRemaining=", "TimeRemaining>"))
        if "Saving checkpoint at step" in line:
            decorated.append("Saving checkpoint: 100%|\u2588\u2588\u2588\u2588| 1321/1321 [07:44<00:00, 2.84 tensors/s]")
    run = _read(decorated, tmp_path).run
    whole = labkit.logs.read(str(SAMPLE)).run
    for name in ("steps", "final_loss", "global_rate", "samples", "train_seconds", "checkpoint_s", "staging_s"):
        assert run.metrics[name] == whole.metrics[name], name


def test_a_cut_log_that_names_no_model_is_the_course_llama_by_its_2_6_train_lines(tmp_path):
    first = next(i for i, line in enumerate(LINES) if "Step=50," in line)
    run = _read(LINES[:first + 1], tmp_path, "mytest.log").run
    assert run.exercise == "cerebras/llama2_7b" and run.status == "incomplete"
    assert run.metrics["global_rate"] == 31.97
    assert "read as the course's LLaMA-2-7B" in _notes(run)
    # a CS-2 line (no LoopTimeRemaining) is not taken for the CS-3 exercise
    cs2 = "| Train Device=CSX, Step=100, Loss=7.5, Rate=1000.0 samples/sec, GlobalRate=1000.0 samples/sec"
    assert labkit.logs.read(cs2).run.exercise != "cerebras/llama2_7b"


def test_pasted_train_lines_alone_give_the_curve_and_the_rate(tmp_path):
    report = _read([line for line in LINES if "Train Device" in line], tmp_path)
    assert report.format == "cerebras"
    run = report.run
    assert run.metrics["steps"] == 200 and run.metrics["global_rate"] == 31.99 and run.status == "incomplete"


@pytest.mark.parametrize("keep", ["Step=150,", "Processed 204800 training"])
def test_a_single_line_is_a_run(keep):
    line = next(line for line in LINES if keep in line)
    report = labkit.logs.read(line)
    assert report.format == "cerebras", report.notes
    run = report.run
    if "Processed" in keep:
        assert run.metrics["samples"] == 204800 and run.metrics["train_seconds"] == 7303.586917439
        assert run.status == "complete"
    else:
        assert run.metrics["global_rate"] == 31.98 and run.metrics["steps"] == 150
        assert "first report" in _notes(run)  # one report of a run that did not end in this text


def test_the_bare_processed_line_without_time_stamp_is_read():
    report = labkit.logs.read("Processed 204800 training sample(s) in 7303.586917439 seconds.")
    assert report.format == "cerebras" and report.run.metrics["samples_per_s"] == 28.04
