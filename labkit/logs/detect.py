"""Which vendor wrote a log: count each format's tell-tale strings in the first lines.

    from labkit.logs.detect import detect, FORMATS
    detect(["2024-03-14 03:20:31,277 INFO:   | Train Device=CSX, Step=100, ..."])  # "cerebras"

Detection looks at the first lines only (``SAMPLE_LINES``), so that reading a huge log stays
one streaming pass plus a short look at its head. The file name is a weak extra hint.
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

__all__ = ["FORMATS", "detect", "detect_both", "scores", "SAMPLE_LINES"]

FORMATS = ("graphcore", "cerebras", "sambanova", "groq", "keras", "openai")

#: How many lines (and characters) of the head of a file are looked at.
SAMPLE_LINES = 20000
_SAMPLE_CHARS = 1_000_000

# (substring, weight): strong signs weigh more; all are plain substrings so the scan is fast.
_SIGNS: Dict[str, Tuple[Tuple[str, int], ...]] = {
    "graphcore": (("poptorch", 3), ("Graph compilation:", 3), ("Accuracy on test set", 5), ("Epochs:", 2),
                  ("PL:POPLIN", 3), ("--ipus", 3), ("Compiled/Loaded model", 5), ("run_pretraining", 5),
                  ("TrainingModelWithLoss", 3), ("popart", 2)),
    "cerebras": (("| Train Device=", 6), ("Effective batch size is", 5), ("wsjob", 4), ("Compile hash is", 5),
                 ("run.py CSX", 6), ("Processed ", 1), ("Cerebras", 3), ("Beginning appliance run", 5),
                 ("cszoo", 6), ("LoopTimeRemaining=", 6)),
    "sambanova": (("COMPILE START AT", 6), ("COMPILE END AT", 6), ("sambaflow", 2), ("e2e_train_time", 6),
                  ("for output", 2), ("BertLarge", 3), ("SLURM_NTASKS", 3), ("Duration:", 2), (".pef", 3),
                  ("transformers_hook", 4), ("Submitted batch job", 2), ("SN30", 3)),
    "groq": (("groqflow", 4), ("end-to-end IPS", 8), ("GroqChip", 5), ("on-chip latency", 8),
             ("Woohoo!", 3), ("Proof point", 3)),
    "keras": (("ms/step", 4), ("s/step", 2), ("Epoch 1/", 3), ("training time", 2), ("val_loss", 2),
              ("tensorflow", 1)),
    # pasted OpenAI-compatible chat completions (Metis, Sophia): JSON, a curl transcript, an SSE stream
    "openai": (('"chat.completion', 6), ('"completion_tokens"', 3), ("data: [DONE]", 6), ('"time_to_first_token"', 4),
               ("/chat/completions", 3)),
}

_KERAS_BAR = re.compile(r"\d+/\d+ \[[=>.]+\] - ")
# Single summary lines a student pastes on their own (one is enough to say which format it is).
_LINE_SIGNS = (
    ("cerebras", re.compile(r"Processed \d+ (?:training )?sample\(s\) in"), 6),  # 2.6 adds "training"
    ("groq", re.compile(r"^\|\s*(?:cpu|groq)\s*\|", re.MULTILINE), 8),
    ("graphcore", re.compile(r"Epochs:\s*\d+%.*?\d+/\d+ \["), 4),
)

_NAME_HINTS = (("graphcore", "graphcore"), ("poptorch", "graphcore"), ("mnist", "graphcore"), ("cerebras", "cerebras"),
               ("sambanova", "sambanova"), ("bertlarge", "sambanova"), ("slurm-", "sambanova"), ("groq", "groq"),
               ("keras", "keras"))


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
    for fmt, signs in _SIGNS.items():
        found[fmt] = sum(min(text.count(sign), 20) * weight for sign, weight in signs)
    if "] - " in text:
        found["keras"] += min(len(_KERAS_BAR.findall(text)), 20) * 6
    for fmt, pattern, weight in _LINE_SIGNS:
        found[fmt] += min(len(pattern.findall(text)), 20) * weight
    return found


def detect(lines: Iterable[str], name: str = "") -> Optional[str]:
    """The most likely format of a log, or None when nothing points to any."""
    return detect_both(lines, name)[0]


#: A homework Markdown may hold a vendor's log and pasted chat completions (a CS-3 section and an
#: inference section): their signs are disjoint, so the other one is read too when it shows this much
#: (one answer's ``"chat.completion`` and ``"completion_tokens"``; two of a vendor's strong signs).
_COMPANION_MIN = {"openai": 9, "vendor": 12}


def detect_both(lines: Iterable[str], name: str = "") -> Tuple[Optional[str], Optional[str]]:
    """The most likely format, and a second one the same file also holds (chat completions beside a
    vendor's log, or the other way round), else None for either."""
    found = scores(lines)
    lower = name.lower()
    for hint, fmt in _NAME_HINTS:
        if hint in lower:
            found[fmt] += 2
    best = max(FORMATS, key=lambda fmt: found[fmt])
    if found[best] < 4:
        return None, None
    if best != "openai":
        return best, "openai" if found["openai"] >= _COMPANION_MIN["openai"] else None
    vendor = max((fmt for fmt in FORMATS if fmt != "openai"), key=lambda fmt: found[fmt])
    return best, vendor if found[vendor] >= _COMPANION_MIN["vendor"] else None
