"""Fixtures for the Groq exercise's tests: a private labkit cache, a tiny local model, the fake GroqFlow."""

from __future__ import annotations

import os

import pytest

from tests.fakes import GROQFLOW
from tests.fakes.groqnode import groq_node


@pytest.fixture(scope="session", autouse=True)
def labkit_cache(tmp_path_factory):
    """Stand-in models and ONNX exports go to a cache of this test session, never ~/.cache."""
    path = tmp_path_factory.mktemp("labkit-cache")
    old = os.environ.get("LABKIT_CACHE_DIR")
    os.environ["LABKIT_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("LABKIT_CACHE_DIR", None)
    else:
        os.environ["LABKIT_CACHE_DIR"] = old


def _groqflow_modules():
    import sys

    return [m for m in sys.modules if m.split(".")[0] in ("groqflow", "onnxflow")]


@pytest.fixture
def fake_groqflow(monkeypatch, tmp_path):
    """The fake groqflow importable on a stand-in GroqNode with one GroqCard (tests/fakes/groqnode.py),
    with its own build cache; the node's folder is ``fake_groqflow / "node"``."""
    import sys

    monkeypatch.syspath_prepend(str(GROQFLOW))
    for name, value in groq_node(tmp_path / "node", cards=1).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("GROQFLOW_CACHE_DIR", str(tmp_path / "groqflow-cache"))
    for name in _groqflow_modules():
        monkeypatch.delitem(sys.modules, name)
    yield tmp_path
    for name in _groqflow_modules():
        sys.modules.pop(name, None)


def _vocab() -> list:
    words = ("the a an is was film movie good great bad awful boring fun loved hated it this that and "
             "not very plot acting cast story man woman plays guitar cat sleeps sofa dog runs").split()
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words + [".", ",", "!"]


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory):
    """Two tiny BERTs saved with save_pretrained (a classifier and an encoder), with a real tokenizer."""
    import torch
    import transformers

    root = tmp_path_factory.mktemp("tiny-models")
    vocab_file = root / "vocab.txt"
    vocab_file.write_text("\n".join(_vocab()) + "\n")
    tokenizer = transformers.BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True)
    common = dict(vocab_size=len(_vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(0)
    classifier = transformers.BertForSequenceClassification(transformers.BertConfig(
        num_labels=2, id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1},
        architectures=["BertForSequenceClassification"], **common)).eval()
    encoder = transformers.BertModel(transformers.BertConfig(architectures=["BertModel"], **common)).eval()
    dirs = {}
    for name, model in (("classifier", classifier), ("encoder", encoder)):
        target = root / name
        model.save_pretrained(str(target))
        tokenizer.save_pretrained(str(target))
        dirs[name] = target
    return dirs


def embedding_classifier(vocab: int, hidden: int):
    """(model, dummy inputs): an embedding and a linear head taking BERT's two inputs, with
    vocab x hidden + 2 x hidden + 2 parameters (what GroqFlow counts to choose the chips)."""
    import torch

    class EmbeddingClassifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(vocab, hidden)
            self.head = torch.nn.Linear(hidden, 2)

        def forward(self, input_ids, attention_mask):
            return {"logits": self.head((self.embed(input_ids) * attention_mask.unsqueeze(-1)).mean(1))}

    torch.manual_seed(0)
    dummy = {"input_ids": torch.ones(1, 16, dtype=torch.long), "attention_mask": torch.ones(1, 16, dtype=torch.long)}
    return EmbeddingClassifier().eval(), dummy
