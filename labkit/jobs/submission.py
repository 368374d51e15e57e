"""Submitting a job with ``sbatch`` and following it (``scontrol``/``sacct`` polling, a progress bar)."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence, Tuple

from labkit.interrupts import Interrupted
from labkit.jobs.request import ClusterLimits, SlurmRequest
from labkit.jobs.scheduler import JobError, JobRejected, run_scheduler
from labkit.jobs.scripts import batch_script, sbatch_argv

__all__ = ["Job", "JobStatus", "submit", "submit_script", "job_status", "follow", "output_path"]


@dataclass(frozen=True)
class Job:
    """A submitted batch job."""

    job_id: str
    request: SlurmRequest
    script: str
    cwd: str
    argv: Tuple[str, ...] = ()


def submit(request: SlurmRequest, script: str, args: Sequence[str] = (), cwd: Optional[str] = None,
           limits: Optional[ClusterLimits] = None, sbatch: str = "sbatch", check: bool = True) -> Job:
    """Validate (when ``limits`` is given) and submit ``script`` with ``sbatch``.

    Raises :class:`JobRequestError` before anything is submitted when labkit's checks fail,
    and :class:`JobRejected` with Slurm's own words when sbatch refuses the job.
    ``check=False`` leaves the verdict to Slurm alone.
    """
    if check:
        request.validate(limits)
    cwd = os.path.expanduser(os.fspath(cwd or os.getcwd()))
    argv = sbatch_argv(request, script, args, sbatch=sbatch, parsable=True)
    done = run_scheduler(argv, cwd=cwd)
    if done.returncode != 0:
        raise JobRejected(done.stderr.strip() or done.stdout.strip() or "exit status {}".format(done.returncode), argv)
    job_id = done.stdout.strip().split(";")[0].splitlines()[-1].strip()
    if not job_id.isdigit():
        raise JobError("sbatch printed no job id: {!r}".format(done.stdout))
    return Job(job_id, request, os.fspath(script), cwd, tuple(argv))


def submit_script(request: SlurmRequest, commands: Sequence[str], path: str, env: Optional[Mapping[str, str]] = None,
                  limits: Optional[ClusterLimits] = None, cwd: Optional[str] = None) -> Job:
    """Write a batch script (the request as ``#SBATCH`` lines) to ``path`` and submit it."""
    request.validate(limits)
    text = batch_script(request, commands, env=env)  # #SBATCH lines for the reader; sbatch gets the flags too
    Path(path).write_text(text)
    os.chmod(path, 0o755)
    return submit(request, path, cwd=cwd or os.path.dirname(os.path.abspath(path)))


@dataclass(frozen=True)
class JobStatus:
    """Where a job is: ``state`` is Slurm's (PENDING, RUNNING, COMPLETED, FAILED, ...)."""

    job_id: str
    state: str
    exit_code: Optional[int] = None
    reason: str = ""
    stdout: Optional[str] = None
    elapsed: Optional[str] = None

    @property
    def finished(self) -> bool:
        return self.state not in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING")

    @property
    def succeeded(self) -> bool:
        return self.state == "COMPLETED" and (self.exit_code or 0) == 0


def job_status(job: Any) -> JobStatus:
    """Ask Slurm about a job: ``scontrol show job`` (running or recently ended), else ``sacct``."""
    job_id = job.job_id if isinstance(job, Job) else str(job)
    shown = run_scheduler(["scontrol", "show", "job", "-o", job_id])
    if shown.returncode == 0 and "JobState=" in shown.stdout:
        fields_ = dict(re.findall(r"(\w+)=(\S*)", shown.stdout))
        return JobStatus(job_id, fields_.get("JobState", "UNKNOWN"), _exit_code(fields_.get("ExitCode", "")),
                         fields_.get("Reason", ""), fields_.get("StdOut") or None, fields_.get("RunTime"))
    if shutil.which("sacct"):
        acct = run_scheduler(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State,ExitCode,Elapsed"])
        line = acct.stdout.strip().splitlines()[:1]
        if acct.returncode == 0 and line:
            state, code, elapsed = (line[0].split("|") + ["", "", ""])[:3]
            return JobStatus(job_id, state.split()[0], _exit_code(code), "", None, elapsed)
    raise JobError("Slurm knows no job {} (ended too long ago, or never submitted)".format(job_id))


def _exit_code(text: str) -> Optional[int]:
    """The exit status in Slurm's ``ExitCode`` (``status:signal``), None when it has none."""
    return int(text.split(":")[0]) if text[:1].isdigit() else None


def follow(job: Job, poll: float = 2.0, timeout: Optional[float] = None, show: bool = True,
           reached: Optional[Callable[[JobStatus], int]] = None, total: Optional[int] = None,
           unit: str = "step", log_hint: str = "") -> JobStatus:
    """Wait for ``job`` to end, showing its state and elapsed time on a progress bar.

    ``reached(status)``, called after each poll, says how far the job has got (the training
    steps its log shows, say): the bar then counts that, out of ``total`` ``unit``; without it
    the bar counts polls. A batch job outlives the notebook, so an interrupt stops only the
    following, and says so: ``scancel`` stops the job, and ``log_hint`` (e.g. where its log will
    be) tells how to read it later.
    """
    from labkit.progress import bar

    start = time.monotonic()
    status = job_status(job)
    progress = None
    if show:
        shape = {"total": total, "unit": unit} if reached else {"unit": "poll", "bar_format": "{desc} [{elapsed}]"}
        progress = bar(desc="job {} {}".format(job.job_id, status.state), **shape)
    try:
        while not status.finished:
            if timeout is not None and time.monotonic() - start > timeout:
                raise JobError("job {} still {} after {:.0f}s (squeue -j {} to check on it)".format(
                    job.job_id, status.state, timeout, job.job_id))
            time.sleep(poll)
            previous = status.state
            status = job_status(job)
            count = reached(status) if reached is not None else None
            if progress is not None:
                progress.update(1 if count is None else count - progress.n)
                if status.state != previous:
                    progress.set_description_str("job {} {}".format(job.job_id, status.state))
    except KeyboardInterrupt:
        raise Interrupted("interrupted: stopped following job {0}, which keeps running (`scancel {0}` stops "
                          "it{1})".format(job.job_id, "; " + log_hint if log_hint else "")) from None
    finally:
        if progress is not None:
            progress.close()
    return status


def output_path(job: Job, status: Optional[JobStatus] = None) -> str:
    """The file Slurm writes the job's standard output to."""
    if status is not None and status.stdout:
        return status.stdout
    try:
        found = job_status(job).stdout
    except JobError:
        found = None
    if found:
        return found
    pattern = job.request.output or "slurm-%j.out"
    name = pattern.replace("%j", job.job_id).replace("%A", job.job_id).replace("%x", job.request.job_name or
                                                                                os.path.basename(job.script))
    return os.path.join(job.cwd, os.path.expanduser(name))
