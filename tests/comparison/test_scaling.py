"""labkit.testbeds.comparison.study: real torch.distributed (gloo) replicas here; PopTorch through the
fake written from PopTorch's source (tests/fakes/poptorch)."""

from __future__ import annotations

import math
import os

import pandas as pd
import pytest

from labkit.divergence import loss_divergence
from labkit.testbeds import comparison
from labkit.testbeds.comparison import study as scaling
from tests.fakes import import_poptorch


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
    assert scaling.allowed_replicas([1, 3, 16], "ipu") == [1, 3, 16]  # PopTorch decides on IPUs; 3 gets a row why
    with pytest.raises(ValueError, match="at least 2"):
        scaling.measure(1, 10, epochs=1, device="cpu")


def test_ipu_replication_goes_through_poptorch_replication_factor(monkeypatch):
    poptorch = import_poptorch(monkeypatch, system_ipus=4)
    row = scaling.measure(4, 8, images_per_epoch=256, epochs=2, device="ipu", model="small")
    calls = poptorch.CALLS
    assert calls.index("replicationFactor(4)") < calls.index("trainingModel") and "deviceIterations(1)" in calls
    assert "DataLoader(batch_size=8, combined=32)" in calls  # micro-batch 8 x 4 replicas per step
    assert calls[-1] == "trainingModel.detachFromDevice" and not poptorch._held
    assert row["status"] == "complete" and row["images_per_epoch"] == 256 and row["throughput"] > 0
    assert len(row["losses"]) == 2 * 8 and row["platform"] == "local ipu"


def test_the_ipu_study_at_its_defaults_keeps_every_row_and_explains_those_it_cannot_run(monkeypatch):
    """An IPU-POD16 and the study's defaults (replicas 1-16, micro-batches 10-512, 2,048 images an
    epoch; the small model, for time): 8 x 512, 16 x 256 and 16 x 512 need more images a step than
    an epoch has. Their rows say so, nothing is compiled for them, and every other row is measured."""
    poptorch = import_poptorch(monkeypatch, system_ipus=16)
    defaults = comparison.SPEC.validate({})
    table = scaling.study(defaults.replicas, defaults.micro_batch_sizes, defaults.images_per_epoch, defaults.epochs,
                          device="ipu", model="small")
    assert len(table) == 20
    not_run = table[table["status"] == "too few images"]
    assert list(zip(not_run["replicas"], not_run["micro_batch"])) == [(8, 512), (16, 256), (16, 512)]
    assert not_run["note"].iloc[0] == ("micro-batch 512 x 8 replica(s) = 4,096 images a step, more than the 2,048 "
                                       "images per epoch: PopTorch's DataLoader gives no batch, so nothing is "
                                       "compiled or timed")
    assert not_run["throughput"].isna().all()
    measured = table[table["status"] != "too few images"]
    assert len(measured) == 17 and (measured["throughput"] > 0).all()
    assert poptorch.CALLS.count("trainingModel") == 17  # none made for the three
    assert not poptorch._held


def test_a_replica_count_ipus_cannot_run_gets_a_row_before_anything_compiles(monkeypatch):
    poptorch = import_poptorch(monkeypatch, system_ipus=4)
    table = scaling.study([1, 3], [32], images_per_epoch=128, epochs=2, device="ipu", model="small")
    assert table["status"].tolist() == ["complete", "cannot run"]
    assert table["note"].iloc[1] == ("3 replicas: PopTorch reserves IPUs in powers of 2 and refuses to compile for 3 "
                                     "(one IPU a replica: it would have to reserve 4); use 1, 2, 4, 8, 16...")
    assert "replicationFactor(3)" not in poptorch.CALLS  # found before PopTorch was asked
    plan = comparison.plan(comparison.SPEC.validate({"device": "ipu", "replicas": [1, 3, 8, 16]}))
    assert "Replicas [3]: not a power of 2, which PopTorch refuses to compile; their rows say so." in plan.more
    assert ("Replicas x micro-batch 8 x 512, 16 x 256, 16 x 512: more images a step than the 2,048 per epoch, so "
            "PopTorch's DataLoader gives no batch; their rows say so, nothing is compiled for them.") in plan.more


def test_a_configuration_poptorch_fails_gets_a_row_with_its_error_and_the_study_goes_on(monkeypatch):
    """Two IPUs: four replicas fail to acquire theirs when they compile. The row carries PopTorch's
    message (not a detach error hiding it), the rows before and after it are measured."""
    poptorch = import_poptorch(monkeypatch, system_ipus=2)
    table = scaling.study([1, 4, 2], [32], images_per_epoch=128, epochs=2, device="ipu", model="small")
    assert table["status"].tolist() == ["complete", "failed", "complete"]
    assert table["note"].iloc[1] == ("PopTorch: Failed to acquire 4 IPU(s); No device found on the system with 4 "
                                     "IPUs: the configuration needs changing")
    assert math.isnan(table["throughput"].iloc[1]) and not poptorch._held


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
