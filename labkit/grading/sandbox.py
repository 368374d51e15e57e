"""Where and how a student's kernel runs: limits, a private uid, namespaces when allowed.

    from labkit.grading import sandbox
    sandbox.best_level()          # 'bwrap', 'unshare' or 'rlimits' on this machine

Isolation levels, strongest first (the gradebook reports the one in force for each run):

- ``bwrap``: bubblewrap namespaces: no network (only a private loopback), own PID namespace
  (everything the kernel started dies with it), a read-only view of the machine with the
  submissions folder, the output folder, the rubric and the other runs' working folders
  hidden, and only the run's own folder writable; plus everything below.
- ``unshare``: ``unshare --net --pid --fork --kill-child``: no network, own PID namespace;
  other submissions are protected only by file permissions; plus everything below.
- ``+cgroup`` (any level, where this grader may make cgroups, v1 or v2): one cap on the
  processes (``pids.max``) and memory of the whole run, which holds even without a uid switch
  (:mod:`labkit.grading.cgroups`).
- ``rlimits``: resource limits (writable memory, processes, file size, CPU time a little above
  the notebook's limit, no core dumps), a
  scrubbed environment and, when the grader runs as root, a private unprivileged uid per
  concurrent run (``RLIMIT_NPROC`` is not enforced for root; :mod:`labkit.grading.uids`).
  Always in force.

At every level the kernel dies with its grader: each launcher stage sets
``PR_SET_PDEATHSIG`` (``labkit.grading.confine --die-with-parent``), bubblewrap runs with
``--die-with-parent`` and ``unshare`` with ``--kill-child``; ``kill -9`` of ``labkit grade``
leaves no student process running (tests/grading/test_killed.py).

The kernel talks to the grader over ZMQ ``ipc`` sockets (files in the run's connection
folder), which work across a network namespace and never collide on ports.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["Limits", "LEVELS", "CONFINE", "best_level", "level_available", "kernel_environment",
           "confine_command", "cpu_limit_s", "sandbox_prefix", "uid_switch_possible"]

LEVELS = ("bwrap", "unshare", "rlimits")

# Environment variables the kernel keeps from the grader; everything else (tokens, the
# grader's own settings, SSH agents, cloud credentials) is dropped.
_KEPT_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "PYTHONPATH", "LABKIT_DATA_DIR", "TZ")


@dataclass
class Limits:
    """Limits for one submission (``None`` or 0: no limit)."""

    notebook_s: float = 600.0  # wall clock for the whole notebook
    cell_s: float = 120.0  # wall clock per cell
    memory_bytes: int = 4 << 30  # RLIMIT_DATA (writable memory) of the kernel and of each of its children
    nproc: int = 128  # processes + threads of the run's uid
    fsize_bytes: int = 64 << 20  # largest file the kernel may write
    output_bytes: int = 8 << 20  # outputs the grader keeps per notebook; the rest is dropped
    submission_bytes: int = 50 << 20  # largest submission (notebook + files) copied in

    def to_dict(self) -> Dict[str, float]:
        return dict(self.__dict__)


def _works(cmd: Sequence[str]) -> bool:
    try:
        return subprocess.run(list(cmd), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


_PROBED: Dict[str, bool] = {}


def level_available(level: str) -> bool:
    """Whether ``level`` works on this machine (probed once per process)."""
    if level not in _PROBED:
        if level == "bwrap":
            _PROBED[level] = shutil.which("bwrap") is not None and _works(
                ["bwrap", "--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/",
                 "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"])
        elif level == "unshare":
            _PROBED[level] = shutil.which("unshare") is not None and _works(
                ["unshare", "--net", "--pid", "--fork", "--kill-child", "true"])
        else:
            _PROBED[level] = True
    return _PROBED[level]


def best_level() -> str:
    for level in LEVELS:
        if level_available(level):
            return level
    return "rlimits"  # pragma: no cover - rlimits is always available


def kernel_environment(workdir: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The kernel's environment: a short allow-list from the grader's, the rest fresh."""
    env = {k: os.environ[k] for k in _KEPT_ENV if k in os.environ}
    env.setdefault("PATH", os.defpath)
    env.update({
        "HOME": workdir,
        "TMPDIR": os.path.join(workdir, ".tmp"),
        "MPLCONFIGDIR": os.path.join(workdir, ".tmp", "matplotlib"),
        "MPLBACKEND": "Agg",
        "LABKIT_PROGRESS": "text",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MALLOC_ARENA_MAX": "2",  # fewer glibc arenas: less memory held by threads that allocated once
        "OMP_NUM_THREADS": "1",
        "JPY_SESSION_NAME": "",
    })
    env.update(extra or {})
    return env


#: The launcher runs as a script with ``-I -S`` (no site, no environment): it imports only the
#: standard library, and skipping site (the editable install's finder) saves a share of every start.
CONFINE = [sys.executable, "-I", "-S", os.path.join(os.path.dirname(os.path.abspath(__file__)), "confine.py")]


def cpu_limit_s(limits: Limits) -> int:
    """CPU seconds a kernel may use: a little above the notebook's wall-clock limit (0: none).

    The backstop for a kernel whose grader vanished without taking it along: a loop burns
    one CPU second per second, so it dies shortly after the notebook would have timed out.
    """
    if not limits.notebook_s:
        return 0
    return int(limits.notebook_s * 1.1 + 30)


def confine_command(limits: Limits, uid: Optional[int], parent: Optional[int] = None) -> List[str]:
    """``python -I -S .../confine.py ... --`` for these limits (dies with its parent)."""
    cmd = list(CONFINE)
    if limits.memory_bytes:
        cmd += ["--memory", str(int(limits.memory_bytes))]
    if limits.nproc:
        cmd += ["--nproc", str(int(limits.nproc))]
    if limits.fsize_bytes:
        cmd += ["--fsize", str(int(limits.fsize_bytes))]
    if cpu_limit_s(limits):
        cmd += ["--cpu", str(cpu_limit_s(limits))]
    if uid is not None:
        cmd += ["--uid", str(uid), "--gid", str(uid)]
    cmd += ["--die-with-parent"]
    if parent is not None:
        cmd += ["--parent", str(parent)]
    return cmd + ["--"]


def _needed_paths() -> List[str]:
    """Paths the kernel must still see (the interpreter and labkit): never hidden."""
    paths = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    data = os.environ.get("LABKIT_DATA_DIR")
    if data:
        paths.append(data)
    return [os.path.realpath(p) for p in paths]


def _unreachable(paths: Sequence[str]) -> List[Tuple[str, str]]:
    """(closed folder, its child on the way) for each needed path another uid cannot reach.

    On this kind of machine Python often lives under /root (mode 0700): a kernel running as an
    unprivileged uid could not even start. bwrap covers the closed folder with an empty tmpfs
    and binds back only the child that leads to the interpreter.
    """
    found: List[Tuple[str, str]] = []
    for path in paths:
        parts = path.strip(os.sep).split(os.sep)
        for depth in range(1, len(parts)):
            folder = os.sep + os.sep.join(parts[:depth])
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                break
            if not mode & stat.S_IXOTH:
                pair = (folder, os.path.join(folder, parts[depth]))
                if pair not in found:
                    found.append(pair)
                break
    return found


def uid_switch_possible(level: str) -> bool:
    """Whether a kernel can run as another uid here (root, and the interpreter reachable)."""
    if os.geteuid() != 0:
        return False
    return level == "bwrap" or not _unreachable(_needed_paths())


def _is_ancestor(parent: str, child: str) -> bool:
    parent = parent.rstrip(os.sep) + os.sep
    return (child.rstrip(os.sep) + os.sep).startswith(parent)


def sandbox_prefix(level: str, workdir: str, conn_dir: str, hidden: Sequence[str] = (),
                   readonly: Sequence[str] = ()) -> List[str]:
    """The command that wraps the kernel for ``level`` (empty for ``rlimits``).

    ``hidden`` are paths (files or folders) the kernel must not see at the ``bwrap`` level:
    the submissions folder, the output folder, the rubric. A path that holds the interpreter
    or labkit itself cannot be hidden and is skipped. ``workdir`` (the current folder) and
    ``conn_dir`` (may be empty) are writable; ``readonly`` folders are shown read-only (the
    submission, to the trusted recomputation that runs in a folder of its own).
    """
    if level == "rlimits":
        return []
    if level == "unshare":
        return ["unshare", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
    if level != "bwrap":
        raise ValueError("isolation level: {!r} is not one of {}".format(level, ", ".join(LEVELS)))
    cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
           "--tmpfs", "/tmp", "--tmpfs", "/var/tmp", "--tmpfs", "/dev/shm"]
    needed = _needed_paths()
    for closed, child in _unreachable(needed):
        cmd += ["--tmpfs", closed, "--ro-bind", child, child]
    for path in hidden:
        real = os.path.realpath(path)
        if not os.path.exists(real) or real in ("/", "/tmp") or any(_is_ancestor(real, n) for n in needed):
            continue
        if os.path.isdir(real):
            cmd += ["--tmpfs", real]
        else:
            cmd += ["--ro-bind", "/dev/null", real]
    covered = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--tmpfs"]
    made: List[str] = []
    binds = [("--bind", p) for p in (workdir, conn_dir) if p] + [("--ro-bind", p) for p in readonly]
    for how, path in binds:
        # Folders bwrap would create on the way inside an empty tmpfs get mode 0700 (root):
        # make them passable, so the run's uid can reach its own folders.
        parts = os.path.realpath(path).strip(os.sep).split(os.sep)
        for depth in range(1, len(parts)):
            folder = os.sep + os.sep.join(parts[:depth])
            if folder not in made and any(_is_ancestor(top, folder) and top != folder for top in covered):
                made.append(folder)
                cmd += ["--perms", "0711", "--dir", folder]
        cmd += [how, path, path]
    return cmd + ["--chdir", workdir, "--"]
