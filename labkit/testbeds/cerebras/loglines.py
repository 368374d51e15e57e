"""The modelzoo's log lines: written by the portable run, recognised while a CS-2 run streams.

The portable run prints the same lines as ``run.py CSX``, so :mod:`labkit.logs` reads both alike::

    2024-05-02 10:00:00,123 INFO:   | Train Device=CPU, Step=10, Loss=9.50000, Rate=20.00 samples/sec, GlobalRate=19.91 samples/sec
    2024-05-02 10:00:09,456 INFO:   Processed 160 sample(s) in 8.04 seconds.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Optional

__all__ = ["train_line", "processed_line", "info_line", "step_of", "wsjob_of", "on_cerebras_system"]

_JOB_ID = re.compile(r"[jJ]ob id: (wsjob-[\w-]+)")


def _stamp() -> str:
    now = datetime.now()
    return now.strftime("%Y-%m-%d %H:%M:%S") + ",{:03d}".format(now.microsecond // 1000)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return "{}:{:02d}:{:02d}".format(seconds // 3600, seconds // 60 % 60, seconds % 60)


def train_line(device: str, step: int, loss: float, rate: float, global_rate: float,
               remaining_s: Optional[float] = None) -> str:
    """A modelzoo training log line (``| Train Device=CSX, Step=100, Loss=9.50000, Rate=..., ...``); with
    ``remaining_s``, the 2.6 line's ``LoopTimeRemaining=..., TimeRemaining=...`` too."""
    line = "{} INFO:   | Train Device={}, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} samples/sec".format(
        _stamp(), device, step, loss, rate, global_rate)
    if remaining_s is None:
        return line
    return line + ", LoopTimeRemaining={}, TimeRemaining={}".format(_clock(remaining_s), _clock(remaining_s))


def processed_line(samples: int, seconds: float, training: bool = False) -> str:
    """The modelzoo's last line: ``Processed N sample(s) in T seconds.`` (2.6: ``N training sample(s)``)."""
    return "{} INFO:   Processed {} {}sample(s) in {} seconds.".format(
        _stamp(), samples, "training " if training else "", repr(float(seconds)))


def info_line(text: str) -> str:
    """``text`` as a modelzoo INFO line, stamped now."""
    return "{} INFO:   {}".format(_stamp(), text)


def step_of(line: str) -> Optional[int]:
    """The step of a ``| Train Device=..., Step=N, ...`` line; None for any other line."""
    if "Train Device=" not in line:
        return None
    try:
        return int(line.split("Step=", 1)[1].split(",", 1)[0])
    except (IndexError, ValueError):
        return None


def wsjob_of(line: str) -> Optional[str]:
    """The wsjob id a line announces (2.6: ``Job id: wsjob-...``; CS-2: ``execute job id: wsjob-...``), else None."""
    if "ob id:" not in line:
        return None
    m = _JOB_ID.search(line)
    return m.group(1) if m else None


def on_cerebras_system(device: Optional[str]) -> bool:
    """Whether a Train line's ``Device=`` names a Cerebras system: ``CSX`` (2.x), ``xla:0`` (older
    releases); a log that names no device is taken as the testbed's. The modelzoo's CPU and GPU
    backends print the torch device (``cpu``, ``cuda:0``: ``trainer.backend.device`` in
    trainer/loggers/progress.py)."""
    return device is None or device.upper() == "CSX" or device.startswith("xla")
