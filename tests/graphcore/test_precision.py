"""MNIST on the accelerator policy, on the CPU: the precision parameter, what the plan says, what a run records.
(On a GPU the same step is captured as a CUDA graph: tests/gpu/.)"""

import pytest
import torch

from labkit.accelerator import AcceleratorError
from labkit.params import ParameterError
from labkit.testbeds import graphcore
from labkit.testbeds.graphcore.placement import choose_precision
from labkit.testbeds.graphcore.train import to_tensor, train
from labkit.data import load_mnist


def _train(precision):
    config = graphcore.SPEC.validate({"epochs": 1, "batch_size": 8, "device_iterations": 25, "learning_rate": 0.05,
                                      "seed": 3, "max_train_samples": 400, "max_test_samples": 80, "device": "cpu",
                                      "precision": precision})
    result = train(config, torch.device("cpu"), verbose=False).details
    return result.model, result.history


def test_fp32_asked_for_computes_exactly_what_the_default_does_and_bf16_does_not():
    default_model, default = _train("auto")
    fp32_model, fp32 = _train("fp32")
    assert [s.loss for s in fp32.steps] == [s.loss for s in default.steps]
    assert all(torch.equal(a, b) for a, b in zip(fp32_model.parameters(), default_model.parameters()))
    assert default.launch == "eager" and default.launch_why == "eager (no capture off a GPU)"
    bf16_model, bf16 = _train("bf16")
    losses = [s.loss for s in bf16.steps]
    assert all(loss == loss for loss in losses) and losses != [s.loss for s in default.steps]
    images = to_tensor(load_mnist(download=False, allow_sample=False).train_images[:8], torch.device("cpu"))
    with torch.no_grad(), choose_precision("bf16", torch.device("cpu")).autocast(torch.device("cpu")):
        assert bf16_model(images).dtype == torch.bfloat16


def test_auto_is_fp32_on_the_cpu_and_an_ipu_trains_the_tutorial_in_fp32():
    assert choose_precision("auto", torch.device("cpu")).name == "fp32"
    assert choose_precision("auto", "ipu").name == "fp32"
    with pytest.raises(AcceleratorError, match="precision='bf16' is not available on an IPU here.*allowed there: "
                                               "'auto', 'fp32'"):
        choose_precision("bf16", "ipu")


def test_the_plan_says_an_asked_precision_and_leaves_the_cpu_default_as_it_was():
    assert str(graphcore.plan(graphcore.SPEC.validate({"device": "cpu"}))) == (
        "Where: portable PyTorch on cpu\nWhy: device='cpu' was asked for")
    plan = graphcore.plan(graphcore.SPEC.validate({"device": "cpu", "precision": "bf16"}))
    assert str(plan) == ("Where: portable PyTorch on cpu in bf16\n"
                         "Why: device='cpu' was asked for; precision='bf16': bf16 autocast on the CPU")
    with pytest.raises(AcceleratorError, match="precision='tf32' is not available on the CPU; allowed there: "
                                               "'auto', 'fp32', 'bf16'"):
        graphcore.plan(graphcore.SPEC.validate({"device": "cpu", "precision": "tf32"}))
    with pytest.raises(ParameterError, match="precision"):
        graphcore.SPEC.validate({"precision": "fp16"})


def test_a_run_records_its_precision_micro_batch_and_launch():
    config = graphcore.SPEC.validate({"device": "cpu", "epochs": 1, "max_train_samples": 400, "max_test_samples": 80,
                                      "device_iterations": 25})
    run = graphcore.run_exercise(config)
    assert run.params["precision"] == "fp32"
    assert {k: run.environment[k] for k in ("micro_batch", "accumulation", "launch")} == {
        "micro_batch": 8, "accumulation": 1, "launch": "eager"}
    assert run.environment["device_name"] and "peak_memory_bytes" not in run.environment  # a GPU's only
