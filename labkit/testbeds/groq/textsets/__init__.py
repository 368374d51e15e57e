"""Small hand-written text sets (CSV files beside this module, README.md beside them) that ship with
labkit as offline stand-ins for SST and STS-B: written for labkit (MIT); results on them are not
comparable with the course's SST / STS-B numbers."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path
from typing import List, Tuple

__all__ = ["sentiment", "sts_pairs", "fingerprint", "HERE"]

HERE = Path(__file__).resolve().parent


def _rows(name: str) -> List[dict]:
    with open(HERE / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def sentiment(split: str = "test") -> Tuple[List[str], List[int]]:
    """Sentences and 0/1 labels of ``split`` ("train" or "test")."""
    rows = _rows("sentiment_{}.csv".format(split))
    return [r["sentence"] for r in rows], [int(r["label"]) for r in rows]


def sts_pairs() -> Tuple[List[Tuple[str, str]], List[float]]:
    """Sentence pairs and their similarity scores on the STS-B scale (0 to 5)."""
    rows = _rows("sts_pairs.csv")
    return [(r["sentence1"], r["sentence2"]) for r in rows], [float(r["score"]) for r in rows]


def fingerprint(name: str) -> str:
    """A short hash of the named file, so anything built from it is rebuilt when it changes."""
    return hashlib.sha256((HERE / name).read_bytes()).hexdigest()[:12]
