"""Slurm (and PBS) job requests: checked before submission, built into commands and scripts,
submitted and followed. The checks mirror what Slurm refuses (compared on a real Slurm by
tests/slurm); docs/jobs.md shows the use.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import shutil
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.interrupts import Interrupted

__all__ = [
    "ClusterLimits", "SN30", "SlurmRequest", "JobRequestError", "JobRejected", "JobError",
    "Job", "JobStatus", "sbatch_argv", "batch_script", "srun_argv", "srun_command",
    "pbs_script", "submit", "submit_script", "job_status", "follow", "output_path",
    "parse_gres", "slurm_available",
]


# --- asking the scheduler ---------------------------------------------------------------
class JobRejected(LabkitError, RuntimeError):
    """The scheduler itself refused the submission; the message is its own (``sbatch: error: ...``)."""

    def __init__(self, message: str, argv: Sequence[str]):
        self.message = message.strip()
        self.argv = list(argv)
        super().__init__("sbatch refused the job: {}\ncommand: {}".format(self.message, shlex.join(self.argv)))


class JobError(LabkitError, RuntimeError):
    """Slurm could not be asked (no sbatch here, a timeout, an unknown job)."""


def slurm_available() -> bool:
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


# --- the request and its checks ----------------------------------------------------------
class JobRequestError(LabkitError, ValueError):
    """A job request that cannot run on the cluster; ``problems`` lists why, in plain words."""

    shown_as = "JobRequestError"

    def __init__(self, problems: Sequence[str], cluster: str = ""):
        self.problems = list(problems)
        head = "This job request cannot run" + (" on " + cluster if cluster else "")
        super().__init__(head + ":\n" + "\n".join("  - " + p for p in self.problems))


@dataclass(frozen=True)
class ClusterLimits:
    """What the nodes of a cluster hold. ``None`` means "unknown: not checked"."""

    name: str
    nodes: Optional[int] = None
    cpus_per_node: Optional[int] = None
    rdus_per_node: int = 0
    tiles_per_rdu: int = 8

    @classmethod
    def from_slurm(cls, partition: Optional[str] = None, name: str = "this Slurm cluster") -> "ClusterLimits":
        """The limits of a running Slurm cluster, as ``sinfo`` reports its nodes.

        A partition of unequal nodes is described by its smallest node (a request that fits
        that one fits any)."""
        argv = ["sinfo", "-h", "-N", "-o", "%N|%c|%G"] + (["-p", partition] if partition else [])
        out = run_scheduler(argv).stdout
        nodes, cpus, rdus = set(), [], []
        for line in out.splitlines():
            parts = line.split("|")
            if len(parts) < 3:
                continue
            nodes.add(parts[0])
            cpus.append(int(parts[1]))
            rdus.append(parse_gres(parts[2]).get("rdu", 0))
        if not nodes:
            raise JobError("sinfo lists no nodes{}".format(" in partition " + partition if partition else ""))
        return cls(name, nodes=len(nodes), cpus_per_node=min(cpus), rdus_per_node=min(rdus))


#: ALCF's SambaNova DataScale SN30 cluster as the course uses it: 8 nodes (sn30-r1-h1 ...
#: sn30-r4-h2), each with 8 RDUs of 8 tiles (snfadm inventory) and 128 CPUs for Slurm
#: (SLURM_CPUS_ON_NODE=128 in the course's training logs).
SN30 = ClusterLimits("SambaNova SN30 (ALCF)", nodes=8, cpus_per_node=128, rdus_per_node=8, tiles_per_rdu=8)


def parse_gres(text: Optional[str]) -> Dict[str, int]:
    """``"rdu:8"`` / ``"gpu:a100:4,rdu:2"`` / ``"rdu:8(S:0)"`` -> ``{"rdu": 8, ...}``."""
    found: Dict[str, int] = {}
    if not text or text in ("(null)", "none"):
        return found
    for item in re.split(r",(?![^()]*\))", text):
        item = re.sub(r"\(.*\)$", "", item.strip())
        if not item:
            continue
        parts = item.split(":")
        name = parts[0]
        count = int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
        found[name] = found.get(name, 0) + count
    return found


@dataclass(frozen=True)
class SlurmRequest:
    """One Slurm allocation request, as ``sbatch``/``srun`` flags.

    ``None`` leaves a flag out (Slurm's default applies). ``gres`` is per node, as in
    ``--gres=rdu:8``. ``tiles_per_task`` is not a Slurm flag: it is the RDU tiles each task's
    compiled program uses (SambaFlow ``--num-tiles``), checked against the tiles the node's
    RDUs hold. ``export`` sets job environment variables (``--export=ALL,NAME=value``).
    """

    ntasks: Optional[int] = 1
    ntasks_per_node: Optional[int] = None
    nodes: Optional[int] = None
    cpus_per_task: Optional[int] = None
    gres: Optional[str] = None
    partition: Optional[str] = None
    time: Optional[str] = None
    job_name: Optional[str] = None
    output: Optional[str] = None
    nodelist: Optional[str] = None
    tiles_per_task: Optional[int] = None
    export: Mapping[str, str] = field(default_factory=dict)
    extra: Tuple[str, ...] = ()

    # --- checks -------------------------------------------------------------------------
    def tasks_per_node(self) -> Optional[int]:
        """The most tasks any node gets, as Slurm lays them out (None when Slurm chooses)."""
        ntasks = self.ntasks or 1
        if self.ntasks_per_node is not None:
            return min(self.ntasks_per_node, ntasks)
        if self.nodes is not None:
            return int(math.ceil(ntasks / float(self.nodes)))
        return None

    def problems(self, limits: Optional[ClusterLimits] = None) -> List[str]:
        """Everything wrong with this request on ``limits``' nodes, in plain words."""
        problems: List[str] = []
        for name in ("ntasks", "ntasks_per_node", "nodes", "cpus_per_task", "tiles_per_task"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                problems.append("{} = {!r}: must be a whole number >= 1 (--{} counts {}).".format(
                    name, value, name.replace("_", "-"), _COUNTS[name]))
        if problems:
            return problems
        ntasks = self.ntasks or 1
        cpus = self.cpus_per_task or 1
        if self.nodes is not None and self.ntasks_per_node is not None and ntasks > self.nodes * self.ntasks_per_node:
            need = int(math.ceil(ntasks / float(self.ntasks_per_node)))
            problems.append(
                "--ntasks {n} is more tasks than --nodes {N} x --ntasks-per-node {p} = {slots} can hold; "
                "ask for --nodes {need}, or at most --ntasks {slots}.".format(
                    n=ntasks, N=self.nodes, p=self.ntasks_per_node, slots=self.nodes * self.ntasks_per_node,
                    need=need))
        if limits is None:
            return problems
        where = limits.name
        # sbatch lowers --nodes to --ntasks when fewer tasks than nodes are asked for
        # ("can't run 1 processes on 2 nodes, setting nnodes to 1"), so only then count nodes.
        nodes = min(self.nodes, ntasks) if self.nodes is not None and self.ntasks is not None else self.nodes
        if limits.nodes is not None and nodes is not None and nodes > limits.nodes:
            problems.append("--nodes {} asks for more nodes than {} has ({}).".format(self.nodes, where, limits.nodes))
        per_node = self.tasks_per_node()
        # Slurm reserves CPUs for --ntasks-per-node tasks on each node even when --ntasks
        # starts fewer (checked on a real Slurm: --ntasks 1 --ntasks-per-node 4 needs 4 CPUs).
        cpu_tasks = self.ntasks_per_node if self.ntasks_per_node is not None else per_node
        if limits.cpus_per_node is not None:
            if cpus > limits.cpus_per_node:
                problems.append("--cpus-per-task {} is more CPUs than one node of {} has ({}).".format(
                    cpus, where, limits.cpus_per_node))
            elif cpu_tasks is not None and cpu_tasks * cpus > limits.cpus_per_node:
                problems.append(
                    "{} tasks on one node x --cpus-per-task {} = {} CPUs per node, more than a node of {} has "
                    "({}); use at most {} tasks per node, or fewer CPUs per task.".format(
                        cpu_tasks, cpus, cpu_tasks * cpus, where, limits.cpus_per_node, limits.cpus_per_node // cpus))
            elif cpu_tasks is None:
                slots = limits.cpus_per_node // cpus
                nodes_needed = int(math.ceil(ntasks / float(slots)))
                if limits.nodes is not None and nodes_needed > limits.nodes:
                    problems.append(
                        "--ntasks {} x --cpus-per-task {} = {} CPUs, more than all {} node(s) of {} hold ({}).".format(
                            ntasks, cpus, ntasks * cpus, limits.nodes, where, limits.nodes * limits.cpus_per_node))
        rdus = parse_gres(self.gres).get("rdu")
        if rdus is not None and rdus > limits.rdus_per_node:
            problems.append("--gres=rdu:{} asks for more RDUs per node than a node of {} has ({}); "
                            "the gres count is per node.".format(rdus, where, limits.rdus_per_node))
        if self.tiles_per_task is not None and limits.rdus_per_node:
            rdus_held = min(rdus, limits.rdus_per_node) if rdus is not None else limits.rdus_per_node
            tiles_held = rdus_held * limits.tiles_per_rdu
            tasks_here = per_node if per_node is not None else ntasks
            if tasks_here * self.tiles_per_task > tiles_held:
                problems.append(
                    "{} tasks on one node x {} RDU tiles each = {} tiles, more than the {} RDU(s) held on a node "
                    "provide ({} x {} tiles = {}).".format(
                        tasks_here, self.tiles_per_task, tasks_here * self.tiles_per_task, rdus_held,
                        rdus_held, limits.tiles_per_rdu, tiles_held))
        return problems

    def validate(self, limits: Optional[ClusterLimits] = None) -> "SlurmRequest":
        """Return self when the request can run on ``limits``' nodes; else raise :class:`JobRequestError`."""
        problems = self.problems(limits)
        if problems:
            raise JobRequestError(problems, limits.name if limits else "")
        return self

    def replace(self, **changes: Any) -> "SlurmRequest":
        return replace(self, **changes)

    # --- flags --------------------------------------------------------------------------
    def flags(self) -> List[str]:
        """The request as sbatch/srun flags (``--ntasks=16 --ntasks-per-node=16 ...``)."""
        out = ["{}={}".format(flag, getattr(self, name)) for name, flag in _FLAGS.items()
               if getattr(self, name) is not None]
        if self.export:
            out.append(export_flag(self.export))
        out.extend(self.extra)
        return out


def export_flag(env: Mapping[str, Any]) -> str:
    """``--export=ALL,NAME=value,...``: the job keeps the submitter's environment and adds ``env``."""
    return "--export=" + ",".join(["ALL"] + ["{}={}".format(k, v) for k, v in env.items()])


_COUNTS = {"ntasks": "processes", "ntasks_per_node": "processes on each node", "nodes": "machines",
           "cpus_per_task": "CPU cores per process", "tiles_per_task": "RDU tiles per process"}
_FLAGS = {"ntasks": "--ntasks", "ntasks_per_node": "--ntasks-per-node", "nodes": "--nodes",
          "cpus_per_task": "--cpus-per-task", "gres": "--gres", "partition": "--partition",
          "time": "--time", "job_name": "--job-name", "output": "--output", "nodelist": "--nodelist"}


# --- commands and scripts from a request ---------------------------------------------------
def sbatch_argv(request: SlurmRequest, script: str, args: Sequence[str] = (),
                parsable: bool = False) -> List[str]:
    """``sbatch [--parsable] FLAGS... SCRIPT ARGS...`` as an argv list."""
    flags = (["--parsable"] if parsable else []) + request.flags()
    return ["sbatch"] + flags + [os.fspath(script)] + list(args)


def batch_script(request: SlurmRequest, commands: Sequence[str],
                 env: Optional[Mapping[str, str]] = None) -> str:
    """A bash script: the request as ``#SBATCH`` lines, ``set -e``, ``env`` exports, then ``commands``."""
    lines = ["#!/bin/bash"] + ["#SBATCH " + flag for flag in request.flags()] + ["set -e"]
    lines += _exports(env or {}) + list(commands)
    return "\n".join(lines) + "\n"


def _exports(env: Mapping[str, str]) -> List[str]:
    return ["export {}={}".format(check_env_name(k), shlex.quote(str(v))) for k, v in env.items()]


def check_env_name(name: str) -> str:
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise ValueError("environment variable name {!r}: use letters, digits and _ only, not starting with a digit".format(name))
    return name


def srun_argv(program: Sequence[str], ipus: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
              request: Optional[SlurmRequest] = None) -> List[str]:
    """``srun`` as an argv list (for subprocess): environment through ``--export=ALL,NAME=value``
    and ``--ipus=N`` (Graphcore's Slurm plugin), both before the program."""
    argv = ["srun"]
    if request is not None:
        argv += [f for f in request.flags() if not f.startswith("--export=")]
    exports = dict(request.export) if request is not None else {}
    exports.update(env or {})
    if exports:
        argv.append(export_flag({check_env_name(k): v for k, v in exports.items()}))
    if ipus is not None:
        if isinstance(ipus, bool) or not isinstance(ipus, int) or ipus < 1:
            raise ValueError("ipus = {!r}: must be a whole number >= 1 (Graphcore srun --ipus=N)".format(ipus))
        argv.append("--ipus={}".format(ipus))
    return argv + list(program)


def srun_command(program: Sequence[str], ipus: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
                 request: Optional[SlurmRequest] = None) -> str:
    """``NAME=value ... srun [--ipus=N] PROGRAM`` as one shell line.

    The variables come BEFORE ``srun``: the shell sets them for srun, which passes its
    environment on to the job. Written after ``srun`` they would be taken as the program to run
    (``srun: error: execve(): POPTORCH_CACHE_DIR=...: No such file or directory``).
    """
    prefix = ["{}={}".format(check_env_name(k), shlex.quote(str(v))) for k, v in (env or {}).items()]
    argv = srun_argv(program, ipus=ipus, request=request)
    return " ".join(prefix + [shlex.quote(a) for a in argv])


def pbs_script(request: SlurmRequest, commands: Sequence[str], queue: Optional[str] = None,
               account: Optional[str] = None) -> str:
    """The same request as a PBS Pro script for ``qsub`` (ALCF's Polaris-style ``select``)."""
    ntasks = request.ntasks or 1
    nodes = request.nodes or (int(math.ceil(ntasks / float(request.ntasks_per_node))) if request.ntasks_per_node else 1)
    per_node = request.ntasks_per_node or int(math.ceil(ntasks / float(nodes)))
    select = "select={}:ncpus={}:mpiprocs={}".format(nodes, per_node * (request.cpus_per_task or 1), per_node)
    for name, count in parse_gres(request.gres).items():
        select += ":n{}s={}".format(name, count) if name == "gpu" else ":{}={}".format(name, count)
    options = (("-l walltime=", request.time), ("-q ", queue or request.partition), ("-A ", account),
               ("-N ", request.job_name), ("-o ", request.output))
    lines = ["#!/bin/bash", "#PBS -l " + select] + ["#PBS " + flag + value for flag, value in options if value]
    lines += ["cd ${PBS_O_WORKDIR:-.}"] + _exports(request.export)
    return "\n".join(lines + list(commands)) + "\n"


# --- submitting and following ---------------------------------------------------------------
@dataclass(frozen=True)
class Job:
    """A submitted batch job."""

    job_id: str
    request: SlurmRequest
    script: str
    cwd: str
    argv: Tuple[str, ...] = ()


def submit(request: SlurmRequest, script: str, args: Sequence[str] = (), cwd: Optional[str] = None,
           limits: Optional[ClusterLimits] = None, check: bool = True) -> Job:
    """Validate (``check=False`` leaves the verdict to Slurm alone) and submit ``script`` with ``sbatch``:
    :class:`JobRequestError` before anything is submitted, :class:`JobRejected` in Slurm's words."""
    if check:
        request.validate(limits)
    cwd = os.path.expanduser(os.fspath(cwd or os.getcwd()))
    argv = sbatch_argv(request, script, args, parsable=True)
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
