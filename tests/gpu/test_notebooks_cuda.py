"""Every training notebook on CUDA at small sizes, through a real kernel (labkit.execute, papermill), checking
what the accelerator policy chose and what the runs recorded: the precision, the micro-batch, the device's
name, no "0.0 s". Skipped without a GPU (tests/gpu/conftest.py); `make test-gpu` runs them.

With LABKIT_GPU_TESTS_ON_CPU=1 they run on the CPU (tests/gpu/device_check.sh --cpu), so their logic is
exercised where no GPU is lent; the assertions about the GPU itself apply only on CUDA.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labkit import results
from labkit.execute import run_notebook

from .conftest import DEVICE
from .launch_check import problems

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
ON_GPU = DEVICE == "cuda"
CELL_TIMEOUT = 300  # seconds a cell may take: a compile or a 7B build, never a hang


def _gpu():
    import torch

    return torch.cuda.get_device_name(), torch.cuda.get_device_capability()


def _execute(tmp_path: Path, notebook: str, **parameters):
    out = tmp_path / (Path(notebook).stem + "-cuda.ipynb")
    outcome = run_notebook(str(NOTEBOOKS / notebook), str(out), parameters=parameters, timeout=CELL_TIMEOUT,
                           cwd=str(tmp_path), kernel_name="python3")
    text = out.read_text() if out.exists() else ""
    assert outcome.ok, "{} ended {}: {}".format(notebook, outcome.status, outcome.error)
    assert "Traceback" not in text and "OutOfMemoryError" not in text
    return results.read(str(out)).runs, _outputs(json.loads(text))


def _outputs(nb) -> str:
    """Everything the cells showed, as text (streams and text/plain)."""
    parts = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def _expected_precision(launch_bound: bool = False) -> str:
    if not ON_GPU:
        return "fp32"
    _, capability = _gpu()
    if capability < (8, 0):
        return "fp32"
    return "tf32" if launch_bound else "bf16"


def _check_device(run) -> None:
    if ON_GPU:
        name, _ = _gpu()
        assert run.environment["device_name"] == name
    assert run.environment.get("micro_batch", 0) >= 1 and run.environment.get("accumulation", 0) >= 1
    assert run.environment.get("launch") in ("eager", "compiled", "cuda graph")
    assert (run.environment.get("peak_memory_bytes", 0) > 0) == ON_GPU


def test_mnist_on_cuda_records_its_precision_and_a_captured_step(tmp_path, mnist_dir):
    runs, shown = _execute(tmp_path, "graphcore/mnist.ipynb", device=DEVICE, epochs=1, max_train_samples=4000,
                           max_test_samples=800)
    run = runs[0]
    assert run.params["precision"] == _expected_precision(launch_bound=True)
    _check_device(run)
    assert not problems([run], DEVICE)  # a CUDA graph on a GPU, or the capture's error
    assert run.metrics["throughput"] > 0 if "throughput" in run.metrics else True
    assert not re.search(r"\b0\.0 s\b", shown)


def test_cerebras_bert_large_on_cuda_takes_bf16_and_the_micro_batch_that_fits(tmp_path):
    # BERT-Large at the course's batch of 1024: on a GPU the probe backs off from 1024 (out of memory) to a
    # micro-batch that fits, and accumulation keeps the global batch; two steps only.
    size = "large" if ON_GPU else "micro"
    runs, shown = _execute(tmp_path, "cerebras/bert_large.ipynb", target=DEVICE, model_size=size,
                           batch_size=1024 if ON_GPU else 16, max_steps=2, log_steps=1, max_seq_length=128 if ON_GPU
                           else 32, micro_batch_size="auto")
    run = runs[0]
    assert run.params["precision"] == _expected_precision()
    _check_device(run)
    micro, accumulation = run.environment["micro_batch"], run.environment["accumulation"]
    assert micro * accumulation == run.params["batch_size"]
    if ON_GPU:
        assert accumulation > 1, "BERT-Large at 1024 sequences should not fit one forward pass"
        assert "Time: about" in shown and "Gradient accumulation: {} micro-batches of {}".format(
            accumulation, micro) in shown
        assert run.metrics["peak_memory_gb"] > 1 and run.metrics["model_tflops"] > 0
        assert "mfu" in run.metrics or not any(name in _gpu()[0] for name in ("H100", "H200", "A100"))
    assert not re.search(r"\b0\.0 s\b", shown)


def test_sambanova_bert_large_one_rank_on_cuda(tmp_path):
    runs, shown = _execute(tmp_path, "sambanova/bert_large.ipynb", target="portable", device=DEVICE, ntasks=1,
                           ntasks_per_node=1, model_size="tiny", batch_size=32, steps=10, max_seq_length=128,
                           sweep_ntasks=[])
    run = runs[0]
    assert run.params["precision"] == _expected_precision()
    _check_device(run)
    assert run.metrics["replicas_in_sync"] is True and run.metrics["sequences_per_second"] > 0


def test_llama_on_cuda_records_tokens_per_second_and_mfu(tmp_path):
    runs, shown = _execute(tmp_path, "cerebras/llama2_7b.ipynb", device=DEVICE, model_size="tiny", batch_size=4,
                           steps=10, log_steps=5, sequence_length=64)
    run = runs[0]
    assert run.params["precision"] == _expected_precision()
    _check_device(run)
    assert run.metrics["tokens_per_s"] > 0
    if ON_GPU:
        assert run.metrics["peak_memory_gb"] > 0
        assert "mfu" in run.metrics or not any(name in _gpu()[0] for name in ("H100", "H200", "A100"))


def test_llama_auto_plans_the_largest_preset_this_gpu_trains(tmp_path):
    # The plan alone (no training): on a GPU with the memory for LLaMA-2-7B's shapes (an H200) "7b",
    # elsewhere a smaller preset and a Why line that says what 7b would need.
    import torch

    from labkit.testbeds.cerebras import llama2_7b

    config = llama2_7b.SPEC.validate({"device": DEVICE, "model_size": "auto", "batch_size": 4, "steps": 5,
                                      "sequence_length": 128})
    chosen = llama2_7b.plan(config)
    text = str(chosen)
    if not ON_GPU:
        assert chosen.steps.model_size == llama2_7b.spec.PORTABLE_SIZE
        return
    from labkit import llm
    from labkit.testbeds.cerebras.llama2_7b.train import VOCAB_SIZE

    memory = torch.cuda.get_device_properties(0).total_memory
    if memory >= 130e9:
        assert chosen.steps.model_size == "7b"
    else:
        assert chosen.steps.model_size != "7b" and "7b needs about" in text
    # Checkpointing is what the plan's own arithmetic or its probe decided, and its Why line says which.
    if chosen.steps.model_size == "7b":
        needs = llm.training_memory_bytes("7b", VOCAB_SIZE, 4, 128, False, "bf16")
        over = needs > llm.device_plan.MEMORY_SHARE * memory
        assert chosen.steps.checkpointing == (over or "ran out of memory in its probe step" in text)
        assert ("activation checkpointing (" in text) == chosen.steps.checkpointing
    assert "Time: about" in text and "bf16" in text


def test_the_scaling_study_on_cuda_never_shows_a_zero_second_epoch(tmp_path):
    runs, shown = _execute(tmp_path, "comparison/ipu_vs_gpu.ipynb", device=DEVICE, replicas=[1],
                           micro_batch_sizes=[128], epochs=2, model="small")
    assert runs, "the study recorded no run"
    assert not problems(runs, DEVICE)
    assert not re.search(r"\b0\.0 s\b", shown)
    if ON_GPU:
        name, _ = _gpu()
        assert name in shown
