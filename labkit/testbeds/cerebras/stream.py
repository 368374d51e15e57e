"""The modelzoo's output: a command's lines streamed into the notebook and a log file (the course's
``|& tee``), recognised as they pass, and the same lines written by the portable runs, so that
:mod:`labkit.logs` reads both alike (docs/cerebras.md, "The portable path").

This follows a local child process (``run.py CSX`` submits and follows its own wsjobs on the
Cerebras cluster), not a Slurm job (:func:`labkit.jobs.follow`).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from datetime import datetime
from typing import Any, Callable, Optional, Sequence

__all__ = ["stream_command", "echo_above", "train_line", "processed_line", "info_line", "step_of", "wsjob_of"]

_JOB_ID = re.compile(r"[jJ]ob id: (wsjob-[\w-]+)")


def stream_command(command: Sequence[str], cwd: str, log_path: str, echo: Callable[[str], None] = print,
                   on_line: Optional[Callable[[str], None]] = None, header: bool = True) -> int:
    """Run ``command``, streaming each line of its output (stderr merged, as ``|&`` does) to ``echo`` and to
    ``log_path``; the exit status. An interrupt stops the child too. ``header``: the log's first line is
    ``$ command``; without it the log holds only what the command printed, as ``tee`` writes it."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # lines as they happen, not when a buffer fills
    with open(log_path, "w") as log:
        if header:
            log.write("$ " + " ".join(shlex.quote(part) for part in command) + "\n")
            log.flush()
        try:
            proc = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1, errors="replace", env=env)
        except OSError as exc:
            raise RuntimeError("could not start {!r} in {}: {}".format(command[0], cwd, exc)) from None
        with proc:
            try:
                assert proc.stdout is not None
                for line in proc.stdout:
                    log.write(line)
                    log.flush()
                    text = line.rstrip("\n")
                    echo(text)
                    if on_line is not None:
                        on_line(text)
                return proc.wait()
            except BaseException:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                raise


def echo_above(progress: Any, echo: Callable[[str], None]) -> Callable[[str], None]:
    """Print above a progress bar (a plain print would break a text bar's line)."""
    if echo is print and hasattr(progress, "write"):
        return lambda text: progress.write(text, file=sys.stdout)
    return echo


def info_line(text: str) -> str:
    """``text`` as a modelzoo INFO line, stamped now."""
    now = datetime.now()
    return "{},{:03d} INFO:   {}".format(now.strftime("%Y-%m-%d %H:%M:%S"), now.microsecond // 1000, text)


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return "{}:{:02d}:{:02d}".format(seconds // 3600, seconds // 60 % 60, seconds % 60)


def train_line(device: str, step: int, loss: float, rate: float, global_rate: float,
               remaining_s: Optional[float] = None) -> str:
    """A modelzoo training log line (``| Train Device=CSX, Step=100, Loss=9.50000, Rate=..., ...``); with
    ``remaining_s``, the 2.6 line's ``LoopTimeRemaining=..., TimeRemaining=...`` too."""
    line = "| Train Device={}, Step={}, Loss={:.5f}, Rate={:.2f} samples/sec, GlobalRate={:.2f} samples/sec".format(
        device, step, loss, rate, global_rate)
    if remaining_s is not None:
        line += ", LoopTimeRemaining={}, TimeRemaining={}".format(_clock(remaining_s), _clock(remaining_s))
    return info_line(line)


def processed_line(samples: int, seconds: float, training: bool = False) -> str:
    """The modelzoo's last line: ``Processed N sample(s) in T seconds.`` (2.6: ``N training sample(s)``)."""
    return info_line("Processed {} {}sample(s) in {} seconds.".format(samples, "training " if training else "",
                                                                     repr(float(seconds))))


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
    m = _JOB_ID.search(line) if "ob id:" in line else None
    return m.group(1) if m else None
