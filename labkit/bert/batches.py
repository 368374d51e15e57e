"""Synthetic masked-LM + next-sentence batches for BERT pre-training, the same for the same seed."""

from __future__ import annotations

from typing import Any, Dict, Iterator, Optional

from labkit.bert.presets import BERT_VOCAB_SIZE

__all__ = ["special_ids", "synthetic_batches"]

# Special token ids. With BERT's vocabulary these are its real ids ([PAD] 0, [CLS] 101, [SEP]
# 102, [MASK] 103; ordinary WordPieces start at 1996). Small vocabularies use 0-3.
_BERT_SPECIAL = {"pad": 0, "cls": 101, "sep": 102, "mask": 103, "first_word": 1996}
_SMALL_SPECIAL = {"pad": 0, "cls": 1, "sep": 2, "mask": 3, "first_word": 4}


def special_ids(vocab_size: int) -> Dict[str, int]:
    """The ids of [PAD], [CLS], [SEP], [MASK] and the first ordinary word for ``vocab_size``."""
    return _BERT_SPECIAL if vocab_size >= 4 * _BERT_SPECIAL["first_word"] else _SMALL_SPECIAL


def synthetic_batches(batch_size: int, max_seq_length: int = 128, vocab_size: int = BERT_VOCAB_SIZE,
                      seed: int = 0, mask_prob: float = 0.15, max_predictions: Optional[int] = None,
                      short_seq_prob: float = 0.1, num_batches: Optional[int] = None,
                      topics: int = 16) -> Iterator[Dict[str, Any]]:
    """Masked-LM + next-sentence batches of synthetic text, the same for the same ``seed``.

    Each sequence is ``[CLS] A [SEP] B [SEP]`` padded to ``max_seq_length`` (shorter with
    probability ``short_seq_prob``, as BERT's data preparation does). Words follow a Zipf
    law within a "topic"; B continues A's topic when ``next_sentence_label`` is 0 (IsNext)
    and comes from another topic when it is 1, so both objectives have something to learn.
    ``mask_prob`` of the words (at most ``max_predictions`` per sequence, 20 for length 128
    as in the modelzoo's MSL128 data) are chosen; of those 80% become [MASK], 10% a random
    word, 10% stay. ``labels`` hold the original word there and -100 everywhere else.

    Yields dicts of CPU tensors: input_ids, token_type_ids, attention_mask (int64, shape
    batch x length), labels (same), next_sentence_label (batch). Endless unless
    ``num_batches`` is given.
    """
    import torch

    if batch_size < 1:
        raise ValueError("batch_size={} must be at least 1".format(batch_size))
    length = max_seq_length
    if length < 8:
        raise ValueError("max_seq_length={} is too short; use 8 or more".format(length))
    ids = special_ids(vocab_size)
    first = ids["first_word"]
    words = vocab_size - first
    if words < 2 * topics:
        raise ValueError("vocab_size={} leaves too few ordinary words".format(vocab_size))
    if max_predictions is None:
        max_predictions = max(1, int(round(length * mask_prob)))
    gen = torch.Generator().manual_seed(int(seed))
    # Zipf over word ranks; a topic shifts which words are frequent.
    zipf = 1.0 / torch.arange(1, words + 1, dtype=torch.float64)
    zipf = (zipf / zipf.sum()).float()
    positions = torch.arange(length)
    made = 0
    while num_batches is None or made < num_batches:
        made += 1
        b = batch_size
        # Lengths: total real tokens and the split between A and B.
        total = torch.full((b,), length, dtype=torch.long)
        short = torch.rand(b, generator=gen) < short_seq_prob
        total[short] = torch.randint(8, length + 1, (int(short.sum()),), generator=gen)
        words_in_row = total - 3
        len_a = 1 + (torch.rand(b, generator=gen) * (words_in_row - 1).float()).to(torch.int64)
        sep1 = len_a + 1
        end = total - 1  # the final [SEP]
        # Topics and the next-sentence label (0 = B follows A, 1 = B is random).
        topic_a = torch.randint(0, topics, (b,), generator=gen)
        nsp = torch.randint(0, 2, (b,), generator=gen)
        other = (topic_a + torch.randint(1, topics, (b,), generator=gen)) % topics
        topic_b = torch.where(nsp == 0, topic_a, other)
        ranks = torch.multinomial(zipf, b * length, replacement=True, generator=gen).view(b, length)
        pos = positions.unsqueeze(0)
        in_b = pos > sep1.unsqueeze(1)
        topic = torch.where(in_b, topic_b.unsqueeze(1), topic_a.unsqueeze(1))
        tokens = first + (ranks + topic * (words // topics)) % words
        tokens[:, 0] = ids["cls"]
        is_sep = (pos == sep1.unsqueeze(1)) | (pos == end.unsqueeze(1))
        tokens = torch.where(is_sep, torch.full_like(tokens, ids["sep"]), tokens)
        is_pad = pos >= total.unsqueeze(1)
        tokens = torch.where(is_pad, torch.full_like(tokens, ids["pad"]), tokens)
        attention_mask = (~is_pad).to(torch.int64)
        token_type_ids = (in_b & ~is_pad).to(torch.int64)
        # Masked-LM choice: a random ranking of the word positions, keep the first n per row.
        is_word = (pos > 0) & ~is_sep & ~is_pad
        scores = torch.rand(b, length, generator=gen).masked_fill(~is_word, 2.0)
        rank = scores.argsort(dim=1).argsort(dim=1)
        n_mask = (words_in_row.float() * mask_prob).round().to(torch.int64).clamp(1, max_predictions)
        chosen = is_word & (rank < n_mask.unsqueeze(1))
        labels = torch.where(chosen, tokens, torch.full_like(tokens, -100))
        action = torch.rand(b, length, generator=gen)
        random_words = torch.randint(first, vocab_size, (b, length), generator=gen)
        input_ids = torch.where(chosen & (action < 0.8), torch.full_like(tokens, ids["mask"]), tokens)
        input_ids = torch.where(chosen & (action >= 0.8) & (action < 0.9), random_words, input_ids)
        yield {
            "input_ids": input_ids,
            "token_type_ids": token_type_ids,
            "attention_mask": attention_mask,
            "labels": labels,
            "next_sentence_label": nsp,
        }
