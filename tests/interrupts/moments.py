"""Every notebook's phases, the output that marks each boundary, and what a Ctrl-C there must keep.

Shared by the terminal walk (test_every_moment.py: `labkit run --show-output` and SIGINT) and the
kernel walk (test_kernel_interrupt.py: Kernel -> Interrupt through jupyter_client). The phase names
are those a record's ``Run.stopped_in`` holds; the markers are what the run prints today.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

from labkit import results

__all__ = ["Moment", "Walk", "WALKS", "NOTHING_MEASURED", "recorded_phase", "matches", "wanted", "described"]

#: What the summary line says when the interrupt came before anything was measured.
NOTHING_MEASURED = re.compile(r"nothing was measured")


@dataclass(frozen=True)
class Moment:
    """One phase boundary: the output that marks it and what a Ctrl-C there must keep."""

    phase: str  # the phase the interrupt lands in, as the record names it (Run.stopped_in)
    after: str  # regular expression: the frame of output that ends the phase before
    kept: Optional[Tuple[str, ...]] = None  # metrics measured by then; None: nothing measured yet
    status: str = "interrupted"  # "complete": the run cell had ended, a later cell was interrupted
    walked: bool = True  # False: only where an earlier moment's interrupt may land (no case of its own)


@dataclass(frozen=True)
class Walk:
    """One notebook at small sizes and the moments its output shows, in order."""

    notebook: str
    arguments: Tuple[str, ...]
    moments: Tuple[Moment, ...]
    evidence: str = ""  # a folder copied into the kernel's working directory (the homework's hand-in)
    phases: Tuple[str, ...] = ()  # every phase in order, those no output marks too (default: the moments')

    def from_(self, moment: Moment) -> Tuple[Moment, ...]:
        """The moments an interrupt prompted at ``moment`` may land in: it and the next one. A signal
        lands within a phase of the text that prompted it; later than that, it was lost on its way
        (ipykernel dropped it between two cells, and the run went on as if no Ctrl-C had come)."""
        at = self.moments.index(moment)
        return self.moments[at:at + 2]

    def phases_at(self, moment: Moment) -> Tuple[str, ...]:
        """The phases a record may name after a Ctrl-C prompted at ``moment``: the one whose end its
        marker shows (the phase's code may not have returned when the signal lands) and every later one."""
        order = self.phases or tuple(dict.fromkeys(m.phase for m in self.moments))
        at = order.index(moment.phase)
        return order[max(at - 1, 0):]


def done(after: str, *kept: str) -> Moment:
    """The run cell has ended: an interrupt in a cell that shows it still leaves it recorded, complete."""
    return Moment("done", after, tuple(kept), status="complete")


MNIST_STEP = ("final_loss", "warmup_time")
MNIST_EPOCH = MNIST_STEP + ("first_epoch_time", "total_train_time")
LLAMA_STEPS = ("global_rate", "samples_per_s")
INFERENCE = ("requests_completed", "ttft_median", "e2el_median")
WALKS: Dict[str, Walk] = {
    "graphcore/mnist": Walk(
        "notebooks/graphcore/mnist.ipynb",
        ("-y", "{epochs: 2, max_train_samples: 800, max_test_samples: 1600, device: cpu}"),
        (Moment("setup", r"^Training on "),
         Moment("epoch 1/2", r"^Epoch 1/2:\s+0%", MNIST_STEP),
         Moment("epoch 2/2", r"^Epoch 1/2: [0-9.]+ s", MNIST_EPOCH),
         Moment("testing", r"^Testing:", MNIST_EPOCH + ("train_throughput",)),
         Moment("summary", r"^Training throughput:", MNIST_EPOCH + ("train_throughput", "test_accuracy")),
         done(r"^Accuracy on test set", *MNIST_EPOCH, "test_accuracy"))),
    "sambanova/inference": Walk(
        "notebooks/sambanova/inference.ipynb",
        # 66 requests of 16 tokens: about 5 s of requests on an idle 2-core machine, so the 1 s bar
        # draws frames between 0% and 100% (34 requests of 8 tokens took 1 s, and one idle run
        # in five drew none: the kernel walk's "requests" case then had no moment to interrupt).
        ("-y", "{num_prompts: 8, max_tokens: 16, concurrency: [1, 2], repeats: 2, warmup_requests: 1}"),
        (Moment("setup", r"^batched: .* is served"),
         Moment("warm-up", r"^requests:\s+0%"),
         Moment("requests", r"^requests:\s+([89]|[1-9][0-9])%", ("requests_completed", "e2el_median")),
         Moment("summary", r"^requests:\s+100%", INFERENCE),
         done(r"^Client-side figures", *INFERENCE)),
        phases=("setup", "warm-up", "requests", "summary", "servers stopping", "done")),
    "groq/bert_tiny": Walk(
        "notebooks/groq/bert_tiny.ipynb",
        ("-y", '{num_samples: 40, backends: "cpu,onnxruntime"}'),
        (Moment("setup", r"^data: "),
         Moment("cpu inference", r"^cpu inference:\s+0%"),
         Moment("onnxruntime inference", r"^cpu inference:\s+100%", ("cpu_accuracy", "cpu_e2e_latency_ms")),
         Moment("summary", r"^onnxruntime inference:\s+100%", ("cpu_e2e_latency_ms", "onnxruntime_e2e_latency_ms")),
         done(r"^custom_text ", "cpu_e2e_latency_ms", "onnxruntime_e2e_latency_ms"))),
    "cerebras/llama2_7b": Walk(
        "notebooks/cerebras/llama2_7b.ipynb",
        ("-y", "{model_size: tiny, batch_size: 4, steps: 60, log_steps: 10, sequence_length: 64, device: cpu}"),
        # the line that ends setup is printed just before measuring starts: nothing, or the step in flight
        (Moment("setup", r"labkit portable LLaMA"),
         Moment("training", r"labkit portable LLaMA", (), walked=False),  # the step in flight, before any log
         Moment("training", r"Step=10, ", LLAMA_STEPS),
         Moment("validation", r"Processed \d+ training sample", LLAMA_STEPS + ("train_seconds",)),
         done(r"^Note: Portable run", *LLAMA_STEPS, "validation_loss"))),
    "cerebras/bert_large": Walk(
        "notebooks/cerebras/bert_large.ipynb",
        ("-y", "{model_size: micro, batch_size: 8, max_steps: 10, log_steps: 5, max_seq_length: 32, target: cpu,"
               " compare_batch_sizes: [2]}"),
        (Moment("setup", r"Initializing module BertForPreTraining"),  # printed just before measuring starts
         Moment("training", r"Initializing module BertForPreTraining", (), walked=False),
         Moment("training", r"Step=5, ", ("global_rate",)),
         Moment("summary", r"Training completed successfully", ("global_rate", "samples_per_sec")),
         done(r"Effective batch size is 2\.", "global_rate", "samples_per_sec"))),
    "sambanova/bert_large": Walk(
        "notebooks/sambanova/bert_large.ipynb",
        ("-y", "{ntasks: 2, ntasks_per_node: 2, model_size: micro, batch_size: 4, steps: 8, max_seq_length: 32,"
               " target: portable, device: cpu, sweep_ntasks: [1]}"),
        # the bar is drawn before the first step ends: nothing measured yet, or that step's figures
        (Moment("training", r"^2 ranks x 8 steps:\s+0%"),
         Moment("training", r"^2 ranks x 8 steps:\s+0%", (), walked=False),
         Moment("summary", r"^2 ranks x 8 steps:\s+100%", ("e2e_train_time",)),
         done(r"^1 rank x 8 steps:\s+0%", "e2e_train_time", "sequences_per_second"))),
    "comparison/ipu_vs_gpu": Walk(
        "notebooks/comparison/ipu_vs_gpu.ipynb",
        ("-y", "{replicas: [1, 2], micro_batch_sizes: [10], images_per_epoch: 128, epochs: 2, device: cpu}"),
        (Moment("setup", r"^parameters: "),
         Moment("configurations", r"^configurations:\s+50%", ("configurations",)),
         Moment("summary", r"^configurations:\s+100%", ("configurations", "best_throughput")),
         done(r"^Source: ", "configurations", "best_throughput"))),
    "homework/ai_testbeds": Walk(
        "notebooks/homework/ai_testbeds.ipynb", (),
        (done(r"^graphcore: \d+ run", "graphcore_runs", "groq_runs"),
         done(r"^Runs marked portable", "graphcore_runs", "groq_runs")), evidence="tests/golden/homework"),
    "homework/ai_testbeds_2025": Walk(
        "notebooks/homework/ai_testbeds_2025.ipynb",
        ("-y", "{logs_dir: evidence_2025/logs, runs_dir: evidence_2025/runs}"),
        (Moment("gathering cerebras", r"^cerebras: \d+ run\(s\) of cerebras/llama2_7b from testbed logs"),
         done(r"^sambanova: \d+ run", "cerebras_runs", "sambanova_runs")), evidence="tests/golden/homework"),
}

def recorded_phase(run: results.Run) -> str:
    """The phase an interrupted run's record names ("" for an older record, which names none)."""
    return getattr(run, "stopped_in", "") or ""


def matches(moment: Moment, runs: Sequence[results.Run], said: str, phases: Sequence[str] = ()) -> bool:
    """Whether what was kept is what an interrupt in ``moment``'s phase must keep: a record naming one of
    ``phases`` (default: the moment's own) and holding every figure measured by then."""
    if moment.kept is None:  # before the first measurement: no record, and the line says why
        return not runs and bool(NOTHING_MEASURED.search(said))
    if not runs or runs[0].status != moment.status:
        return False
    if moment.status == "interrupted" and recorded_phase(runs[0]) not in (tuple(phases) or (moment.phase,)):
        return False
    return all(name in runs[0].metrics for name in moment.kept)


def wanted(moment: Moment) -> str:
    if moment.kept is None:
        return "[{}] no record and a line saying nothing was measured".format(moment.phase)
    return "[{}] a run with status {}{} holding {}".format(
        moment.phase, moment.status, " in phase {!r}".format(moment.phase) if moment.status == "interrupted" else "",
        ", ".join(moment.kept) or "what it measured")


def described(runs: Sequence[results.Run], said: str) -> str:
    if not runs:
        return "no record ({!r})".format(said)
    run = runs[0]
    return "a run with status {}, phase {!r}, metrics {}".format(run.status, recorded_phase(run), sorted(run.metrics))
