"""labkit.testbeds.comparison.study: real torch.distributed (gloo) replicas here; PopTorch through a fake
speaking its API."""

from __future__ import annotations

import math
import os
import sys

import pandas as pd
import pytest

from labkit.divergence import loss_divergence
from labkit.testbeds.comparison import study as scaling
from tests.fakes import POPTORCH

FAKE = str(POPTORCH)


def test_two_gloo_replicas_measure_throughput_after_the_first_epoch():
    row = scaling.measure(2, 32, images_per_epoch=256, epochs=2, learning_rate=0.05, device="cpu", model="small")
    assert row["status"] == "complete" and row["note"] == "" and row["model"] == "small"
    assert row["images_per_epoch"] == 256  # 2 replicas x 4 steps x 32
    assert row["throughput"] > 0 and math.isfinite(row["first_epoch_s"])
    assert row["throughput"] == pytest.approx(256 / row["epoch_s"])
    assert len(row["losses"]) == 2 * 4 and row["final_loss"] == row["losses"][-1]  # rank 0: 4 steps an epoch
    assert row["losses"][-1] < row["losses"][0]  # the small model learns the bars


def test_a_diverging_run_is_marked_and_keeps_its_measured_speed():
    row = scaling.measure(1, 32, images_per_epoch=128, epochs=2, learning_rate=1e5, device="cpu", model="small")
    assert row["status"] == "diverged" and row["note"] == "diverged: " + loss_divergence(row["losses"])
    assert row["throughput"] > 0  # measured, as in the published table, but not of a useful training
    assert len(row["losses"]) == 2 * 4  # a NaN loss does not stop the epoch: its time stays comparable
    table = scaling.display_table(pd.DataFrame([row]))
    assert table.iloc[0, 0].endswith("images/s (diverged)")
    run = scaling.as_run(pd.DataFrame([row]), {"learning_rate": 1e5})
    assert run.metrics["diverged"] == 1 and math.isnan(run.metrics["best_throughput"])
    assert "micro-batch 32: diverged: loss" in run.notes[0]
    assert run.series["loss_r1_mb32"]["y"][:1] == row["losses"][:1]


def test_replicas_beyond_this_hardware_are_skipped():
    cpus = os.cpu_count() or 1
    assert scaling.allowed_replicas([1, cpus, cpus + 1, 10 ** 6], "cpu") == [1, cpus]
    assert scaling.allowed_replicas([1, 16], "ipu") == [1, 16]  # PopTorch decides on IPUs
    with pytest.raises(ValueError, match="at least 2"):
        scaling.measure(1, 10, epochs=1, device="cpu")


def test_ipu_replication_goes_through_poptorch_replication_factor(monkeypatch):
    monkeypatch.syspath_prepend(FAKE)
    monkeypatch.delitem(sys.modules, "poptorch", raising=False)
    import poptorch

    poptorch.CALLS.clear()
    row = scaling.measure(4, 8, images_per_epoch=256, epochs=2, device="ipu", model="small")
    calls = poptorch.CALLS
    assert calls.index("replicationFactor(4)") < calls.index("trainingModel") and "deviceIterations(1)" in calls
    assert "DataLoader(batch_size=8, combined=32)" in calls  # micro-batch 8 x 4 replicas per step
    assert calls[-1] == "_TrainingModel.detachFromDevice"
    assert row["status"] == "complete" and row["images_per_epoch"] == 256 and row["throughput"] > 0
    assert len(row["losses"]) == 2 * 8 and row["platform"] == "local ipu"


def test_a_reference_csv_replaces_the_published_one_and_is_tabled_beside_local_results(tmp_path):
    good = tmp_path / "a100.csv"
    good.write_text("platform,replicas,micro_batch,throughput,status\nA100,1,128,5000,complete\nA100,2,128,9000,diverged\n")
    reference = scaling.load_reference(str(good))
    assert reference["throughput"].tolist() == [5000.0, 9000.0]  # a diverged run keeps its measured speed
    assert reference["status"].tolist() == ["complete", "diverged"] and reference["note"].tolist() == ["", ""]
    example = scaling.load_reference(scaling.EXAMPLE_REFERENCE)  # the CI example stays available
    assert set(scaling.REFERENCE_COLUMNS) <= set(example.columns) and len(example) > 0
    both = pd.concat([reference, example], ignore_index=True)
    text = scaling.display_table(both).to_string()
    assert "5000.0 images/s" in text and "9000.0 images/s (diverged)" in text


@pytest.mark.parametrize("text, expected", [
    ("platform,replicas,throughput\nA100,1,5000\n", "missing column.*micro_batch"),
    ("platform,replicas,micro_batch,throughput\nA100,0,10,5000\n", "column replicas must hold whole numbers >= 1; line.s. 2"),
    ("platform,replicas,micro_batch,throughput\nA100,1,10,5000\nA100,2,1.5,9000\n",
     "column micro_batch must hold whole numbers >= 1; line.s. 3"),
    ("platform,replicas,micro_batch,throughput\nA100,1,10,fast\n", "column throughput must hold images/s.*line.s. 2"),
    ("platform,replicas,micro_batch,throughput\nA100,1,10,-3\n", "column throughput must hold images/s.*line.s. 2"),
])
def test_a_bad_reference_csv_is_refused_with_the_file_column_and_line(tmp_path, text, expected):
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(ValueError, match="reference_csv {}: {}".format(".*bad.csv", expected)):
        scaling.load_reference(str(bad))
    assert bad.read_text() == text  # nothing lost
    with pytest.raises(FileNotFoundError, match="reference_csv .*nowhere.csv: no such file"):
        scaling.load_reference(str(tmp_path / "nowhere.csv"))
