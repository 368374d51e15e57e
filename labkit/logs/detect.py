"""Which vendor wrote a log: count each format's tell-tale strings in the first lines.

    from labkit.logs.detect import detect_both
    detect_both(["2024-03-14 03:20:31,277 INFO:   | Train Device=CSX, Step=100, ..."])  # ("cerebras", None)

Detection looks at the first lines only (``SAMPLE_LINES``), so that reading a huge log stays
one streaming pass plus a short look at its head. The file name is a weak extra hint.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from labkit.exercises import LOG_FORMATS, log_formats

__all__ = ["FORMATS", "detect_both", "scores", "SAMPLE_LINES"]

#: The formats labkit itself reads (:data:`labkit.exercises.LOG_FORMATS`), in tie-break order; detection
#: also weighs formats that exercises registered from outside labkit bring (``log_formats()``).
FORMATS = tuple(f.name for f in LOG_FORMATS)

#: How many lines (and characters) of the head of a file are looked at.
SAMPLE_LINES = 20000
_SAMPLE_CHARS = 1_000_000

# A Keras progress bar: labkit's own generic format, counted beside its plain signs.
_KERAS_BAR = re.compile(r"\d+/\d+ \[[=>.]+\] - ")


def scores(lines: Iterable[str]) -> Dict[str, int]:
    """Weighted counts of each format's signs in the first lines (each sign counted at most 20 times)."""
    sample: List[str] = []
    size = 0
    for n, line in enumerate(lines):
        if n >= SAMPLE_LINES or size > _SAMPLE_CHARS:
            break
        if line:
            sample.append(line)
            size += len(line)
    # One big string and str.count per sign: far faster than testing every sign on every line.
    text = "\n".join(sample)
    found: Dict[str, int] = {}
    for fmt in log_formats():
        found[fmt.name] = sum(min(text.count(sign), 20) * weight for sign, weight in fmt.signs)
        found[fmt.name] += sum(min(len(pattern.findall(text)), 20) * weight for pattern, weight in fmt.line_signs)
    if "] - " in text:
        found["keras"] += min(len(_KERAS_BAR.findall(text)), 20) * 6
    return found


def detect_both(lines: Iterable[str], name: str = "") -> Tuple[Optional[str], Optional[str]]:
    """The most likely format, and a second one the same file also holds (chat completions beside a
    vendor's log, or the other way round: formats of another ``family``), else None for either."""
    found = scores(lines)
    lower = name.lower()
    formats = log_formats()
    for fmt in formats:
        found[fmt.name] += 2 * sum(hint in lower for hint in fmt.name_hints)
    best = max(formats, key=lambda fmt: found[fmt.name])
    if found[best.name] < 4:
        return None, None
    others = [fmt for fmt in formats if fmt.family != best.family]
    if not others:
        return best.name, None
    other = max(others, key=lambda fmt: found[fmt.name])
    return best.name, other.name if found[other.name] >= other.companion_min else None
