"""The scaling study on a device whose epoch is short: times with three significant digits (never
"0.0 s"), epochs sized to last, how each row ran (precision, launch)."""

import math

import pandas as pd
import pytest
import torch

from labkit.testbeds.comparison import replicas, report
from labkit.testbeds.comparison import study as scaling


@pytest.mark.parametrize("seconds, shown", [
    (0.006123, "6.12 ms"), (0.0006123, "0.612 ms"), (0.8123, "812 ms"), (0.09996, "100 ms"), (2.4, "2.40 s"),
    (12.34, "12.3 s"), (259.0, "259 s"), (float("nan"), ""),
])
def test_durations_have_three_significant_digits(seconds, shown):
    assert report.duration(seconds) == shown


def test_a_gpu_epoch_of_milliseconds_is_not_shown_as_zero_seconds():
    frame = pd.DataFrame([{"platform": "local cuda", "model": "small", "replicas": 1, "micro_batch": 512,
                           "throughput": 357192.0, "epoch_s": 0.005734, "status": "complete", "note": ""}])
    assert list(report.speedup_table(frame)["timed epoch"]) == ["5.73 ms"]


def _tiny_step():
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()  # a tensor: read once an epoch
    return step


@pytest.mark.timing
def test_a_short_epoch_is_sized_to_last_and_cycles_through_its_images():
    images, labels = torch.randn(32, 4), torch.randint(0, 2, (32,))
    step = _tiny_step()
    step(images[:8], labels[:8])  # autograd's first-call setup is not what the sizing measures
    outcome = replicas.timed_epochs(step, images, labels, 8, 3, min_epoch_seconds=0.5)
    timed, took = outcome["sized"]
    assert timed % 4 == 0 and took >= replicas.MIN_TIMED_SECONDS
    # the later epochs have the steps that last 1.25 x 0.5 s at the measured pace (usually hundreds: 4 tiny
    # steps take well under a millisecond), never fewer than the images given
    assert outcome["steps"] == max(4, math.ceil(timed * 1.25 * 0.5 / took))
    assert len(outcome["losses"]) == 4 + 2 * outcome["steps"]  # the first epoch as given; the timed ones sized
    assert all(isinstance(loss, float) for loss in outcome["losses"])


def test_an_epoch_is_sized_from_passes_timed_for_a_tenth_of_a_second_not_from_one_pass():
    # One pass of 4 tiny steps takes well under a millisecond: a sync or a launch would decide its time.
    images, labels = torch.randn(32, 4), torch.randint(0, 2, (32,))
    passes = []
    step = _tiny_step()
    step(images[:8], labels[:8])  # autograd's first-call setup is not what the sizing measures

    def counted(x, y):
        passes.append(1)
        return step(x, y)
    steps, (timed, took) = replicas._steps_lasting(counted, images, labels, 8, 4, 1.0, None, None)
    assert took >= replicas.MIN_TIMED_SECONDS and timed == len(passes) and timed % 4 == 0
    assert steps == max(4, math.ceil(timed * 1.25 / took))


def test_replicas_time_as_many_passes_as_the_slowest_needs():
    # agree() gives every replica the largest value: one replica that needs more passes keeps all going.
    images, labels = torch.randn(32, 4), torch.randint(0, 2, (32,))
    asked = []

    def agree(value):
        asked.append(value)
        return 1 if len(asked) < 5 else value  # another replica wants 4 more passes than this one

    _, (timed, took) = replicas._steps_lasting(_tiny_step(), images, labels, 8, 4, 1.0, None, agree)
    assert len(asked) >= 6 and timed >= 5 * 4


def test_without_a_minimum_the_epoch_is_the_images_given():
    outcome = replicas.timed_epochs(_tiny_step(), torch.randn(32, 4), torch.randint(0, 2, (32,)), 8, 2)
    assert (outcome["steps"], outcome["sized"], len(outcome["losses"])) == (4, None, 8)


def test_a_cpu_row_says_fp32_and_eager_and_keeps_its_images_per_epoch():
    row = scaling.measure(1, 32, images_per_epoch=128, epochs=2, device="cpu", model="small")
    assert (row["precision"], row["launch"], row["images_per_epoch"], row["note"]) == ("fp32", "eager", 128, "")
    run = scaling.as_run(pd.DataFrame([row]), {"device": "cpu"})
    assert (run.environment["precision"], run.environment["launch"]) == ("fp32", "eager")


def test_a_row_whose_cuda_graph_could_not_be_captured_says_so_in_its_note_and_the_runs_environment():
    from tests.gpu import launch_check

    row = scaling.measure(1, 32, images_per_epoch=128, epochs=2, device="cpu", model="small")
    row["launch_error"] = "RuntimeError: operation not permitted when stream is capturing"
    assert scaling._how(row) == ("fp32, eager steps (the CUDA graph could not be captured: RuntimeError: operation "
                                 "not permitted when stream is capturing)")
    run = scaling.as_run(pd.DataFrame([row]), {"device": "cuda"})
    assert run.environment["launch_error"] == row["launch_error"]
    assert launch_check.problems([run], "cuda") == ["comparison/ipu_vs_gpu: launch 'eager' where the policy chose "
                                                    "'cuda graph': " + row["launch_error"]]
