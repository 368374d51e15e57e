"""A real single-node Slurm for tests, from Debian's packages (slurm-wlm + munge).

    from tests.slurm_cluster import ensure_slurm, SlurmUnavailable
    info = ensure_slurm()          # idempotent; installs, configures and starts as needed
    info.node, info.cpus, info.partition

    python -m tests.slurm_cluster  # bring the cluster up by hand and print what it is

Run as root on a Debian/Ubuntu machine: it installs ``slurm-wlm`` and ``munge`` with apt when
they are missing (``apt-get update`` once, then a non-interactive install), writes a one-node
``/etc/slurm/slurm.conf`` describing this host as ``slurmd -C`` sees it (its real hostname,
CPUs and memory, plus 8 count-only ``rdu`` GRES so RDU requests can be checked), creates a
munge key, starts ``munged``, ``slurmctld`` and ``slurmd`` and waits until ``sinfo`` shows the
node idle. Where that is impossible (not root, no apt) it raises :class:`SlurmUnavailable`
whose message is the reason, for ``pytest.skip``.

Several test sessions (other worktrees, other test folders) may call it at once: a file lock
makes the first one set the cluster up and the others reuse it. A cluster that is already up
(ours or the machine's own) is reused untouched.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

__all__ = ["ensure_slurm", "SlurmInfo", "SlurmUnavailable", "RDUS_PER_NODE", "PARTITION"]

CONF_DIR = Path("/etc/slurm")
CONF = CONF_DIR / "slurm.conf"
MARKER = "# written by labkit tests/slurm_cluster.py"
PARTITION = "labkit"
#: Count-only GRES "rdu" on the test node, like a SambaNova SN30 node's 8 RDUs.
RDUS_PER_NODE = 8
LOCK = Path("/tmp/labkit-slurm.lock")
STATE = Path("/var/lib/slurm-labkit")
PACKAGES = ("slurm-wlm", "munge")
NEEDED_COMMANDS = ("slurmctld", "slurmd", "munged", "sbatch", "squeue", "sinfo", "scontrol", "srun")


class SlurmUnavailable(RuntimeError):
    """A real Slurm cannot be had on this machine; the message says why."""


@dataclass(frozen=True)
class SlurmInfo:
    """The running cluster: one node, its CPUs, memory and GRES, and its partition."""

    node: str
    cpus: int
    memory_mb: int
    partition: str
    rdus: int

    @property
    def limits(self) -> Dict[str, int]:
        """Per-node limits, in the shape ``labkit.jobs.ClusterLimits`` takes."""
        return {"nodes": 1, "cpus_per_node": self.cpus, "rdus_per_node": self.rdus}


def _run(argv: List[str], timeout: float = 30, check: bool = False, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=check, env=env)


def _have_commands() -> bool:
    return all(shutil.which(c) or os.path.exists("/usr/sbin/" + c) for c in NEEDED_COMMANDS)


def _install() -> None:
    if os.geteuid() != 0:
        raise SlurmUnavailable("real Slurm is not installed and installing it needs root "
                               "(run the tests as root, or `apt-get install slurm-wlm munge`)")
    if shutil.which("apt-get") is None:
        raise SlurmUnavailable("real Slurm is not installed and this machine has no apt-get "
                               "to install Debian's slurm-wlm and munge packages")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    update = _run(["apt-get", "update", "-q"], timeout=600, env=env)
    if update.returncode != 0:
        raise SlurmUnavailable("apt-get update failed:\n" + update.stderr[-2000:])
    install = _run(["apt-get", "install", "-y", "-q", "--no-install-recommends"] + list(PACKAGES),
                   timeout=1200, env=env)
    if install.returncode != 0 or not _have_commands():
        raise SlurmUnavailable("apt-get install slurm-wlm munge failed:\n" + install.stderr[-2000:])


def _sbin(name: str) -> str:
    return shutil.which(name) or "/usr/sbin/" + name


def _node_hardware() -> Dict[str, str]:
    """NodeName, CPUs, RealMemory... as ``slurmd -C`` reports them for this host."""
    out = _run([_sbin("slurmd"), "-C"]).stdout
    first = out.splitlines()[0] if out else ""
    fields = dict(re.findall(r"(\w+)=(\S+)", first))
    if "NodeName" not in fields or "CPUs" not in fields:
        raise SlurmUnavailable("`slurmd -C` did not describe this host: {!r}".format(out))
    return fields


def _write_config(hw: Dict[str, str]) -> None:
    node = hw["NodeName"]
    host = socket.gethostname().split(".")[0]
    hardware = " ".join("{}={}".format(k, hw[k]) for k in
                        ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")
                        if k in hw)
    for sub in ("slurmctld", "slurmd"):
        (STATE / sub).mkdir(parents=True, exist_ok=True)
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    CONF.write_text("\n".join([
        MARKER,
        "ClusterName=labkit",
        "SlurmctldHost={}".format(host),
        "AuthType=auth/munge",
        "SlurmUser=root",
        "SlurmdUser=root",
        # No cgroups in a container: track processes by parent id, bind nothing.
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        # Cores and memory are consumable, so a request for more CPUs than the node has fails
        # the way it does on ALCF's clusters.
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/builtin",
        # Reject at submission a job no node can ever run (the default queues it forever).
        "EnforcePartLimits=ALL",
        "GresTypes=rdu",
        "ReturnToService=2",
        "StateSaveLocation={}".format(STATE / "slurmctld"),
        "SlurmdSpoolDir={}".format(STATE / "slurmd"),
        "SlurmctldPidFile=/run/slurmctld-labkit.pid",
        "SlurmdPidFile=/run/slurmd-labkit.pid",
        "SlurmctldLogFile=/var/log/slurmctld-labkit.log",
        "SlurmdLogFile=/var/log/slurmd-labkit.log",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        "JobCompType=jobcomp/none",
        # Finished jobs stay visible to `scontrol show job` for 10 minutes (no accounting DB).
        "MinJobAge=600",
        "InactiveLimit=0",
        "KillWait=5",
        "SlurmdTimeout=60",
        "NodeName={} {} Gres=rdu:{} State=UNKNOWN".format(node, hardware, RDUS_PER_NODE),
        "PartitionName={} Nodes={} Default=YES MaxTime=INFINITE State=UP".format(PARTITION, node),
        "",
    ]))
    (CONF_DIR / "gres.conf").write_text("{}\nNodeName={} Name=rdu Count={}\n".format(MARKER, node, RDUS_PER_NODE))


def _start_munge() -> None:
    key = Path("/etc/munge/munge.key")
    if not key.exists() or key.stat().st_size == 0:
        key.parent.mkdir(parents=True, exist_ok=True)
        made = _run([_sbin("mungekey"), "--create", "--force", "--keyfile", str(key)])
        if made.returncode != 0:
            key.write_bytes(os.urandom(1024))
    shutil.chown(str(key), "munge", "munge")
    os.chmod(str(key), 0o400)
    if _run(["munge", "-n"]).returncode == 0:
        return  # munged is already running
    for folder in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
        os.makedirs(folder, exist_ok=True)
        shutil.chown(folder, "munge", "munge")
    started = _run(["runuser", "-u", "munge", "--", _sbin("munged"), "--force"])
    if started.returncode != 0:
        raise SlurmUnavailable("munged did not start: " + (started.stderr or started.stdout))
    _wait(lambda: _run(["munge", "-n"]).returncode == 0, 15, "munged to answer")


def _daemon_running(pid_file: str) -> bool:
    try:
        pid = int(Path(pid_file).read_text().strip())
        os.kill(pid, 0)
        return True
    except (OSError, ValueError):
        return False


def _start_daemons() -> None:
    if not _daemon_running("/run/slurmctld-labkit.pid"):
        out = _run([_sbin("slurmctld")])
        if out.returncode != 0:
            raise SlurmUnavailable("slurmctld did not start: " + out.stderr + _log_tail("slurmctld"))
    _wait(lambda: _run(["scontrol", "ping"]).stdout.count("UP") > 0, 30, "slurmctld to answer",
          "slurmctld")
    if not _daemon_running("/run/slurmd-labkit.pid"):
        out = _run([_sbin("slurmd")])
        if out.returncode != 0:
            raise SlurmUnavailable("slurmd did not start: " + out.stderr + _log_tail("slurmd"))


def _log_tail(daemon: str) -> str:
    try:
        return "\n" + "\n".join(Path("/var/log/{}-labkit.log".format(daemon)).read_text().splitlines()[-15:])
    except OSError:
        return ""


def _wait(ready, seconds: float, what: str, daemon: str = "") -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if ready():
                return
        except (OSError, subprocess.SubprocessError):
            pass
        time.sleep(0.3)
    raise SlurmUnavailable("timed out after {}s waiting for {}{}".format(seconds, what, _log_tail(daemon) if daemon else ""))


def _node_states() -> Dict[str, str]:
    out = _run(["sinfo", "-h", "-N", "-o", "%N %T"]).stdout
    return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)


def _cluster_info() -> Optional[SlurmInfo]:
    """The running cluster's first idle (or mixed/allocated) node, or None when none is up."""
    try:
        out = _run(["sinfo", "-h", "-N", "-o", "%N|%c|%m|%P|%T|%G"], timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 6:
            continue
        node, cpus, mem, partition, state, gres = parts[:6]
        if state.rstrip("*") in ("idle", "mixed", "allocated", "completing"):
            found = re.search(r"rdu:(\d+)", gres)
            return SlurmInfo(node, int(cpus), int(re.sub(r"\D", "", mem) or 0), partition.rstrip("*"),
                             int(found.group(1)) if found else 0)
    return None


def ensure_slurm(timeout: float = 60) -> SlurmInfo:
    """A running single-node Slurm: reused when up, else installed/configured/started here."""
    if shutil.which("sinfo") and shutil.which("sbatch"):
        info = _cluster_info()
        if info is not None:
            return info
    if os.geteuid() != 0:
        raise SlurmUnavailable("no running Slurm, and setting one up needs root")
    LOCK.touch(exist_ok=True)
    with open(str(LOCK)) as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one session sets up; the others wait, then reuse it
        info = _cluster_info() if shutil.which("sinfo") else None
        if info is not None:
            return info
        if not _have_commands():
            _install()
        if not CONF.exists() or MARKER not in CONF.read_text():
            if CONF.exists() and _run(["scontrol", "ping"]).stdout.count("UP"):
                raise SlurmUnavailable("this machine runs its own Slurm ({}) with no idle node; "
                                       "labkit's tests will not rewrite it".format(CONF))
            _write_config(_node_hardware())
        _start_munge()
        _start_daemons()
        node = _node_hardware()["NodeName"]

        def node_idle() -> bool:
            state = _node_states().get(node, "")
            if state.startswith(("down", "drain")):  # e.g. left over from an earlier boot
                _run(["scontrol", "update", "nodename=" + node, "state=resume"])
            return state.rstrip("*") == "idle"

        _wait(node_idle, timeout, "node {} to become idle in sinfo".format(node), "slurmd")
        info = _cluster_info()
        if info is None:
            raise SlurmUnavailable("Slurm started but sinfo lists no usable node")
        return info


if __name__ == "__main__":
    try:
        print(ensure_slurm())
    except SlurmUnavailable as exc:
        print("Slurm unavailable: {}".format(exc), file=sys.stderr)
        sys.exit(1)
