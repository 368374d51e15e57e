"""A Slurm job request and the checks that mirror what Slurm refuses at submission (tests/slurm
compares them with a real Slurm's verdict)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit.errors import LabkitError
from labkit.jobs.scheduler import JobError, run_scheduler

__all__ = ["ClusterLimits", "SN30", "SlurmRequest", "JobRequestError", "parse_gres"]


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
    ipus_per_node: int = 0

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

