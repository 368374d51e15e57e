"""Language-model batches from a corpus: token windows of a fixed length, drawn reproducibly.

    from labkit import llm
    ids = llm.encode_text(tokenizer, corpus.train)          # one long tensor of token ids
    batches = llm.token_batches(ids, batch_size=8, sequence_length=128, seed=0)
    batch = next(batches)            # {"input_ids": (8, 128), "labels": (8, 128)}

As the modelzoo's GPT data (``GptHDF5MapDataProcessor``) does, every sample is a window of
exactly ``sequence_length`` tokens of the concatenated documents, with no padding; the labels
are the inputs (the model shifts them by one to predict the next token). Windows start at
random offsets drawn by a seeded generator, so two runs with one seed see the same batches.
"""

from __future__ import annotations

from typing import Any, Dict, Iterator

__all__ = ["encode_text", "token_batches"]


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
