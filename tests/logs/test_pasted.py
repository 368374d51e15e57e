"""What students paste: one summary line, text wrapped by a PDF or a narrow terminal, a log
whose first header was cut off. Inputs are in tests/logs/cases/ (see its README), written from
the real formats in ../shared/fixtures/testbed-logs.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_pasted.py -q
"""

from __future__ import annotations

import math

import pytest

import labkit.logs
from labkit.logs.text import unwrap
from tests.logs.conftest import CASES


def _one(name):
    report = labkit.logs.read(CASES / name)
    assert len(report.runs) == 1, (report.notes, [r.to_dict() for r in report.runs])
    return report.format, report.runs[0], " ".join(report.runs[0].notes)


@pytest.mark.parametrize("name, samples, seconds, per_s", [
    ("pasted-cerebras-summary-stamped.log", 1024000, 209.623264503, 4884.95),
    ("pasted-cerebras-summary-bare.log", 2048000, 359.967711699, 5689.4),
])
def test_a_lone_cerebras_summary_line_gives_samples_per_second(name, samples, seconds, per_s):
    fmt, run, notes = _one(name)
    assert fmt == "cerebras" and run.status == "complete"
    assert run.metrics["samples"] == samples and run.metrics["train_seconds"] == seconds
    assert run.metrics["samples_per_s"] == pytest.approx(samples / seconds, abs=0.01) == per_s
    assert "samples/s = {} / {}".format(samples, seconds) in notes
    assert "not the time per sample" in notes and "Only the summary line was given" in notes
    assert "wall_s" not in run.metrics  # one time stamp is no duration


def test_the_same_line_as_text_not_a_file():
    report = labkit.logs.read("Processed 512000 sample(s) in 174.285041622 seconds.")
    assert report.format == "cerebras" and report.run.metrics["samples_per_s"] == pytest.approx(512000 / 174.285041622, abs=0.01)


def test_a_lone_sambanova_summary_line_claims_nothing_it_cannot_know():
    fmt, run, notes = _one("pasted-sambanova-summary.log")
    assert fmt == "sambanova" and run.status == "complete"
    assert run.metrics["e2e_train_time"] == 449.95112800598145
    assert run.metrics["training_sequences_per_second"] == 588431.5507182823
    assert "Only the e2e summary line was given" in notes and "not the time per step" in notes
    assert "compile_skipped" not in run.metrics and "compilation was skipped" not in notes
    assert "ranks_seen" not in run.metrics


def test_a_lone_groq_table_row_is_read_in_groqflows_column_order():
    fmt, run, notes = _one("pasted-groq-row.log")
    assert fmt == "groq" and run.exercise == "groq/bert_tiny" and run.status == "complete"
    assert run.metrics["groq_accuracy"] == 77.47 and run.metrics["groq_e2e_ips"] == 17147.76
    assert run.metrics["groq_onchip_latency_ms"] == 0.03 and run.metrics["groq_onchip_ips"] == 32358.97
    assert "without their header" in notes and "no CPU-vs-GroqChip comparison" in notes


def test_a_lone_minilm_row_is_told_by_its_spearman_cell():
    report = labkit.logs.read("|  groq  |  0.8204  |  0.47  |  2144.87  |  0.38  |  2620.58  |")
    assert report.run.exercise == "groq/minilm" and report.run.metrics["groq_spearman"] == 0.8204


def test_a_lone_tqdm_epochs_line_takes_the_precise_s_per_it_and_says_so():
    fmt, run, notes = _one("pasted-tqdm-epochs.log")
    assert fmt == "graphcore" and run.exercise == "graphcore/mnist"
    assert run.metrics["total_train_time"] == 123
    assert run.metrics["mean_epoch_time"] == 12.31  # not 123 / 10 = 12.3
    assert "tqdm's s/it" in notes and "02:03 / 10 epochs gives 12.3 s" in notes
    assert run.status == "incomplete" and "Only the Epochs progress bar was given" in notes
    assert "test_accuracy" not in run.metrics


def test_s_per_it_that_disagrees_with_the_clock_is_not_used():
    report = labkit.logs.read("Epochs: 100%|██████████| 10/10 [02:03<00:00, 15.02s/it]")
    run = report.run
    assert run.metrics["mean_epoch_time"] == 12.3
    assert "moving average" in " ".join(run.notes)


def test_a_nan_that_only_appears_after_a_wrap_is_still_divergence():
    fmt, run, notes = _one("keras-wrapped-nan.log")
    assert fmt == "keras" and run.status == "diverged"
    assert math.isnan(run.metrics["loss"]) and "epoch 3" in notes
    # the number split from its unit ("8" / "ms/step") is read too: every epoch has a step time
    assert run.series["loss"]["x"] == [1, 2, 3]
    fmt, run, notes = _one("cerebras-wrapped-nan.log")
    assert fmt == "cerebras" and run.status == "diverged" and "NaN at logged step 2" in notes
    assert run.metrics["global_rate"] == 4884.95 and run.metrics["train_seconds"] == 209.623264503


def test_a_keras_log_with_its_first_header_cut_off_is_one_run_of_three_epochs():
    report = labkit.logs.read(CASES / "keras-header-cut.log")
    assert len(report.runs) == 1
    run = report.run
    assert run.status == "complete" and run.params["epochs"] == 3
    assert run.series["loss"]["x"] == [1, 2, 3] and run.series["loss"]["y"] == [0.2938, 0.0911, 0.0654]
    assert "first 'Epoch 1/3' header (cut off" in " ".join(run.notes)


def test_unwrap_joins_only_the_broken_shapes():
    lines = ["Epoch 1/3", "loss:", "nan - x", "2024-04-05 INFO:", "2024-04-05 16:21:58,093 y", "Loss=", "7.1, Rate=3",
             "in 209.62", "seconds.", "[02:03<00:00,", "12.31s/it]", "Training Metrics:", "global_batch_size: 16"]
    assert list(unwrap(lines)) == ["Epoch 1/3", "loss: nan - x", "2024-04-05 INFO:", "2024-04-05 16:21:58,093 y",
                                   "Loss=7.1, Rate=3", "in 209.62 seconds.", "[02:03<00:00, 12.31s/it]",
                                   "Training Metrics:", "global_batch_size: 16"]
