"""Fall 2025 hand-ins of the CS-3 exercise: Markdown with one pasted `cszoo fit` log per batch size.

The case (tests/logs/cases/cs3-homework-batch-sizes.md, see the README there) is written in the shape of
the course's hand-ins: a heading with the batch size above each log, `<details>` and ``` fences (one
indented), a fresh compile with its `Compile estimated performance` line and the 2.6 cluster's
"client semantic version X is inconsistent with cluster server semantic version Y" warning, a cached
compile cut off after step 100, and a second fresh compile.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_handins_2025.py -q
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import labkit.logs
from labkit.grading.recompute import from_evidence
from labkit.testbeds.homework import fall2025
from labkit.exercises import metric_table as table_for
from tests.logs.conftest import CASES

MARKDOWN = CASES / "cs3-homework-batch-sizes.md"
TEXT = MARKDOWN.read_text()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _notes(run):
    return " ".join(run.notes)


def _blocks():
    """The three pasted logs, each as its lines (the fences' contents)."""
    blocks, inside = [], None
    for line in TEXT.splitlines():
        if line.strip().startswith("```"):
            if inside is None:
                inside = []
            else:
                blocks.append(inside)
                inside = None
        elif inside is not None:
            inside.append(line)
    assert len(blocks) == 3
    return blocks


def test_every_log_in_the_markdown_is_its_own_run_with_its_batch_size():
    report = labkit.logs.read(str(MARKDOWN))
    assert report.format == "cerebras" and len(report.runs) == 3, [r.params for r in report.runs]
    assert [r.params["batch_size"] for r in report.runs] == [128, 64, 256]
    assert [r.status for r in report.runs] == ["complete", "incomplete", "complete"]
    assert [r.metrics["global_rate"] for r in report.runs] == [32.44, 31.12, 33.31]
    assert [r.metrics["steps"] for r in report.runs] == [200, 100, 200]
    assert [r.environment["execute_job_id"] for r in report.runs] == [
        "wsjob-t5mwe8gcvjyh7kqnb3ardu", "wsjob-m2uc9rbn4xjfs7wvdq6tkh", "wsjob-c3jvy7ptk9wfd2mhqnb5gz"]
    for run in report.runs:
        assert run.exercise == "cerebras/llama2_7b" and table_for(run.exercise).check(run) == []
    first, cut, last = report.runs
    assert first.metrics["samples"] == 25600 and last.metrics["samples"] == 51200
    # the cut log prints no summary: its batch size is the heading's, and the note says so
    assert "samples" not in cut.metrics
    assert "64 is read from the label 'batch_size: 64' above it" in _notes(cut)
    assert "read from the label" not in _notes(first) + _notes(last)  # the log's own numbers agree with the label


def test_a_fresh_compile_stays_out_of_training_and_its_estimate_stands_beside_the_global_rate():
    first, cut, last = labkit.logs.read(str(MARKDOWN)).runs
    assert first.metrics["compile_estimated_rate"] == 34.1 and last.metrics["compile_estimated_rate"] == 35.6
    assert "compile_estimated_rate" not in cut.metrics  # a cached compile prints no estimate
    assert ("The compiler estimated 34.1 samples/s for this run and the measured GlobalRate is 32.44 samples/s, "
            "4.9% below the estimate") in _notes(first)
    assert "6.4% below the estimate" in _notes(last)
    # 01:53:32,827 Compiling the model -> 02:45:47,612 Compile was successful, less the 20 s the job queued
    assert first.metrics["compile_s"] == pytest.approx(3134.785 - 20.0, abs=1e-3)
    assert "compile_cached" not in first.metrics and cut.metrics["compile_cached"] is True
    assert "3115 s compiling" in _notes(first) and "compare runs by GlobalRate (32.44 samples/s)" in _notes(first)


def test_the_semantic_version_warning_names_both_versions():
    for run in labkit.logs.read(str(MARKDOWN)).runs:
        env = run.environment
        assert env["client_semantic_version"] == "1.1.0" and env["cluster_server_semantic_version"] == "1.1.2"
        assert "the client's semantic version 1.1.0 differs from the cluster server's 1.1.2" in _notes(run)
        assert "version ?" not in _notes(run) and "job_image_version" not in env


def test_labkit_logs_parse_shows_every_run():
    out = subprocess.run([sys.executable, "-m", "labkit.cli", "logs", "parse", str(MARKDOWN)], cwd=REPO,
                         env=dict(os.environ, PYTHONPATH=REPO), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "cerebras format, 3 runs" in out.stdout
    for number, batch in ((1, 128), (2, 64), (3, 256)):
        assert "run {}: cerebras/llama2_7b [".format(number) in out.stdout and "batch_size={}".format(batch) in out.stdout
    assert "compile_estimated_rate = 34.1 samples/s" in out.stdout


def test_logs_without_fences_or_labels_are_split_where_each_fit_begins(tmp_path):
    path = tmp_path / "mytest.log"
    path.write_text("\n".join(line.strip() for block in _blocks() for line in block) + "\n")
    runs = labkit.logs.read(str(path)).runs
    assert len(runs) == 3 and [r.metrics["global_rate"] for r in runs] == [32.44, 31.12, 33.31]
    assert runs[0].params["batch_size"] == 128 and "batch_size" not in runs[1].params  # nothing says 64 here


def test_a_sentence_or_a_warning_that_mentions_a_batch_size_splits_nothing(tmp_path):
    lines = list(_blocks()[0])
    at = next(i for i, line in enumerate(lines) if "Step=100," in line)
    lines.insert(at + 1, "UserWarning: the batch size 128 is not a multiple of the number of workers")
    path = tmp_path / "hw.md"
    path.write_text("I ran batch size 128 first, as the course suggests.\n```\n{}\n```\n".format("\n".join(lines)))
    (run,) = labkit.logs.read(str(path)).runs
    assert run.metrics["steps"] == 200 and run.series["loss"]["x"] == [50, 100, 150, 200]
    assert "label" not in _notes(run)


def test_a_log_pasted_twice_is_said_to_be_one_run(tmp_path):
    first = _blocks()[0]
    path = tmp_path / "hw.md"
    path.write_text("batch_size: 128\n```\n{0}\n```\nbatch_size: 128 again\n```\n{0}\n```\n".format("\n".join(first)))
    runs = labkit.logs.read(str(path)).runs
    assert len(runs) == 2 and runs[0].metrics == runs[1].metrics
    assert "This is run 1 again (the same execute wsjob, wsjob-t5mwe8gcvjyh7kqnb3ardu)" in _notes(runs[1])
    assert "is run 1 again" not in _notes(runs[0])


def test_a_label_the_log_contradicts_is_named_and_the_log_wins(tmp_path):
    path = tmp_path / "hw.md"
    path.write_text("**Batch size = 512**\n```\n{}\n```\n".format("\n".join(_blocks()[0])))
    (run,) = labkit.logs.read(str(path)).runs
    assert run.params["batch_size"] == 128
    assert "The label 'Batch size = 512' above this log says batch size 512, but the log's own numbers give 128" in _notes(run)


def test_an_estimate_without_steps_says_nothing_was_measured(tmp_path):
    lines = _blocks()[0]
    end = next(i for i, line in enumerate(lines) if "Compile was successful" in line)
    path = tmp_path / "compile-only.log"
    path.write_text("\n".join(lines[:end + 1]) + "\n")
    (run,) = labkit.logs.read(str(path)).runs
    assert run.metrics["compile_estimated_rate"] == 34.1 and "global_rate" not in run.metrics
    assert "no step was logged, so no measured rate stands beside it" in _notes(run)


def test_the_2025_homework_gathers_each_batch_size_and_the_grader_re_reads_each(tmp_path, monkeypatch):
    folder = tmp_path / "logs" / "cerebras"
    folder.mkdir(parents=True)
    (folder / "homework.md").write_text(TEXT)
    monkeypatch.chdir(tmp_path)
    runs = fall2025.runs_for(fall2025.SPEC.validate({}), "cerebras", verbose=False)
    assert [(r.params["batch_size"], r.params["log_run"]) for r in runs] == [(128, 0), (64, 1), (256, 2)]
    for run in runs:
        trusted = from_evidence(dict(run.params))
        assert trusted["params"]["batch_size"] == run.params["batch_size"]
        assert trusted["metrics"]["global_rate"] == run.metrics["global_rate"]


def test_one_homework_file_with_both_sections_gives_the_cs3_runs_and_the_pasted_answers(tmp_path, monkeypatch):
    answers = (CASES.parent.parent / "sambanova" / "evidence" / "metis_two_models_curl_time.txt").read_text()
    text = TEXT + "\n### SambaNova homework\n\n```console\n" + answers + "```\n"
    report = labkit.logs.read(text)
    assert report.format == "cerebras" and [r.exercise for r in report.runs] == ["cerebras/llama2_7b"] * 3 + [
        "sambanova/inference"] * 2
    assert [r.environment["log_format"] for r in report.runs] == ["cerebras"] * 3 + ["openai"] * 2
    assert [r.metrics["e2el_median"] for r in report.runs[3:]] == [pytest.approx(1.369), pytest.approx(1.030)]
    assert "This file also holds openai evidence: 2 run(s) of it were read as well." in report.notes
    # each homework section gathers its own runs from the same file, and the grader finds each again
    for testbed in ("cerebras", "sambanova"):
        (tmp_path / "logs" / testbed).mkdir(parents=True)
        (tmp_path / "logs" / testbed / "homework.md").write_text(text)
    monkeypatch.chdir(tmp_path)
    config = fall2025.SPEC.validate({})
    assert [r.params["log_run"] for r in fall2025.runs_for(config, "cerebras", verbose=False)] == [0, 1, 2]
    inference_runs = fall2025.runs_for(config, "sambanova", verbose=False)
    assert [r.params["log_run"] for r in inference_runs] == [3, 4]
    assert from_evidence(dict(inference_runs[1].params))["metrics"] == inference_runs[1].metrics


def test_a_single_log_gets_no_second_reader():
    report = labkit.logs.read(str(MARKDOWN))
    assert not any("also holds" in note for note in report.notes)
    assert {r.environment["log_format"] for r in report.runs} == {"cerebras"}


def test_pasted_answers_with_one_cs3_line_read_that_line_too():
    answers = (CASES.parent.parent / "sambanova" / "evidence" / "metis_two_models_curl_time.txt").read_text()
    step = next(line for line in _blocks()[0] if "Step=200," in line).strip()
    report = labkit.logs.read("My CS-3 run ended with\n" + step + "\n\n" + answers)
    assert report.format == "openai" and [r.exercise for r in report.runs] == ["sambanova/inference"] * 2 + [
        "cerebras/llama2_7b"]
    assert report.runs[-1].metrics["global_rate"] == 32.44
