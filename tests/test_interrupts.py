"""Real SIGINTs (what Kernel -> Interrupt sends): the first asks for a stop, the second stops at once."""

import os
import signal

import pytest
import torch

from labkit import bert, interrupts
from labkit.params import Param, Spec, StaleConfigError
from labkit.testbeds.graphcore import train as training

pytestmark = pytest.mark.timing


def test_first_interrupt_requests_a_stop_second_raises_and_the_handler_is_restored():
    before = signal.getsignal(signal.SIGINT)
    with interrupts.graceful() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested and not stop.at_once
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        assert stop.at_once
    assert signal.getsignal(signal.SIGINT) is before


def test_where_reads_like_the_issue():
    assert interrupts.where(2, 10, 40, 150) == "interrupted at epoch 2/10, step 40/150"
    assert interrupts.where(step=3, steps=4, unit="configuration") == "interrupted at configuration 3/4"
    assert interrupts.where() == "interrupted before the first step"


def _mnist(stop, on_step):
    images = torch.randn(64, 1, 28, 28)
    labels = torch.randint(0, 10, (64,))
    model = training.build_model(0, torch.device("cpu"))
    return training.train(model, images, labels, epochs=3, batch_size=4, device_iterations=2, learning_rate=0.01,
                                seed=0, on_step=on_step, stop=stop)


def test_mnist_training_ends_at_the_step_boundary_after_an_interrupt():
    def on_step(record):
        if record.step == 11:
            os.kill(os.getpid(), signal.SIGINT)

    with interrupts.graceful() as stop:
        history = _mnist(stop, on_step)
    assert len(history.steps) == 11 and len(history.epoch_seconds) == 1
    assert history.interrupted == "interrupted at epoch 2/3, step 3/8"


def test_a_second_interrupt_drops_the_step_in_progress():
    def on_step(record):
        if record.step == 3:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # raises here, inside the step's bookkeeping

    with interrupts.graceful() as stop:
        history = _mnist(stop, on_step)
    assert stop.at_once and history.interrupted == "interrupted at epoch 1/3, step 3/8"


def test_without_a_stop_request_an_interrupt_propagates():
    def on_step(record):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _mnist(None, on_step)


def test_bert_training_keeps_the_losses_before_an_interrupt():
    model = bert.build_model("micro", 16, seed=0)
    batches = bert.synthetic_batches(2, 16, model.config.vocab_size, seed=0)

    def on_log(entry):
        if entry.step == 4:
            os.kill(os.getpid(), signal.SIGINT)

    with interrupts.graceful() as stop:
        result = bert.train(model, batches, steps=50, log_steps=2, on_log=on_log, progress=False, stop=stop)
    assert result.interrupted == "interrupted at step 4/50"
    assert len(result.losses) == 4 and all(loss == loss for loss in result.losses)


def test_a_run_step_checks_its_config_first_and_shows_a_stray_interrupt_as_one_line():
    spec = Spec("demo", Param("epochs", int, 1))
    ns = {"epochs": 1}
    calls = []

    @interrupts.run_step
    def run_demo(config):
        calls.append(config.epochs)
        raise KeyboardInterrupt

    config = spec.from_notebook(ns)
    with pytest.raises(interrupts.Interrupted) as caught:
        run_demo(config)
    assert caught.value._render_traceback_() == ["interrupted in setup: nothing was measured yet, so no run was recorded"]
    ns["epochs"] = 2
    with pytest.raises(StaleConfigError):
        run_demo(config)
    assert calls == [1]


def test_an_interrupt_after_an_inner_run_step_returned_keeps_its_result():
    """Found by the interrupt walk under load: run_exercise (a run step keeping nothing
    itself) had run_mnist's result in hand when the Ctrl-C came, and said "in setup, nothing measured"."""

    @interrupts.with_phases
    def inner():
        interrupts.keep(lambda: "partial")
        interrupts.phase("training")
        interrupts.phase(interrupts.DONE)
        return "measured"

    @interrupts.run_step
    def outer():
        result = inner()
        os.kill(os.getpid(), signal.SIGINT)  # lands between the inner step's return and the outer's
        return result

    handler = signal.getsignal(signal.SIGINT)
    assert outer() == "measured"
    assert signal.getsignal(signal.SIGINT) is handler
