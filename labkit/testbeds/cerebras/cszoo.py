"""The modelzoo's ``cszoo fit`` as both Cerebras exercises run it on a CS-3: the run streamed into its log with
a progress bar, ``csctl cancel job`` for its wsjobs on an interrupt, and the params file's data folders checked
first (the steps: docs/cerebras.md, "On a CS-3 user node").
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple

import yaml

from labkit.interrupts import where
from labkit.progress import bar
from labkit.testbeds.cerebras.release import version_mismatch
from labkit.testbeds.cerebras.stream import echo_above, step_of, stream_command, wsjob_of

__all__ = ["CszooResult", "missing_data_dirs", "cancel_job", "run_cszoo", "record_ending"]


@dataclass
class CszooResult:
    """How a ``cszoo fit`` run ended: exit status (None when interrupted), wsjob ids, the cancel."""

    status: Optional[int]
    job_ids: List[str] = field(default_factory=list)
    interrupted: bool = False
    cancelled: List[str] = field(default_factory=list)
    last_step: int = 0
    messages: List[str] = field(default_factory=list)


def missing_data_dirs(text: str, cwd: str) -> List[Tuple[str, str]]:
    """(key path, data_dir) of each dataloader in a params text whose ``data_dir`` does not exist, seen from ``cwd``.

    The modelzoo's config validation (data/common/HDF5DataProcessor.py ``validate_path``, run by
    ``cszoo fit`` before it contacts the cluster) refuses such a file with ``Path ... does not exist.``
    """
    trainer = (yaml.safe_load(text) or {}).get("trainer") or {}
    missing = []
    for section, key in (("fit", "train_dataloader"), ("fit", "val_dataloader"), ("validate", "val_dataloader"),
                         ("validate_all", "val_dataloaders")):
        value = (trainer.get(section) or {}).get(key)
        for i, loader in enumerate(value if isinstance(value, list) else [value]):
            paths = loader.get("data_dir") if isinstance(loader, dict) else None
            place = "trainer.{}.{}{}.data_dir".format(section, key, ".{}".format(i) if isinstance(value, list) else "")
            for path in paths if isinstance(paths, list) else [paths]:
                if isinstance(path, str) and not os.path.exists(os.path.join(cwd, path)):
                    missing.append((place, path))
    return missing


def cancel_job(job_id: str) -> Tuple[bool, str]:
    """Cancel a wsjob on the cluster with ``csctl cancel job <wsjob id>`` (the course's README); (done, what
    happened, in one line)."""
    command = ["csctl", "cancel", "job", job_id]
    typed = " ".join(shlex.quote(c) for c in command)
    if shutil.which("csctl") is None:
        return False, "csctl was not found on PATH: cancel the job by hand with `{}`.".format(typed)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, "`{}` failed ({}): check with `csctl get jobs`.".format(typed, exc)
    said = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0:
        return False, "`{}` exited with status {}{}: check with `csctl get jobs`.".format(
            typed, done.returncode, " ({})".format(said) if said else "")
    return True, "Cancelled {} on the cluster with `{}`{}.".format(job_id, typed, " ({})".format(said) if said else "")


def run_cszoo(command: Sequence[str], cwd: str, log_path: str, steps: int,
              echo: Callable[[str], None] = print) -> CszooResult:
    """Run ``command`` in ``cwd``, its output streamed to ``log_path`` with a progress bar. An interrupt
    stops the local ``cszoo`` and cancels every wsjob the log named; the log so far is kept."""
    echo("$ cd {} && {} |& tee {}".format(shlex.quote(cwd), " ".join(shlex.quote(c) for c in command),
                                          shlex.quote(log_path)))
    result = CszooResult(status=None)
    progress = bar(total=steps, desc="CS-3 steps", unit="step")

    def on_line(line: str) -> None:
        job = wsjob_of(line)
        if job and job not in result.job_ids:
            result.job_ids.append(job)
        step = step_of(line)
        if step is not None and step > result.last_step:
            progress.update(min(step, steps) - min(result.last_step, steps))
            result.last_step = step

    try:
        result.status = stream_command(command, cwd, log_path, echo=echo_above(progress, echo), on_line=on_line,
                                       header=False)
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        progress.close()
    if result.interrupted:
        if not result.job_ids:
            result.messages.append("Interrupted before the cluster named a wsjob: nothing to cancel there "
                                   "(`csctl get jobs` lists your jobs).")
        for job in reversed(result.job_ids):  # the execute job last named is the one running
            done, said = cancel_job(job)
            result.messages.append(said)
            if done:
                result.cancelled.append(job)
        for message in result.messages:
            echo(message)
    return result


def record_ending(run: Any, result: CszooResult, steps: Optional[int], log_path: str,
                  echo: Callable[[str], None] = print) -> None:
    """Add to ``run`` how its ``cszoo fit`` ended, when not well: interrupted (the wsjobs cancelled, the last
    step logged) or failed (its status, and a client of another release than the cluster's in one sentence)."""
    if result.interrupted:
        cancelled = ("the wsjob {} was cancelled with csctl".format(", ".join(result.cancelled)) if result.cancelled
                     else "no wsjob was cancelled ({})".format(" ".join(result.messages)))
        # the log is the record: its last step may not have reached the progress bar before the interrupt
        last = max(result.last_step, int(run.metrics.get("steps") or 0))
        run.mark_interrupted(where(step=last or None, steps=steps),
                             "{}; its numbers are those of the last step logged.".format(cancelled))
        run.environment["cancelled_wsjobs"] = list(result.cancelled)
    elif result.status != 0:
        run.status = "failed"
        run.notes.append("cszoo exited with status {}; the log is {}.".format(result.status, log_path))
        with open(log_path, errors="replace") as f:
            mismatch = version_mismatch(f.read())
        if mismatch:
            run.notes.append(mismatch)
            echo(mismatch)
