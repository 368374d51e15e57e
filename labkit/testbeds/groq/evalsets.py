"""The Groq exercise's evaluation data (SST or STS-B from the hub, else labkit's shipped sentences:
docs/groq.md), tokenized the way GroqFlow's proof points do it (``demo_helpers``): zero-padded to
``max_seq_length`` with ``attention_mask = input_ids != 0``; a pair is one (2, L) sample, skipped
when longer than L, as the proof point skips it; a longer single sentence is truncated (the proof
point would fail on it) and counted in the notes.
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["EvalSet", "load", "encode_sentence", "encode_pair", "dummy_inputs", "spearman", "pair_similarity",
           "to_batches", "TEXTSETS", "sentiment", "sts_pairs", "fingerprint"]

#: labkit's hand-written offline stand-ins for SST and STS-B (CSV files; README.md beside them says
#: more): results on them are not comparable with the course's SST / STS-B numbers.
TEXTSETS = Path(__file__).resolve().parent / "textsets"

#: Hub sources, in the order they are tried: (description, load_dataset args, kwargs).
SST_SOURCES = (
    ("SST test split (stanfordnlp/sst, 2,210 sentences), as the proof point uses", ("stanfordnlp/sst",), {"split": "test"}),
    ("GLUE SST-2 validation split (872 sentences)", ("nyu-mll/glue", "sst2"), {"split": "validation"}),
)
STSB_SOURCES = (
    ("STS benchmark test split (stsb_multi_mt, en), as the proof point uses", ("PhilipMay/stsb_multi_mt", "en"), {"split": "test"}),
    ("STS benchmark test split (sentence-transformers/stsb)", ("sentence-transformers/stsb",), {"split": "test"}),
)


@dataclass
class EvalSet:
    """Tokenized samples (one dict of tensors per sample), their labels and where they came from."""

    name: str
    task: str
    texts: List[Any]                    # sentences, or (sentence1, sentence2) pairs
    labels: np.ndarray                  # 0/1 labels, or similarity scores in [0, 1]
    inputs: List[Dict[str, Any]]
    max_seq_length: int
    offline: bool = False
    notes: List[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inputs)

    @property
    def score_name(self) -> str:
        return "Accuracy" if self.task == "classification" else "Spearman Rank Correlation Coefficient"

    def score(self, outputs: Sequence[Any]) -> float:
        """Accuracy of logits, or Spearman correlation of pair similarities from hidden states."""
        if self.task == "classification":
            predicted = np.array([int(np.argmax(np.asarray(o)[0])) for o in outputs])
            return float(np.mean(predicted == self.labels))
        sims = [pair_similarity(o, x["attention_mask"]) for o, x in zip(outputs, self.inputs)]
        return spearman(self.labels, np.array(sims))

    def describe(self) -> str:
        lines = ["data: {} | {} samples | sequence length {}".format(self.name, len(self), self.max_seq_length)]
        lines.extend("NOTE: " + n for n in self.notes)
        return "\n".join(lines)


def encode_sentence(tokenizer: Any, sentence: str, max_seq_length: int) -> Tuple[Dict[str, Any], bool]:
    """(inputs of shape (1, L), truncated?) the way LanguageDataset pads SST sentences."""
    import torch

    full = tokenizer.encode(sentence, add_special_tokens=True)
    ids = tokenizer.encode(sentence, add_special_tokens=True, truncation=True, max_length=max_seq_length)
    row = np.zeros(max_seq_length, dtype=np.int64)
    row[:len(ids)] = ids
    tensor = torch.from_numpy(row).unsqueeze(0)
    return {"input_ids": tensor, "attention_mask": tensor != 0}, len(full) > max_seq_length


def encode_pair(tokenizer: Any, first: str, second: str, max_seq_length: int) -> Optional[Dict[str, Any]]:
    """Inputs of shape (2, L) for a sentence pair, or None when the pair is longer than L
    (SentenceSimilarityDataset skips those)."""
    import torch.nn.functional as F

    encoded = dict(tokenizer([first, second], padding=True, truncation=True, return_tensors="pt"))
    length = encoded["input_ids"].shape[1]
    if length > max_seq_length:
        return None
    padded = {k: F.pad(v, (0, max_seq_length - length), "constant", 0) for k, v in encoded.items()}
    if "token_type_ids" not in padded:  # tokenizers without segments: zeros, as BERT expects
        padded["token_type_ids"] = padded["input_ids"] * 0
    return {"input_ids": padded["input_ids"], "token_type_ids": padded["token_type_ids"],
            "attention_mask": padded["attention_mask"].bool()}


def dummy_inputs(task: str, max_seq_length: int, batch_size: int = 1) -> Dict[str, Any]:
    """The compile-time inputs of the proof points: all ones (batch, L); a pair doubles the rows."""
    import torch

    rows = batch_size if task == "classification" else 2 * batch_size
    inputs = {"input_ids": torch.ones(rows, max_seq_length, dtype=torch.long)}
    if task != "classification":
        inputs["token_type_ids"] = torch.ones(rows, max_seq_length, dtype=torch.long)
    inputs["attention_mask"] = torch.ones(rows, max_seq_length, dtype=torch.bool)
    return inputs


def to_batches(inputs: Sequence[Dict[str, Any]], batch_size: int) -> Tuple[List[Dict[str, Any]], int]:
    """Samples grouped batch_size at a time (the compiled shape is fixed, so the last batch is
    filled up with copies of its last sample, whose outputs are dropped). Returns the batches
    and the number of filler samples."""
    import torch

    batches, filler = [], 0
    for start in range(0, len(inputs), batch_size):
        group = list(inputs[start:start + batch_size])
        filler += batch_size - len(group)
        group += [group[-1]] * (batch_size - len(group))
        batches.append(group[0] if batch_size == 1 else {k: torch.cat([g[k] for g in group]) for k in group[0]})
    return batches, filler


def pair_similarity(hidden: Any, attention_mask: Any) -> float:
    """Cosine similarity of the two sentences of one (2, L, H) output, each sentence embedded as the
    mean of its hidden states over real tokens."""
    hidden = np.asarray(hidden, dtype=np.float64)
    mask = np.asarray(attention_mask, dtype=np.float64)[..., None]
    pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    first, second = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    return float(np.dot(first, second))


def _ranks(values: np.ndarray) -> np.ndarray:
    """Ranks 1..n, ties sharing their average rank (as scipy.stats.rankdata does)."""
    _, group, counts = np.unique(values, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)  # the rank of each group of equal values' last member
    return (last - (counts - 1) / 2.0)[group.reshape(-1)]


def spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman rank correlation: the Pearson correlation of the ranks."""
    ra, rb = _ranks(np.asarray(a, dtype=np.float64)), _ranks(np.asarray(b, dtype=np.float64))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = np.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denominator) if denominator else float("nan")


def _rows(name: str) -> List[dict]:
    with open(TEXTSETS / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def sentiment(split: str = "test") -> Tuple[List[str], List[int]]:
    """Sentences and 0/1 labels of labkit's sentiment set's ``split`` ("train" or "test")."""
    rows = _rows("sentiment_{}.csv".format(split))
    return [r["sentence"] for r in rows], [int(r["label"]) for r in rows]


def sts_pairs() -> Tuple[List[Tuple[str, str]], List[float]]:
    """labkit's sentence pairs and their similarity scores on the STS-B scale (0 to 5)."""
    rows = _rows("sts_pairs.csv")
    return [(r["sentence1"], r["sentence2"]) for r in rows], [float(r["score"]) for r in rows]


def fingerprint(name: str) -> str:
    """A short hash of the named text set file, so anything built from it is rebuilt when it changes."""
    return hashlib.sha256((TEXTSETS / name).read_bytes()).hexdigest()[:12]


def _from_hub(sources: Sequence[Tuple[str, tuple, dict]]) -> Tuple[Any, str, List[str]]:
    """The first hub data set that loads, its description, and why the others did not."""
    import datasets

    failures = []
    for description, args, kwargs in sources:
        try:
            return datasets.load_dataset(*args, **kwargs), description, failures
        except Exception as exc:  # a moved or script-based set: say so and try the next
            failures.append("{} could not be loaded ({}: {})".format(args[0], type(exc).__name__, str(exc)[:200]))
    return None, "", failures


def load(task: str, tokenizer: Any, max_seq_length: int, num_samples: Optional[int] = None,
         hub: bool = True) -> EvalSet:
    """The evaluation set for ``task``; ``hub=False`` uses labkit's shipped sentences at once."""
    notes: List[str] = []
    raw = None
    if hub:
        raw, name, failures = _from_hub(SST_SOURCES if task == "classification" else STSB_SOURCES)
        notes.extend(failures)
    if task == "classification":
        if raw is not None:
            sentences = list(raw["sentence"])
            labels = [int(float(y) > 0.5) for y in raw["label"]]  # SST labels are sentiment in [0, 1]
        else:
            name = "labkit's hand-written sentiment test set (80 sentences, labkit/textsets)"
            sentences, labels = sentiment("test")
        if num_samples is not None:
            sentences, labels = sentences[:num_samples], labels[:num_samples]
        encoded = [encode_sentence(tokenizer, sentence, max_seq_length) for sentence in sentences]
        inputs, truncated = [e for e, _ in encoded], sum(cut for _, cut in encoded)
        if truncated:
            notes.append("{} of {} sentences are longer than max_seq_length = {} tokens and were truncated".format(
                truncated, len(sentences), max_seq_length))
        texts: List[Any] = list(sentences)
        label_array = np.array(labels, dtype=np.int64)
    else:
        if raw is not None:
            score_column = "similarity_score" if "similarity_score" in raw.column_names else "score"
            scale = 5.0 if score_column == "similarity_score" else 1.0
            pairs = list(zip(raw["sentence1"], raw["sentence2"]))
            scores = [float(s) / scale for s in raw[score_column]]
        else:
            name = "labkit's hand-scored sentence pairs (46 pairs, labkit/textsets)"
            pairs, raw_scores = sts_pairs()
            scores = [s / 5.0 for s in raw_scores]
        inputs, texts, kept, skipped = [], [], [], 0
        for pair, score in zip(pairs, scores):
            if num_samples is not None and len(inputs) == num_samples:
                break
            encoded = encode_pair(tokenizer, pair[0], pair[1], max_seq_length)
            if encoded is None:
                skipped += 1
                continue
            inputs.append(encoded)
            texts.append(pair)
            kept.append(score)
        if skipped:
            notes.append("{} pairs longer than max_seq_length = {} tokens were skipped, as the proof point "
                         "skips them".format(skipped, max_seq_length))
        label_array = np.array(kept, dtype=np.float64)
    if not inputs:
        raise ValueError("max_seq_length = {}: no sample of {} fits in {} tokens".format(max_seq_length, name, max_seq_length))
    offline = raw is None
    if offline:
        notes.append("offline data: scores on it are NOT comparable with the course's numbers (77.47 % on the SST "
                     "test split, 0.8203 on STS-B)")
    return EvalSet(name, task, texts, label_array, inputs, max_seq_length, offline, notes)
