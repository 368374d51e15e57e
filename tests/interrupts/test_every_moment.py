"""Ctrl-C at every moment of every notebook keeps what was measured (issue 36).

For each of the nine notebooks, at small sizes, `labkit run NOTEBOOK OUTPUT --show-output` runs in a
process group of its own and gets a SIGINT, as a terminal sends it, at one phase boundary its output
shows (driven by the output, never by sleeps): one run per boundary. Each time:

- exit status 130, one summary line on stderr, no traceback anywhere;
- the executed notebook is written;
- after the first measurement: a record (``labkit results OUT``) with status interrupted, the phase it
  stopped in, and every figure measured by then; before it: no record, and the summary says so.

    .venv/bin/python -m pytest tests/interrupts -q                    # every notebook x phase
    .venv/bin/python -m pytest tests/interrupts -q -k inference       # one notebook's
    LABKIT_INTERRUPT_TABLE=kept.jsonl ...                             # also what each interrupt kept

An interrupt is a signal: it lands a moment after the text that prompted it, later still on a
busy machine. So a phase is checked as "this one or a later one", and the figures as "at least
those measured when the text showed".
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import nbformat
import pytest

from labkit import results
from tests.interrupts.terminal import ROOT, Ended, Terminal

pytestmark = pytest.mark.timing  # each test presses Ctrl-C at a moment

#: What the summary line says when the interrupt came before anything was measured.
NOTHING_MEASURED = re.compile(r"no run was recorded|nothing (had been|was) measured")


@dataclass(frozen=True)
class Moment:
    """One phase boundary: the output that marks it and what a Ctrl-C there must keep."""

    phase: str  # the phase the interrupt lands in, as the record names it (Run.stopped_in)
    after: str  # regular expression: the frame of output that ends the phase before
    kept: Optional[Tuple[str, ...]] = None  # metrics measured by then; None: nothing measured yet
    status: str = "interrupted"  # "complete": the run cell had ended, a later cell was interrupted


@dataclass(frozen=True)
class Walk:
    """One notebook at small sizes and the moments its output shows, in order."""

    notebook: str
    arguments: Tuple[str, ...]
    moments: Tuple[Moment, ...]
    evidence: str = ""  # a folder copied into the kernel's working directory (the homework's hand-in)

    def from_(self, moment: Moment) -> Tuple[Moment, ...]:
        """The moments an interrupt prompted at ``moment`` may land in: it and the later ones."""
        return self.moments[self.moments.index(moment):]


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
        ("-y", "{epochs: 2, max_train_samples: 800, max_test_samples: 4000, device: cpu}"),
        (Moment("setup", r"^Training on "),
         Moment("epoch 1/2", r"^Epoch 1/2:\s+0%", MNIST_STEP),
         Moment("epoch 2/2", r"^Epoch 1/2: [0-9.]+ s", MNIST_EPOCH),
         Moment("testing", r"^Testing:", MNIST_EPOCH + ("train_throughput",)),
         Moment("summary", r"^Training throughput:", MNIST_EPOCH + ("train_throughput", "test_accuracy")),
         done(r"^Accuracy on test set", *MNIST_EPOCH, "test_accuracy"))),
    "sambanova/inference": Walk(
        "notebooks/sambanova/inference.ipynb",
        ("-y", "{num_prompts: 4, max_tokens: 8, concurrency: [1, 2], repeats: 2, warmup_requests: 1}"),
        (Moment("setup", r"^batched: .* is served"),
         Moment("warm-up", r"^requests:\s+0%"),
         Moment("requests", r"^requests:\s+([89]|[1-9][0-9])%", ("requests_completed", "e2el_median")),
         Moment("summary", r"^requests:\s+100%", INFERENCE),
         done(r"^Client-side figures", *INFERENCE))),
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
        (Moment("setup", r"labkit portable LLaMA"),
         Moment("training", r"Step=10, ", LLAMA_STEPS),
         Moment("validation", r"Processed \d+ training sample", LLAMA_STEPS + ("train_seconds",)),
         done(r"^Note: Portable run", *LLAMA_STEPS, "validation_loss"))),
    "cerebras/bert_large": Walk(
        "notebooks/cerebras/bert_large.ipynb",
        ("-y", "{model_size: micro, batch_size: 8, max_steps: 10, log_steps: 5, max_seq_length: 32, target: cpu,"
               " compare_batch_sizes: [2]}"),
        (Moment("setup", r"Initializing module BertForPreTraining"),
         Moment("training", r"Step=5, ", ("global_rate",)),
         Moment("summary", r"Training completed successfully", ("global_rate", "samples_per_sec")),
         done(r"Effective batch size is 2\.", "global_rate", "samples_per_sec"))),
    "sambanova/bert_large": Walk(
        "notebooks/sambanova/bert_large.ipynb",
        ("-y", "{ntasks: 2, ntasks_per_node: 2, model_size: micro, batch_size: 4, steps: 8, max_seq_length: 32,"
               " target: portable, device: cpu, sweep_ntasks: [1]}"),
        (Moment("training", r"^2 ranks x 8 steps:\s+0%", ()),
         Moment("summary", r"^2 ranks x 8 steps:\s+100%", ("e2e_train_time",)),
         done(r"^1 rank x 8 steps:\s+0%", "e2e_train_time", "sequences_per_second"))),
    "comparison/ipu_vs_gpu": Walk(
        "notebooks/comparison/ipu_vs_gpu.ipynb",
        ("-y", "{replicas: [1, 2], micro_batch_sizes: [10], images_per_epoch: 128, epochs: 1, device: cpu}"),
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

CASES = [pytest.param(key, moment, id="{}-{}{}".format(key, moment.phase.replace(" ", "_").replace("/", "of"),
                                                     "" if number == 0 or moment.phase != walk.moments[number - 1].phase
                                                     else number))
         for key, walk in WALKS.items() for number, moment in enumerate(walk.moments)]


def recorded_phase(run: results.Run) -> str:
    """The phase an interrupted run's record names ("" when it names none: a record from before issue 36)."""
    return getattr(run, "stopped_in", "") or ""


def kept(key: str, out: Path) -> Tuple[List[results.Run], Optional[str]]:
    """The runs of exercise ``key`` the output notebook records, and its error line."""
    found = results.read(out)
    return [run for run in found.runs if run.exercise == key], found.error


def _note(key: str, moment: Moment, ended: Ended, runs: Sequence[results.Run], out: Path) -> None:
    """With LABKIT_INTERRUPT_TABLE, one JSON line saying what this interrupt kept (the issue's table)."""
    table = os.environ.get("LABKIT_INTERRUPT_TABLE")
    if not table:
        return
    line = {"notebook": key, "phase": moment.phase, "exit": ended.code, "written": out.exists(),
            "summary": ended.stderr_lines[-1] if ended.stderr_lines else "",
            "stderr_lines": len(ended.stderr_lines), "traceback": "Traceback" in ended.stdout + ended.stderr,
            "runs": [{"status": r.status, "phase": recorded_phase(r), "stopped_at": r.stopped_at(),
                      "metrics": sorted(r.metrics)} for r in runs]}
    with open(table, "a") as f:
        f.write(json.dumps(line) + "\n")


@pytest.mark.parametrize("key, moment", CASES)
def test_ctrl_c_at_a_phase_boundary_keeps_what_was_measured(key, moment, tmp_path):
    walk = WALKS[key]
    cwd = tmp_path
    if walk.evidence:
        cwd = tmp_path / "handin"
        shutil.copytree(str(ROOT / walk.evidence), str(cwd))
    out = tmp_path / "out.ipynb"
    run = Terminal(ROOT / walk.notebook, out, walk.arguments + ("--cwd", str(cwd)), cwd=tmp_path)
    try:
        run.wait_for(moment.after)
        run.ctrl_c()
        ended = run.finish()
    finally:
        run.kill()
    runs, error = kept(key, out) if out.exists() else ([], None)
    _note(key, moment, ended, runs, out)

    said = "\n".join(ended.stderr_lines)
    assert ended.code == 130, "exit {}; stderr:\n{}".format(ended.code, ended.stderr)
    assert "Traceback" not in ended.stdout + ended.stderr, ended.stdout[-3000:] + ended.stderr
    assert len(ended.stderr_lines) == 1 and said.startswith("labkit run: "), said
    assert out.exists() and nbformat.read(str(out), as_version=4).cells, "the executed notebook was not written"
    landed = [m for m in walk.from_(moment) if _matches(m, runs, said)]
    assert landed, "Ctrl-C at {!r} ({}) kept {}; wanted {}".format(
        moment.after, moment.phase, _described(runs, said), " or ".join(_wanted(m) for m in walk.from_(moment)))


def _matches(moment: Moment, runs: Sequence[results.Run], said: str) -> bool:
    """Whether what was kept is what an interrupt in ``moment``'s phase must keep."""
    if moment.kept is None:  # before the first measurement: no record, and the line says why
        return not runs and bool(NOTHING_MEASURED.search(said))
    if not runs or runs[0].status != moment.status:
        return False
    if moment.status == "interrupted" and not recorded_phase(runs[0]).startswith(moment.phase):
        return False
    return all(name in runs[0].metrics for name in moment.kept)


def _wanted(moment: Moment) -> str:
    if moment.kept is None:
        return "[{}] no record and a line saying nothing was measured".format(moment.phase)
    return "[{}] a run with status {}{} holding {}".format(
        moment.phase, moment.status, " in phase {!r}".format(moment.phase) if moment.status == "interrupted" else "",
        ", ".join(moment.kept) or "what it measured")


def _described(runs: Sequence[results.Run], said: str) -> str:
    if not runs:
        return "no record ({!r})".format(said)
    run = runs[0]
    return "a run with status {}, phase {!r}, metrics {}".format(run.status, recorded_phase(run), sorted(run.metrics))
