"""Building commands and batch scripts from a :class:`~labkit.jobs.request.SlurmRequest`:
``sbatch`` argv, ``#SBATCH`` scripts, ``srun`` lines (environment before the program) and PBS scripts."""

from __future__ import annotations

import math
import os
import re
import shlex
from typing import List, Mapping, Optional, Sequence

from labkit.jobs.request import SlurmRequest, export_flag, parse_gres

__all__ = ["sbatch_argv", "batch_script", "srun_argv", "srun_command", "pbs_script"]


def sbatch_argv(request: SlurmRequest, script: str, args: Sequence[str] = (), sbatch: str = "sbatch",
                parsable: bool = False) -> List[str]:
    """``sbatch [--parsable] FLAGS... SCRIPT ARGS...`` as an argv list."""
    return [sbatch] + (["--parsable"] if parsable else []) + request.flags() + [os.fspath(script)] + list(args)


def batch_script(request: SlurmRequest, commands: Sequence[str], shell: str = "/bin/bash",
                 env: Optional[Mapping[str, str]] = None, strict: bool = True) -> str:
    """A batch script with the request as ``#SBATCH`` lines, then ``env`` exports, then ``commands``."""
    lines = ["#!" + shell]
    lines += ["#SBATCH " + flag for flag in request.flags()]
    if strict:
        lines.append("set -e")
    lines += _exports(env or {}) + list(commands)
    return "\n".join(lines) + "\n"


def _exports(env: Mapping[str, str]) -> List[str]:
    return ["export {}={}".format(check_env_name(k), shlex.quote(str(v))) for k, v in env.items()]


def check_env_name(name: str) -> str:
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise ValueError("environment variable name {!r}: use letters, digits and _ only, not starting with a digit".format(name))
    return name


def srun_argv(program: Sequence[str], ipus: Optional[int] = None, env: Optional[Mapping[str, str]] = None,
              request: Optional[SlurmRequest] = None, srun: str = "srun") -> List[str]:
    """``srun`` as an argv list (for subprocess): environment through ``--export=ALL,NAME=value``
    and ``--ipus=N`` (Graphcore's Slurm plugin), both before the program."""
    argv = [srun]
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
                 request: Optional[SlurmRequest] = None, srun: str = "srun") -> str:
    """``NAME=value ... srun [--ipus=N] PROGRAM`` as one shell line.

    The variables come BEFORE ``srun``: the shell sets them for srun, which passes its
    environment on to the job. Written after ``srun`` they would be taken as the program to run
    (``srun: error: execve(): POPTORCH_CACHE_DIR=...: No such file or directory``).
    """
    prefix = ["{}={}".format(check_env_name(k), shlex.quote(str(v))) for k, v in (env or {}).items()]
    argv = srun_argv(program, ipus=ipus, request=request, srun=srun)
    return " ".join(prefix + [shlex.quote(a) for a in argv])


def pbs_script(request: SlurmRequest, commands: Sequence[str], queue: Optional[str] = None,
               account: Optional[str] = None, shell: str = "/bin/bash") -> str:
    """The same request as a PBS Pro script for ``qsub`` (ALCF's Polaris-style ``select``)."""
    ntasks = request.ntasks or 1
    nodes = request.nodes or (int(math.ceil(ntasks / float(request.ntasks_per_node))) if request.ntasks_per_node else 1)
    per_node = request.ntasks_per_node or int(math.ceil(ntasks / float(nodes)))
    select = "select={}:ncpus={}:mpiprocs={}".format(nodes, per_node * (request.cpus_per_task or 1), per_node)
    for name, count in parse_gres(request.gres).items():
        select += ":n{}s={}".format(name, count) if name == "gpu" else ":{}={}".format(name, count)
    lines = ["#!" + shell, "#PBS -l " + select]
    if request.time:
        lines.append("#PBS -l walltime=" + request.time)
    if queue or request.partition:
        lines.append("#PBS -q " + (queue or request.partition or ""))
    if account:
        lines.append("#PBS -A " + account)
    if request.job_name:
        lines.append("#PBS -N " + request.job_name)
    if request.output:
        lines.append("#PBS -o " + request.output)
    lines += ["cd ${PBS_O_WORKDIR:-.}"] + _exports(request.export)
    return "\n".join(lines + list(commands)) + "\n"

