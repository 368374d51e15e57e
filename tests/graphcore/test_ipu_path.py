"""The IPU path against the fake PopTorch written from PopTorch's source (tests/fakes/poptorch: the
real one ships only in the Poplar SDK and runs only on the Graphcore testbed)."""

import pytest

from labkit import devices
from labkit.devices import DeviceError
from labkit.testbeds import graphcore
from labkit.testbeds.graphcore.placement import choose_device
from tests.fakes import import_poptorch


@pytest.fixture
def fake_poptorch(monkeypatch):
    return import_poptorch(monkeypatch)  # one IPU, as a job under srun --ipus=1


def test_ipu_without_poptorch_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(devices, "module_available", lambda name: False)
    with pytest.raises(DeviceError) as err:
        choose_device("ipu")
    message = str(err.value)
    assert "Poplar SDK" in message and "srun --ipus=1" in message and "pip install" in message


def test_auto_prefers_an_ipu_when_poptorch_sees_one(fake_poptorch):
    assert choose_device("auto") == "ipu"


def test_ipu_present_but_not_attached(fake_poptorch, monkeypatch):
    monkeypatch.setattr(fake_poptorch, "ipuHardwareIsAvailable", lambda num_ipus=1: False)
    with pytest.raises(DeviceError, match="srun --ipus=1"):
        choose_device("ipu")
    assert str(choose_device("auto")) == "cpu"


def test_ipu_run_follows_the_tutorial(fake_poptorch, capfd):
    config = graphcore.SPEC.validate({
        "device": "ipu", "epochs": 2, "batch_size": 8, "device_iterations": 10,
        "max_train_samples": 800, "max_test_samples": 400, "learning_rate": 0.05})
    run = graphcore.run_exercise(config)
    calls = fake_poptorch.CALLS
    # Options with device iterations and output mode All, a poptorch DataLoader of micro-batches,
    # compiled before timing, weights back to the host, the one IPU released before the inference
    # model compiles (on one IPU it could not get it otherwise), and released again at the end.
    assert calls.index("deviceIterations(10)") < calls.index("trainingModel")
    assert "outputMode(All)" in calls and "DataLoader(batch_size=8, combined=80)" in calls  # 8 x 10 iterations
    assert calls.index("trainingModel.compile") < calls.index("trainingModel.copyWeightsToHost")
    assert calls.index("trainingModel.detachFromDevice") < calls.index("inferenceModel.compile")
    assert calls[-1] == "inferenceModel.detachFromDevice" and not fake_poptorch._held
    assert capfd.readouterr().err.count("Graph compilation: 100%") == 2  # PopTorch's bar, training and inference
    assert run.source == "testbed" and run.params["device"] == "ipu"
    assert run.metrics["steps_per_epoch"] == 10  # 800 / (8 x 10)
    assert len(run.series["loss"]["y"]) == 20
    assert {"train_compile_time", "test_compile_time"} <= set(run.metrics)
    assert 0 <= run.metrics["test_accuracy"] <= 100
    # The fake trains for real: loss falls over two epochs at this learning rate.
    losses = run.series["loss"]["y"]
    assert losses[-1] < losses[0]


def test_the_plan_says_ipu_and_why_or_why_not(fake_poptorch, monkeypatch):
    plan = graphcore.plan(graphcore.SPEC.validate({}))
    assert plan.path == "testbed" and plan.device == "ipu"
    assert str(plan) == ("Where: a Graphcore IPU, through PopTorch\n"
                         "Why: device='auto' takes an IPU when PopTorch sees one attached, and it does")
    monkeypatch.setattr(fake_poptorch, "ipuHardwareIsAvailable", lambda num_ipus=1: False)
    plan = graphcore.plan(graphcore.SPEC.validate({}))
    assert plan.path == "portable" and "no IPU: PopTorch is installed but no IPU is attached" in plan.why
    with pytest.raises(DeviceError, match="srun --ipus=1"):
        graphcore.plan(graphcore.SPEC.validate({"device": "ipu"}))  # refused before anything is loaded


def test_an_interrupt_in_the_ipu_test_pass_keeps_the_epochs_and_the_batches_seen(fake_poptorch, monkeypatch):
    """The interrupt contract on the testbed path: Ctrl-C while the IPU tests keeps the trained epochs (their times
    and throughput), the accuracy over the test batches seen, said as such, and releases the IPU."""
    import os
    import signal

    calls = {"n": 0}
    forward = fake_poptorch._InferenceModel.__call__

    def interrupted_on_the_third_batch(self, data):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)  # as Kernel -> Interrupt delivers it
        return forward(self, data)

    monkeypatch.setattr(fake_poptorch._InferenceModel, "__call__", interrupted_on_the_third_batch)
    config = graphcore.SPEC.validate({
        "device": "ipu", "epochs": 2, "batch_size": 8, "device_iterations": 10,
        "max_train_samples": 800, "max_test_samples": 400, "test_batch_size": 80, "learning_rate": 0.05})
    run = graphcore.run_exercise(config)
    assert run.status == "interrupted" and run.stopped_in == "testing"
    assert {"first_epoch_time", "total_train_time", "train_throughput", "train_compile_time"} <= set(run.metrics)
    assert run.metrics["tested_samples"] == 240 and "test_throughput" not in run.metrics  # 3 of 5 batches
    assert any("first 240 test samples only" in note for note in run.notes)
    assert fake_poptorch.CALLS[-1] == "inferenceModel.detachFromDevice" and not fake_poptorch._held


def test_mnist_keeps_its_training_figures_when_the_inference_model_cannot_get_an_ipu(fake_poptorch, monkeypatch,
                                                                                       capsys):
    """Another job takes the IPU the training model gave back: PopTorch fails to acquire it when the
    inference model compiles. The run keeps what training measured, says why in one sentence, and
    PopTorch's error is the one reported (no detach of a model that never compiled replaces it)."""
    detach = fake_poptorch._TrainingModel.detachFromDevice

    def detach_and_lose_the_ipu(self):
        detach(self)
        monkeypatch.setattr(fake_poptorch, "BUSY_IPUS", 1)

    monkeypatch.setattr(fake_poptorch._TrainingModel, "detachFromDevice", detach_and_lose_the_ipu)
    config = graphcore.SPEC.validate({
        "device": "ipu", "epochs": 2, "batch_size": 8, "device_iterations": 10,
        "max_train_samples": 800, "max_test_samples": 400, "learning_rate": 0.05})
    run = graphcore.run_exercise(config)
    assert run.status == "incomplete" and "test_accuracy" not in run.metrics
    assert {"train_throughput", "train_compile_time", "final_loss", "epoch_time", "first_epoch_time"} <= set(run.metrics)
    assert len(run.series["loss"]["y"]) == 20  # every step trained is kept
    said = [n for n in run.notes if n.startswith("No test pass")]
    assert said == ["No test pass: PopTorch could not compile the inference model or attach it to an IPU (Failed to "
                    "acquire 1 IPU(s)); the training figures are kept."]
    out = capsys.readouterr().out
    assert "Note: " + said[0] in out and "Accuracy on test set" not in out
    assert "inferenceModel.detachFromDevice" not in fake_poptorch.CALLS and not fake_poptorch._held
