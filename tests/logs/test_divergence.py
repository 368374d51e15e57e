"""The one divergence rule (labkit.divergence), checked against every real course log.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_divergence.py -q
"""

from __future__ import annotations

import math

import labkit.logs
from labkit import divergence
from labkit.divergence import EXPLODE_FACTOR, divergence_note, loss_divergence, loss_trend


def test_nan_and_inf_are_divergence_whatever_comes_after():
    assert loss_divergence([2.3, 2.2, float("nan"), 2.1]) == "loss nan"
    assert loss_divergence([2.3, float("inf")]) == "loss inf"
    assert loss_divergence([float("nan")]) == "loss nan"
    assert loss_divergence([2.3, float("-inf")]) == "loss inf"


def test_a_loss_more_than_the_factor_above_its_start_exploded():
    assert loss_divergence([2.3, 5.0, 23.1]) == "loss exploded"
    assert loss_divergence([2.3, 5.0, 22.9]) is None  # 9.96x: below the factor
    assert loss_divergence([0.01, 0.5]) is None  # 50x, but a loss near zero wobbling is not an explosion
    assert loss_divergence([]) is None


def test_a_saturated_or_slow_loss_is_not_divergence():
    assert loss_divergence([2.28, 2.40, 2.38, 2.35]) is None  # the student run at lr 3
    assert loss_divergence([2.3028, 2.3024, 2.3019]) is None  # lr 0.001


def test_every_real_log_gets_the_rule_and_only_the_rule(testbed_logs):
    """No real course log has a NaN or runaway loss; the worst (lr 3, 10.10 %) peaks at 1.05x its start."""
    worst = 0.0
    for path in sorted(testbed_logs.glob("*/*.log")):
        for run in labkit.logs.read(path).runs:
            losses = [float(v) for v in run.series.get("loss", {}).get("y", [])]
            finite = [v for v in losses if math.isfinite(v)]
            if finite and finite[0] > 0:
                worst = max(worst, max(finite) / finite[0])
            diverged = loss_divergence(losses) is not None
            assert (run.status == "diverged") == diverged, (path.name, run.status, run.notes)
            assert run.status != "diverged", path.name
    assert 1.0 < worst < 1.1 < EXPLODE_FACTOR


def test_the_saturated_student_log_is_complete_with_the_evidence(testbed_logs):
    run = labkit.logs.read(testbed_logs / "graphcore/student-sarora39-spring2024-mnist-b8-lr3-e20-diverged.log").run
    assert run.status == "complete" and run.metrics["test_accuracy"] == 10.10
    note = [n for n in run.notes if "near chance" in n][0]
    assert "did not diverge" in note and "above ln 10" in note and "lower the learning rate" in note
    assert "at learning rate 3" in note


def test_notes_say_what_went_wrong_and_where():
    assert divergence_note([2.3, 2.2]) == ""
    nan = divergence_note([2.3, 2.2, float("nan")], where="step")
    assert "NaN at step 3 of 3" in nan and "diverged" in nan and nan.endswith("Lower the learning rate.")
    exploded = divergence_note([2.3, 40.0], advice="")
    assert "rose from 2.3 to 40" in exploded and "exploding" in exploded and exploded.endswith(".")


def test_trend_needs_more_than_noise():
    assert loss_trend([2.30, 2.25, 2.20, 2.16, 2.10]) == "falling"
    assert loss_trend([2.30, 2.35, 2.41, 2.44]) == "rising"
    assert loss_trend([2.3028, 2.3024, 2.3019, 2.3029, 2.3016, 2.3028]) == divergence.TREND_FLAT
    assert loss_trend([2.3]) == divergence.TREND_FLAT
    # the last half decides: a run that fell early and then stalled is not "still falling"
    fell_then_stalled = [2.3, 2.0, 1.8, 1.7, 1.66, 1.63, 1.62, 1.62] + [1.62, 1.64, 1.61, 1.63, 1.62, 1.63, 1.61, 1.63]
    assert loss_trend(fell_then_stalled) == divergence.TREND_FLAT
