"""Which MNIST runs are diverged and which are complete, and the words each gets.

    PYTHONPATH=$PWD python -m pytest tests/graphcore/test_verdicts.py -q

The saturated and the slow cases are real short runs on the real MNIST (../shared/data/mnist,
when present; else the sample shipped with labkit). A double-softmax loss is bounded (1.46 to
2.46), so no learning rate makes a real run of this network NaN or explode: those two cases
are real Runs with such a loss series, judged by the same code.

The issue suggested 0.5 for the saturated case; measured here, 0.5 *learns* in one short epoch
(47 % after 100 updates, 57 % after 200, with loss below ln 10), so the saturated case uses 3,
the rate of the student log in ../shared that ended at 10.10 %.
"""

from __future__ import annotations

import pytest
import torch

from labkit.results import Run
from labkit.testbeds import graphcore
from labkit.testbeds.graphcore.train import train
from labkit.testbeds.graphcore.record import judge


def _short_run(learning_rate: float):
    config = graphcore.SPEC.validate({
        "learning_rate": learning_rate, "epochs": 1, "max_train_samples": 400, "max_test_samples": 160,
        "device_iterations": 10, "device": "cpu", "seed": 0})
    return train(config, torch.device("cpu"), verbose=False)


def _made_run(losses, accuracy=11.0):
    run = Run("graphcore/mnist", params={"learning_rate": 0.03, "epochs": 1})
    run.add_metric("test_accuracy", accuracy, "%")
    run.add_series("loss", list(range(1, len(losses) + 1)), losses)
    return run


@pytest.fixture(scope="module")
def saturated():
    return _short_run(3.0)


@pytest.fixture(scope="module")
def slow():
    return _short_run(0.001)


def test_a_nan_loss_is_diverged_and_says_where():
    run = _made_run([2.30, 2.29, float("nan"), float("nan")])
    judge(run, updates=40, learning_rate=0.03)
    assert run.status == "diverged"
    assert run.notes == ["The loss became NaN at step 3 of 4: the run diverged; later numbers mean nothing. "
                         "Lower the learning rate."]


def test_an_exploding_loss_is_diverged():
    run = _made_run([2.30, 4.1, 19.0, 160.0])
    judge(run)
    assert run.status == "diverged" and "rose from 2.3 to 160" in run.notes[0] and "exploding" in run.notes[0]


def test_a_high_rate_saturates_near_chance_and_is_complete_with_the_evidence(saturated):
    assert saturated.status == "complete"
    assert saturated.metrics["test_accuracy"] < 20.0
    losses = saturated.series["loss"]["y"]
    assert min(losses[len(losses) // 2:]) > 2.3026  # above a uniform guess all through the second half
    note = [n for n in saturated.notes if "near chance" in n]
    assert len(note) == 1, saturated.notes
    for words in ("did not diverge", "counts in comparisons", "50 weight updates at learning rate 3",
                  "above ln 10", "saturated", "lower the learning rate", "more epochs will not help"):
        assert words in note[0], (words, note[0])
    assert "higher learning rate" not in note[0]


def test_a_low_rate_learns_slowly_and_is_complete_with_the_opposite_advice(slow):
    assert slow.status == "complete"
    assert slow.metrics["test_accuracy"] < 20.0
    note = [n for n in slow.notes if "near chance" in n]
    assert len(note) == 1, slow.notes
    for words in ("did not diverge", "50 weight updates at learning rate 0.001", "not saturated",
                  "learns slowly", "More epochs or a higher learning rate should help"):
        assert words in note[0], (words, note[0])
    assert "lower the learning rate" not in note[0]


def test_a_run_that_learned_gets_no_near_chance_note():
    run = _made_run([2.30, 2.1, 1.8], accuracy=91.0)
    judge(run, updates=300, learning_rate=0.03)
    assert run.status == "complete" and run.notes == []
