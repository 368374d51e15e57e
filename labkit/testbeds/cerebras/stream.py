"""Run a command and stream its output into the notebook and a log file, like the course's ``|& tee``.

    from labkit.testbeds.cerebras.stream import stream_command
    status = stream_command(["python", "run.py", "CSX", ...], cwd=bert_dir, log_path="run.log")

This follows a local child process (``run.py CSX`` submits and follows its own wsjobs on the
Cerebras cluster), not a Slurm job: Slurm jobs are followed by :func:`labkit.jobs.follow`.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from typing import Any, Callable, Dict, Optional, Sequence

__all__ = ["stream_command", "echo_above"]


def stream_command(command: Sequence[str], cwd: str, log_path: str, echo: Callable[[str], None] = print,
                   on_line: Optional[Callable[[str], None]] = None, env: Optional[Dict[str, str]] = None,
                   header: bool = True) -> int:
    """Run ``command``, streaming each line of its output to ``echo`` and to ``log_path`` (like ``|& tee``).

    stderr is merged into stdout, as the course's ``|&`` does. Returns the exit status. An
    interrupt (the notebook's stop button) stops the child too. ``header``: the log's first
    line is ``$ command``; without it the log holds only what the command printed, as ``tee`` writes it.
    """
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"  # lines as they happen, not when a buffer fills
    if env:
        full_env.update(env)
    with open(log_path, "w") as log:
        if header:
            log.write("$ " + " ".join(shlex.quote(part) for part in command) + "\n")
            log.flush()
        try:
            proc = subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1, errors="replace", env=full_env)
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
