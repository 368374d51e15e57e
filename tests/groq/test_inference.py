"""Backends for real: ONNX export and ONNX Runtime against PyTorch eager; backend selection."""

from __future__ import annotations

import pytest
import torch

from labkit.testbeds.groq import backends, evalsets, models
from labkit.testbeds.groq.backends import OnnxEngine, model_fingerprint

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("kind", ["classifier", "encoder"])
def test_onnx_runtime_matches_eager_on_padded_real_inputs(tiny_dirs, kind):
    loaded = models.load(str(tiny_dirs[kind]))
    dummy = evalsets.dummy_inputs(loaded.task, 24)
    eager = backends.make("cpu", loaded.model, loaded.task, dummy)
    onnx = backends.make("onnxruntime", loaded.model, loaded.task, dummy, label=str(tiny_dirs[kind]))
    data = evalsets.load(loaded.task, loaded.tokenizer, 24, num_samples=5, hub=False)
    for inputs in data.inputs:
        assert not inputs["attention_mask"].all()  # real padding, so the mask matters
        torch.testing.assert_close(onnx(inputs), eager(inputs), rtol=1e-4, atol=1e-5)


def test_exports_are_cached_by_model_and_shape(tiny_dirs):
    loaded = models.load(str(tiny_dirs["classifier"]))
    first = OnnxEngine(loaded.model, loaded.task, evalsets.dummy_inputs(loaded.task, 20), "tiny")
    again = OnnxEngine(loaded.model, loaded.task, evalsets.dummy_inputs(loaded.task, 20), "tiny")
    longer = OnnxEngine(loaded.model, loaded.task, evalsets.dummy_inputs(loaded.task, 40), "tiny")
    assert again.path == first.path and not again.build.built_now
    assert longer.path != first.path and longer.build.built_now and "l40" in longer.path.name
    with pytest.raises(Exception, match="invalid dimensions"):
        first(evalsets.dummy_inputs(loaded.task, 40))  # the fixed shape refuses another length


def test_changed_weights_mean_a_new_export(tiny_dirs):
    loaded = models.load(str(tiny_dirs["classifier"]))
    before = model_fingerprint(loaded.model)
    other = models.load(str(tiny_dirs["classifier"]))
    with torch.no_grad():
        other.model.classifier.bias.add_(1.0)
    assert model_fingerprint(other.model) != before


def test_benchmark_and_dataset_loop_report_seconds(tiny_dirs):
    loaded = models.load(str(tiny_dirs["classifier"]))
    dummy = evalsets.dummy_inputs(loaded.task, 16)
    engine = backends.make("cpu", loaded.model, loaded.task, dummy)
    outputs, wall = engine.run_dataset([dummy] * 3)
    assert len(outputs) == 3 and outputs[0].shape == (1, 2) and wall > 0
    assert 0 < engine.benchmark(dummy, repetitions=3) < wall * 10


def test_backend_names_are_checked():
    assert backends.resolve_backends("onnxruntime") == ["cpu", "onnxruntime"]
    assert backends.resolve_backends("auto")[:2] == ["cpu", "onnxruntime"]
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'.*cpu, onnxruntime, cuda, groq"):
        backends.resolve_backends("cpu,tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"'cuda' is not available here: torch sees no CUDA GPU"):
            backends.resolve_backends("cuda")
    with pytest.raises(ValueError, match=r"'groq' is not available here: groqflow is not installed"):
        backends.resolve_backends("groq")
    with pytest.raises(backends.BackendError, match=r"backend 'tpu': unknown; use one of cpu, onnxruntime, cuda"):
        backends.make("tpu", None, "classify", {})
