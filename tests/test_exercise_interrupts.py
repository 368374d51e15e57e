"""Each exercise's run interrupted at one phase, called directly in this process: a real SIGINT
sent the moment the run prints the line that starts the phase (as a terminal's Ctrl-C would come while a
student reads it), never after a sleep. The walk over every boundary through ``labkit run`` and a kernel is
tests/interrupts/ (HARNESS); these pin each exercise's own handling, including the cells after the run."""

import io
import os
import re
import signal
import sys
from contextlib import redirect_stdout

import matplotlib
import psutil
import pytest

from labkit import interrupts
from tests.student import HELPERS

matplotlib.use("Agg")
pytestmark = pytest.mark.timing

NOTHING = "nothing was measured yet, so no run was recorded"


class InterruptOn(io.TextIOBase):
    """stdout that sends this process one SIGINT when its text (bar frames split at \\r) first matches ``pattern``."""

    def __init__(self, pattern):
        self.pattern = re.compile(pattern, re.M)
        self.text = ""
        self.sent = False

    def writable(self):
        return True

    def write(self, text):
        self.text += text.replace("\r", "\n")
        sys.__stdout__.write(text)
        if not self.sent and self.pattern.search(self.text):
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)
        return len(text)


def interrupted_at(pattern, run, *args):
    """``run(*args)`` with a SIGINT when the output first matches ``pattern``: (result or the one line, output)."""
    out = InterruptOn(pattern)
    with redirect_stdout(out):
        try:
            result = run(*args)
        except interrupts.Interrupted as exc:
            result = exc._render_traceback_()[0]
    assert out.sent, out.text
    return result, out.text


def children():
    """This process's children other than multiprocessing's reusable helpers (tests/student.py's HELPERS)."""
    return [p for p in psutil.Process().children(recursive=True)
            if not any(helper in " ".join(p.cmdline()) for helper in HELPERS)]


@pytest.fixture(scope="module")
def mnist_config():
    from labkit.testbeds import graphcore

    return graphcore.SPEC.validate({"epochs": 1, "max_train_samples": 800, "max_test_samples": 800, "device": "cpu"})


def test_mnist_interrupted_while_testing_keeps_its_epoch_and_the_accuracy_over_the_batches_seen(mnist_config):
    from labkit.testbeds import graphcore

    run, said = interrupted_at(r"^Testing:", graphcore.run_exercise, mnist_config)
    assert (run.status, run.stopped_in) == ("interrupted", "testing")
    for name in ("first_epoch_time", "total_train_time", "train_throughput", "final_loss", "warmup_time"):
        assert name in run.metrics, name
    assert run.metrics["tested_samples"] == 80 and 0 <= run.metrics["test_accuracy"] <= 100  # one batch of 80 of 800
    assert "test_throughput" not in run.metrics
    assert any("over the first 80 test samples only" in note for note in run.notes)
    assert said.count("interrupted in testing: the run is kept") == 1 and "Accuracy on test set" not in said
    graphcore.show(run)  # the cells after the run still work


def test_mnist_interrupted_in_its_summary_keeps_the_whole_run_marked_interrupted(mnist_config):
    from labkit.testbeds import graphcore

    run, said = interrupted_at(r"^Training throughput:", graphcore.run_exercise, mnist_config)
    assert (run.status, run.stopped_in) == ("interrupted", "summary")
    assert "test_accuracy" in run.metrics and "test_throughput" in run.metrics and "tested_samples" not in run.metrics


def test_mnist_interrupted_in_setup_records_nothing_and_says_so(mnist_config):
    from labkit.testbeds import graphcore

    said, _ = interrupted_at(r"^Training on ", graphcore.run_exercise, mnist_config)
    assert said == "interrupted in setup: " + NOTHING


@pytest.fixture(scope="module")
def inference_config():
    from labkit.testbeds.sambanova import inference

    return inference.SPEC.validate({"num_prompts": 2, "max_tokens": 8, "concurrency": [1, 2], "repeats": 1,
                                    "warmup_requests": 1})


def test_inference_interrupted_once_every_request_is_done_keeps_every_measured_request(inference_config):
    from labkit.testbeds.sambanova import inference

    run, said = interrupted_at(r"^requests:\s+100%", inference.run_exercise, inference_config)
    assert (run.status, run.stopped_in) == ("interrupted", "summary")
    assert run.metrics["requests"] == len(run.details["requests"]) == 8  # 2 endpoints x 2 levels x 2 prompts
    assert "ttft_median" in run.metrics and "e2el_median" in run.metrics
    assert children() == []  # both stand-in servers stopped
    inference.show(run)


def test_inference_interrupted_in_its_warm_up_records_nothing_and_stops_its_servers(inference_config):
    from labkit.testbeds.sambanova import inference

    said, _ = interrupted_at(r"^requests:\s+0%", inference.run_exercise, inference_config)
    assert said == "interrupted in warm-up: " + NOTHING
    assert children() == []


@pytest.fixture(scope="module")
def groq_config():
    from labkit.testbeds import groq

    return groq.SPEC.validate({"num_samples": 40, "backends": "cpu,onnxruntime"})


def test_groq_interrupted_in_its_second_backend_keeps_the_first(groq_config):
    from labkit.testbeds import groq

    run, said = interrupted_at(r"^onnxruntime inference:", groq.run_exercise, groq_config)
    assert (run.status, run.stopped_in) == ("interrupted", "onnxruntime inference")
    assert "cpu_accuracy" in run.metrics and "cpu_e2e_latency_ms" in run.metrics
    groq.show(run)
    groq.show_parity(run)


def test_groq_interrupted_in_its_first_backend_records_nothing(groq_config):
    from labkit.testbeds import groq

    said, _ = interrupted_at(r"^cpu inference:", groq.run_exercise, groq_config)
    assert said == "interrupted in cpu inference: " + NOTHING


def test_llama_interrupted_in_training_ends_at_that_step_and_keeps_the_steps_made():
    from labkit.testbeds.cerebras import llama2_7b

    config = llama2_7b.SPEC.validate({"model_size": "tiny", "batch_size": 2, "steps": 40, "log_steps": 3,
                                      "sequence_length": 16, "device": "cpu"})
    run, said = interrupted_at(r"Step=6, ", llama2_7b.run_exercise, config)
    assert (run.status, run.stopped_in) == ("interrupted", "training") and "interrupted at step 6/40" in said
    assert run.metrics["steps"] == 6 and run.metrics["samples"] == 12 and len(run.series["loss"]["y"]) == 6
    assert run.series["global_rate"]["x"] == [3, 6] and "validation_loss" not in run.metrics


def test_llama_interrupted_in_its_validation_keeps_the_training_without_a_validation_loss():
    from labkit.testbeds.cerebras import llama2_7b

    config = llama2_7b.SPEC.validate({"model_size": "tiny", "batch_size": 4, "steps": 10, "log_steps": 5,
                                      "sequence_length": 64, "device": "cpu"})
    run, said = interrupted_at(r"Processed \d+ training sample", llama2_7b.run_exercise, config)
    assert (run.status, run.stopped_in) == ("interrupted", "validation")
    assert run.metrics["steps"] == 10 and "global_rate" in run.metrics and "validation_loss" not in run.metrics
    llama2_7b.show(run)


def test_cerebras_bert_interrupted_after_training_keeps_every_step():
    from labkit.testbeds.cerebras import bert_large

    config = bert_large.SPEC.validate({"model_size": "micro", "batch_size": 8, "max_steps": 6, "log_steps": 3,
                                       "max_seq_length": 32, "target": "cpu"})
    run, said = interrupted_at(r"Training completed successfully", bert_large.run_exercise, config)
    assert (run.status, run.stopped_in) == ("interrupted", "summary")
    assert run.metrics["steps"] == 6 and "samples_per_sec" in run.metrics


def test_the_homework_interrupted_while_gathering_records_nothing_and_names_the_testbed():
    from labkit.testbeds.homework import fall2024

    folder = os.path.join(os.path.dirname(__file__), "golden", "homework")
    config = fall2024.SPEC.validate({"logs_dir": os.path.join(folder, "logs"), "runs_dir": os.path.join(folder, "runs")})
    said, _ = interrupted_at(r"^graphcore: \d+ run", fall2024.run_exercise, config)
    assert said == "interrupted in gathering graphcore: " + NOTHING  # reading measures nothing: nothing to keep


def test_sambanova_interrupted_once_every_step_is_reported_waits_for_the_ranks_results():
    from labkit.testbeds.sambanova import bert_large as sambanova

    config = sambanova.SPEC.validate({"ntasks": 2, "ntasks_per_node": 2, "model_size": "micro", "batch_size": 4,
                                      "steps": 4, "max_seq_length": 32, "target": "portable", "device": "cpu"})
    run, said = interrupted_at(r"^2 ranks x 4 steps:\s+100%", sambanova.run_exercise, config)
    assert (run.status, run.stopped_in) == ("interrupted", "summary")
    assert "e2e_train_time" in run.metrics and run.metrics["replicas_in_sync"] is True
    assert children() == []
