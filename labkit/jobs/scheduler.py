"""Asking the scheduler: run ``sbatch``/``squeue``/``sinfo``/... with a timeout, and the errors it gives."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from typing import Optional, Sequence

from labkit.errors import LabkitError

__all__ = ["JobRejected", "JobError", "slurm_available", "run_scheduler"]


class JobRejected(LabkitError, RuntimeError):
    """The scheduler itself refused the submission; the message is its own (``sbatch: error: ...``)."""

    def __init__(self, message: str, argv: Sequence[str]):
        self.message = message.strip()
        self.argv = list(argv)
        super().__init__("{} refused the job: {}\ncommand: {}".format(
            os.path.basename(self.argv[0]) if self.argv else "sbatch", self.message, shlex.join(self.argv)))


class JobError(LabkitError, RuntimeError):
    """Slurm could not be asked (no sbatch here, a timeout, an unknown job)."""


def slurm_available() -> bool:
    """True when ``sbatch`` and ``squeue`` are on PATH."""
    return shutil.which("sbatch") is not None and shutil.which("squeue") is not None


def run_scheduler(argv: Sequence[str], timeout: float = 30, cwd: Optional[str] = None) -> subprocess.CompletedProcess:
    """Run a scheduler command; :class:`JobError` when it is not on PATH or does not answer in time."""
    if shutil.which(argv[0]) is None and not os.path.isabs(argv[0]):
        raise JobError("{} is not on PATH: this machine is not a Slurm login node "
                       "(on a laptop, run the exercise's portable path instead)".format(argv[0]))
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise JobError("{} did not answer within {:.0f}s".format(shlex.join(argv), timeout)) from None

