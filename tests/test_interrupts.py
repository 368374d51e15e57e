"""Real SIGINTs (what Kernel -> Interrupt sends): the first asks for a stop, the second stops at once."""

import os
import signal

import pytest

from labkit import bert, interrupts
from labkit.params import Param, Spec, StaleConfigError
from labkit.testbeds.graphcore.train import Portable

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


def _mnist(monkeypatch, after_step):
    """A short MNIST run step whose steps are the real ones; ``after_step(n)`` runs after the n-th."""
    from labkit.testbeds import graphcore

    done = []
    step = Portable.step

    def counted(self, chosen):
        figures = step(self, chosen)
        done.append(1)
        after_step(len(done))
        return figures

    monkeypatch.setattr(Portable, "step", counted)
    config = graphcore.SPEC.validate({"epochs": 3, "batch_size": 4, "device_iterations": 2, "learning_rate": 0.01,
                                      "max_train_samples": 64, "max_test_samples": 80, "device": "cpu"})
    return graphcore.run_exercise(config)


def test_mnist_training_ends_at_the_step_boundary_after_an_interrupt(monkeypatch):
    def after_step(n):
        if n == 11:
            os.kill(os.getpid(), signal.SIGINT)

    run = _mnist(monkeypatch, after_step)
    history = run.details.history
    assert len(history.steps) == 11 and len(history.epoch_seconds) == 1
    assert history.interrupted == "interrupted at epoch 2/3, step 3/8"
    assert run.status == "interrupted" and run.stopped_in == "epoch 2/3" and "test_accuracy" not in run.metrics


def test_a_second_interrupt_drops_the_step_in_progress(monkeypatch):
    def after_step(n):
        if n == 3:
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGINT)  # raises here, before the third step is recorded

    run = _mnist(monkeypatch, after_step)
    assert run.details.history.interrupted == "interrupted at epoch 1/3, step 2/8"
    assert run.status == "interrupted" and len(run.series["loss"]["y"]) == 2


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
    """A run step keeping nothing itself, with an inner run step's result in hand when the Ctrl-C comes,
    returns that result (not "in setup, nothing measured")."""

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
