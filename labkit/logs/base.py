"""What every vendor reader shares: the reader interface, numbers, times and file-name hints.

A reader is fed clean lines one at a time (see :mod:`labkit.logs.text`) and returns the
runs it found when the file ends. It must never raise on odd input: anything it cannot read
becomes a note.
"""

from __future__ import annotations

import functools
import os
import re
from datetime import datetime
from typing import Any, Dict, List, Optional

from labkit.results import Run

__all__ = ["LineReader", "new_run", "number", "clock_seconds", "stamp_text", "parse_stamp",
           "params_from_filename", "fill_from_filename", "NUMBER"]

#: A number as logs print it, including the ``nan`` / ``inf`` of a diverged loss.
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+|nan|NaN|inf|Inf)"


class LineReader:
    """Base of the vendor readers: ``feed(line)`` for each line, then ``finish()``."""

    format = ""

    def __init__(self, name: str = "<text>") -> None:
        self.name = name  # the file's name (hints only: parameters, model)
        self.runs: List[Run] = []
        self.notes: List[str] = []  # about the file as a whole, not one run
        self.pointers: List[str] = []  # other files where the real log lives

    def feed(self, line: str) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def finish(self) -> List[Run]:
        """The runs found, once the file has ended: the run still being read is closed first."""
        self._close()
        return self.runs

    def _close(self) -> Any:  # pragma: no cover - abstract
        """Close the run being read (into ``runs`` when it holds anything); the next run's state."""
        raise NotImplementedError


def new_run(exercise: str) -> Run:
    return Run(exercise=exercise, source="log", status="incomplete")


def number(text: Optional[str]) -> Optional[float]:
    """``float(text)``, or None for text that is not a number; ints stay ints."""
    if text is None:
        return None
    text = text.strip().rstrip("%")
    try:
        if re.fullmatch(r"[-+]?\d+", text):
            return int(text)
        return float(text)
    except ValueError:
        return None


def clock_seconds(text: str) -> Optional[int]:
    """Seconds in a tqdm clock ``01:17`` / ``1:02:03`` (None if unreadable)."""
    try:
        return functools.reduce(lambda total, part: total * 60 + int(part), text.split(":"), 0)
    except ValueError:
        return None


_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[,.](\d{1,6}))?")


def stamp_text(line: str) -> Optional[str]:
    """The time stamp of ``line`` as text (cheap; turn it into a datetime with :func:`parse_stamp`)."""
    m = _STAMP.match(line) if line[:1].isdigit() else None
    if m is None and ("INFO" in line or "WARNING" in line or "ERROR" in line):
        m = _STAMP.search(line)
    return m.group(0) if m else None


def parse_stamp(text: Optional[str]) -> Optional[datetime]:
    if not text:
        return None
    m = _STAMP.match(text)
    if m is None:
        return None
    # datetime() directly: strptime is ten times slower, and logs have a stamp on every line.
    try:
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        micro = int(m.group(7).ljust(6, "0")[:6]) if m.group(7) else 0
        return datetime(year, month, day, hour, minute, second, micro)
    except ValueError:
        return None


_TOKEN_RULES = [
    (re.compile(r"(?:bs|batch|batchsize|batch_size|b)(\d+)"), "batch_size", int),
    (re.compile(r"(?:lr|learningrate|l)(\d+(?:\.\d+)?)"), "learning_rate", float),
    (re.compile(r"(?:epochs|epoch|ep|e)(\d+)"), "epochs", int),
]


def params_from_filename(path_or_name: str) -> Dict[str, Any]:
    """Hyperparameters that students put in file names (``mnist-bs12-e20-lr0.01``, ``mnist_0.03_10_32``).

    Only a guess: the log itself does not say. Callers must tell the reader so in a note.
    """
    stem = os.path.basename(path_or_name)
    stem = re.sub(r"\.(log|out|txt|err)$", "", stem)
    tokens = [t for t in re.split(r"[-_ ]+", stem.lower()) if t]
    found: Dict[str, Any] = {}
    # The MNIST convention of one student: mnist_<lr>_<epochs>_<batch>.
    for i, token in enumerate(tokens[:-3]):
        if token == "mnist":
            lr, epochs, batch = tokens[i + 1:i + 4]
            if re.fullmatch(r"\d*\.\d+", lr) and epochs.isdigit() and batch.isdigit():
                return {"learning_rate": float(lr), "epochs": int(epochs), "batch_size": int(batch)}
    # Tokens like bs12, b8, e20, lr0.01; "e_20" and "l_3" spellings are joined first.
    joined: List[str] = []
    for token in tokens:
        if joined and token.replace(".", "", 1).isdigit() and joined[-1] in ("b", "bs", "e", "ep", "epochs", "lr", "l"):
            joined[-1] += token
        else:
            joined.append(token)
    for token in joined:
        for rule, key, kind in _TOKEN_RULES:
            m = rule.fullmatch(token)
            if m and key not in found:
                try:
                    found[key] = kind(m.group(1))
                except ValueError:
                    pass
                break
    return found


def fill_from_filename(run: Run, name: str) -> None:
    """Add what :func:`params_from_filename` guesses from ``name`` and ``run`` lacks, with a note."""
    guessed = {k: v for k, v in params_from_filename(name).items() if k not in run.params}
    if guessed:
        run.params.update(guessed)
        run.notes.append("Read from the file name only, not from the log: {}.".format(
            ", ".join("{}={}".format(k, v) for k, v in guessed.items())))
