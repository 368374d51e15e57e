"""English text for training a small language model offline, split into train and validation, and
the token windows a model trains on.

    corpus = llm.load_corpus()                       # offline: the Python documentation that ships with Python
    corpus = llm.load_corpus("wikitext", config="wikitext-2-raw-v1")   # a hub dataset, where the hub is reachable

The text, its fingerprint, the split by key hash and the windows: docs/cerebras.md, "Corpus" and
"Batches" of the LLaMA exercise. Two runs with one seed see the same batches.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError

__all__ = ["Corpus", "OFFLINE_CORPUS", "load_corpus", "split_documents", "CorpusUnavailable", "encode_text",
           "token_batches"]

#: The corpus every exercise uses unless told otherwise: it ships with Python.
OFFLINE_CORPUS = "pydoc"

#: Documents whose key hashes into the last VALIDATION_SHARE of the range go to validation.
VALIDATION_SHARE = 0.1


class CorpusUnavailable(LabkitError, RuntimeError):
    """A hub dataset could not be loaded (no ``datasets`` package, no network, no such name)."""


@dataclass(frozen=True)
class Corpus:
    """A corpus's text, split: ``train`` and ``validation`` are each one string of documents
    separated by blank lines; ``fingerprint`` is the SHA-256 (first 16 hex digits) of both."""

    name: str
    train: str
    validation: str
    documents: int

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for part in (self.name, self.train, self.validation):
            digest.update(part.encode("utf-8"))
            digest.update(b"\0")
        return digest.hexdigest()[:16]

    def __repr__(self) -> str:
        return "Corpus({!r}: {} documents, {:,} + {:,} characters, {})".format(
            self.name, self.documents, len(self.train), len(self.validation), self.fingerprint)


def _in_validation(key: str) -> bool:
    value = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16)
    return value >= (1 - VALIDATION_SHARE) * 0x100000000


def split_documents(documents: Sequence[Tuple[str, str]]) -> Tuple[List[str], List[str]]:
    """(train, validation) texts of ``(key, text)`` documents, in key order, by the hash rule
    (at least one document on each side when there are two or more). A paragraph of a
    validation document is removed from the training documents that repeat it (the Python
    reference repeats some sections under several topics), so validation text is never trained on."""
    ordered = sorted(documents)
    train = [text for key, text in ordered if not _in_validation(key)]
    validation = [text for key, text in ordered if _in_validation(key)]
    if len(ordered) >= 2 and not validation:
        validation, train = train[-1:], train[:-1]
    elif len(ordered) >= 2 and not train:
        train, validation = validation[:1], validation[1:]
    held_out = {paragraph for text in validation for paragraph in text.split("\n\n")}
    train = ["\n\n".join(p for p in text.split("\n\n") if p not in held_out) for text in train]
    return [text for text in train if text], validation


def hub_documents(name: str, config: Optional[str] = None, split: str = "train") -> List[str]:
    """The ``text`` of every row of a hub dataset's ``split`` (``datasets.load_dataset``; a local
    dataset folder or script works too). Empty rows are dropped."""
    try:
        import datasets
    except ImportError:
        raise CorpusUnavailable("corpus = {!r} is a hub dataset and needs the `datasets` package "
                                "(pip install datasets); the offline corpus is {!r}".format(name, OFFLINE_CORPUS)) from None
    try:
        rows: Any = datasets.load_dataset(name, config, split=split)
    except Exception as exc:  # no network, no such dataset or split: say which, keep the cause
        raise CorpusUnavailable("corpus = {!r} (config {!r}, split {!r}) could not be loaded: {}; the offline "
                                "corpus is {!r}".format(name, config, split, exc, OFFLINE_CORPUS)) from exc
    if "text" not in rows.column_names:
        raise CorpusUnavailable("corpus = {!r} has no 'text' column; its columns are {}".format(
            name, ", ".join(rows.column_names)))
    return [text for text in rows["text"] if text and text.strip()]


def load_corpus(name: str = OFFLINE_CORPUS, config: Optional[str] = None) -> Corpus:
    """The corpus ``name``, split into train and validation text (see the module docstring)."""
    if name == OFFLINE_CORPUS:
        from pydoc_data.topics import topics  # the Python reference manual's topics, shipped with Python

        documents = [(key, text.strip()) for key, text in topics.items() if text.strip()]
        train, validation = split_documents(documents)
        return Corpus(name, "\n\n".join(train), "\n\n".join(validation), len(documents))
    train = hub_documents(name, config, "train")
    try:
        validation = hub_documents(name, config, "validation")
    except CorpusUnavailable:  # no validation split: hold out by the hash rule
        train, validation = split_documents([("{:09d}".format(i), text) for i, text in enumerate(train)])
    label = name if config is None else "{}/{}".format(name, config)
    return Corpus(label, "\n\n".join(train), "\n\n".join(validation), len(train) + len(validation))


def encode_text(tokenizer: Any, text: str) -> Any:
    """The token ids of ``text`` (documents separated by blank lines, each starting with ``<s>``)
    as one 1-D ``torch.long`` tensor."""
    import torch

    documents = [part for part in text.split("\n\n") if part.strip()]
    encoded = tokenizer(documents, add_special_tokens=True)["input_ids"]
    return torch.tensor([token for ids in encoded for token in ids], dtype=torch.long)


def token_batches(ids: Any, batch_size: int, sequence_length: int, seed: int = 0) -> Iterator[Dict[str, Any]]:
    """Endless batches of ``batch_size`` windows of ``sequence_length`` tokens of ``ids``."""
    import torch

    if batch_size < 1 or sequence_length < 2:
        raise ValueError("batch_size must be at least 1 and sequence_length at least 2 (got {}, {})".format(
            batch_size, sequence_length))
    if len(ids) <= sequence_length:
        raise ValueError("sequence_length = {}: the text has only {} tokens; allowed: fewer than {}".format(
            sequence_length, len(ids), len(ids)))
    generator = torch.Generator().manual_seed(seed)
    offsets = torch.arange(sequence_length)
    while True:
        starts = torch.randint(0, len(ids) - sequence_length + 1, (batch_size,), generator=generator)
        windows = ids[starts[:, None] + offsets[None, :]]
        yield {"input_ids": windows, "labels": windows}
