"""Evaluation data: the proof point's tokenization, the shipped sets, and the scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labkit.testbeds.groq import evalsets, models


def test_spearman_matches_scipy_with_ties():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        a = rng.integers(0, 6, size=30).astype(float)  # many ties, like STS scores
        b = a + rng.normal(0, 2, size=30)
        assert evalsets.spearman(a, b) == pytest.approx(scipy_stats.spearmanr(a, b)[0], abs=1e-12)


def test_sentence_is_zero_padded_with_a_boolean_mask(tiny_dirs):
    loaded = models.load(str(tiny_dirs["classifier"]))
    inputs, cut = evalsets.encode_sentence(loaded.tokenizer, "a good film", 16)
    ids = loaded.tokenizer.encode("a good film")
    assert not cut and inputs["input_ids"].shape == (1, 16) and inputs["attention_mask"].dtype == torch.bool
    assert inputs["input_ids"][0, :len(ids)].tolist() == ids and inputs["input_ids"][0, len(ids):].eq(0).all()
    assert inputs["attention_mask"].sum().item() == len(ids)
    long_inputs, cut = evalsets.encode_sentence(loaded.tokenizer, "good " * 30, 16)
    assert cut and long_inputs["attention_mask"].all() and long_inputs["input_ids"][0, -1].item() == loaded.tokenizer.sep_token_id


def test_pairs_longer_than_the_length_are_skipped_as_the_proof_point_does(tiny_dirs):
    loaded = models.load(str(tiny_dirs["encoder"]))
    pair = evalsets.encode_pair(loaded.tokenizer, "a man plays guitar", "the cat sleeps", 12)
    assert pair["input_ids"].shape == (2, 12) and set(pair) == {"input_ids", "token_type_ids", "attention_mask"}
    assert evalsets.encode_pair(loaded.tokenizer, "the " * 20, "a cat", 12) is None


def test_offline_sets_are_named_and_flagged(tiny_dirs):
    classifier = models.load(str(tiny_dirs["classifier"]))
    data = evalsets.load("classification", classifier.tokenizer, 32, num_samples=10, hub=False)
    assert len(data) == 10 and data.offline and "hand-written" in data.name
    assert any("NOT comparable" in n and "77.47" in n for n in data.notes)
    encoder = models.load(str(tiny_dirs["encoder"]))
    pairs = evalsets.load("similarity", encoder.tokenizer, 64, hub=False)
    assert len(pairs) == len(evalsets.sts_pairs()[0]) and pairs.labels.max() == 1.0


def test_accuracy_and_similarity_scores(tiny_dirs):
    encoder = models.load(str(tiny_dirs["encoder"]))
    data = evalsets.load("similarity", encoder.tokenizer, 64, num_samples=6, hub=False)
    hidden = [torch.randn(2, 64, 8) for _ in range(6)]
    sims = [evalsets.pair_similarity(h, x["attention_mask"]) for h, x in zip(hidden, data.inputs)]
    assert data.score(hidden) == pytest.approx(evalsets.spearman(data.labels, sims))
    same = torch.randn(1, 64, 8).repeat(2, 1, 1)
    mask = torch.ones(2, 64, dtype=torch.bool)
    assert evalsets.pair_similarity(same, mask) == pytest.approx(1.0)


def test_hub_sst_labels_are_binarised_like_the_proof_point(monkeypatch, tiny_dirs):
    datasets = pytest.importorskip("datasets")
    # the real datasets library, with a split built in memory in place of the download
    split = datasets.Dataset.from_dict({"sentence": ["a good film", "an awful plot", "it was fun"],
                                        "label": [0.9, 0.1, 0.6], "tokens": ["", "", ""]})
    calls = []

    def load_dataset(*args, **kwargs):
        calls.append(args)
        return split

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    loaded = models.load(str(tiny_dirs["classifier"]))
    data = evalsets.load("classification", loaded.tokenizer, 16)
    assert calls == [("stanfordnlp/sst",)]
    assert data.labels.tolist() == [1, 0, 1] and not data.offline and "SST test split" in data.name


def test_dummy_inputs_are_the_proof_points():
    cls = evalsets.dummy_inputs("classification", 128)
    assert list(cls) == ["input_ids", "attention_mask"] and cls["input_ids"].shape == (1, 128)
    sim = evalsets.dummy_inputs("similarity", 128, batch_size=3)
    assert list(sim) == ["input_ids", "token_type_ids", "attention_mask"] and sim["attention_mask"].shape == (6, 128)
    assert sim["attention_mask"].dtype == torch.bool and sim["input_ids"].eq(1).all()
