"""labkit.scaling: real torch.distributed (gloo) replicas here; PopTorch through a fake speaking its API."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pandas as pd
import pytest

from labkit import scaling

FAKE = str(Path(__file__).resolve().parent / "fake")


def test_divergence_is_nan_or_an_exploding_loss():
    assert not scaling.diverged([2.3, 2.1, 1.9])
    assert scaling.diverged([2.3, float("nan")])
    assert scaling.diverged([2.3, float("inf")])
    assert scaling.diverged([2.3, 5.0, 40.0])


def test_two_gloo_replicas_measure_throughput_after_the_first_epoch():
    row = scaling.measure(2, 32, images_per_epoch=256, epochs=2, learning_rate=0.05, device="cpu")
    assert row["status"] == "complete"
    assert row["images_per_epoch"] == 256  # 2 replicas x 4 steps x 32
    assert row["throughput"] > 0 and math.isfinite(row["first_epoch_s"])


def test_a_diverging_run_reports_no_speed():
    row = scaling.measure(1, 32, images_per_epoch=128, epochs=2, learning_rate=1e5, device="cpu")
    assert row["status"] == "diverged" and math.isnan(row["throughput"])
    table = scaling.display_table(pd.DataFrame([row]))
    assert table.iloc[0, 0] == "diverged/failed"
    run = scaling.as_run(pd.DataFrame([row]), {"learning_rate": 1e5})
    assert run.metrics["diverged"] == 1 and "not reported" in run.notes[0]


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
    row = scaling.measure(4, 8, images_per_epoch=256, epochs=2, device="ipu")
    assert ("trainingModel", 4, 1) in poptorch.CALLS
    assert ("DataLoader", 8, 32) in poptorch.CALLS  # micro-batch 8 x 4 replicas per step
    assert row["status"] == "complete" and row["images_per_epoch"] == 256 and row["throughput"] > 0


def test_reference_csv_is_checked_and_drawn_beside_local_results(tmp_path):
    good = tmp_path / "a100.csv"
    good.write_text("platform,replicas,micro_batch,throughput,status\nA100,1,128,5000,complete\nA100,2,128,9000,diverged\n")
    reference = scaling.load_reference(str(good))
    assert math.isnan(reference.loc[1, "throughput"])  # a diverged speed is no result
    bad = tmp_path / "bad.csv"
    bad.write_text("platform,replicas,throughput\nA100,1,5000\n")
    with pytest.raises(ValueError, match="missing column.*micro_batch"):
        scaling.load_reference(str(bad))
    example = scaling.load_reference(scaling.EXAMPLE_REFERENCE)
    assert set(scaling.REFERENCE_COLUMNS) <= set(example.columns) and len(example) > 0
    both = pd.concat([reference, example], ignore_index=True)
    assert "5000.0 images/s" in scaling.display_table(both).to_string()
    fig = scaling.plot_scaling(both)
    assert len(fig.axes[0].lines) >= 2
    import matplotlib.pyplot as plt

    plt.close(fig)
