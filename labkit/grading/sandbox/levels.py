"""Where and how a student's kernel runs: limits, a private uid, namespaces, Landlock.

What each level gives and needs, and why grading fails closed without file protection:
docs/grading.md, "Isolation levels"; what they give on this machine: ``labkit grade --check``.
At every level the kernel dies with its grader (tests/grading/test_killed.py) and talks to it over
ZMQ ``ipc`` sockets, which work across a network namespace and under Landlock.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import labkit
from labkit.grading.sandbox import landlock

__all__ = ["Limits", "LEVELS", "LAUNCHER", "best_level", "level_available", "kernel_environment",
           "check_level", "launcher_command", "namespace_prefix", "uid_switch_possible", "landlock_abi",
           "uses_landlock", "protects_files", "isolation_name", "refusal", "landlock_args"]

#: Strongest first; ``none`` is used only when asked for.
LEVELS = ("bwrap", "unshare", "rlimits", "none")

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
    disk_bytes: int = 1 << 30  # what the run's folder may hold: the copy, what the kernel writes, its log (disk.py)

    def to_dict(self) -> Dict[str, float]:
        return dict(self.__dict__)


_PROBED: Dict[str, bool] = {}
_UNSHARE = ["unshare", "--net", "--pid", "--fork", "--kill-child"]
_PROBES = {"bwrap": ["bwrap", "--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/",
                     "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "true"],
           "unshare": _UNSHARE + ["true"]}


def check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError("isolation level: {!r} is not one of {}".format(level, ", ".join(LEVELS)))


def level_available(level: str) -> bool:
    """Whether ``level`` works on this machine (probed once per process)."""
    check_level(level)
    if level not in _PROBED:
        probe = _PROBES.get(level)
        try:  # a missing program raises FileNotFoundError
            _PROBED[level] = probe is None or subprocess.run(probe, stdout=subprocess.DEVNULL,
                                                             stderr=subprocess.DEVNULL, timeout=20).returncode == 0
        except (OSError, subprocess.SubprocessError):
            _PROBED[level] = False
    return _PROBED[level]


def best_level() -> str:
    """The strongest level that works here (``rlimits`` always does)."""
    return next(level for level in LEVELS if level_available(level))


#: The Landlock ABI of this kernel (0: none); probed each call (it costs one syscall).
landlock_abi = landlock.abi_version


def uses_landlock(level: str) -> bool:
    return level != "none" and landlock_abi() >= 1


def protects_files(level: str) -> bool:
    """Whether ``level`` keeps a kernel from reading and writing outside its run folder here."""
    return level == "bwrap" or uses_landlock(level)


def isolation_name(level: str, uid: bool, cgroup: bool) -> str:
    """The gradebook's isolation column: ``unshare+landlock7+uid+cgroup``, ``unconfined+rlimits``..."""
    parts = [] if protects_files(level) else ["unconfined"]
    parts += [] if level == "none" else [level]
    if uses_landlock(level):
        parts.append("landlock{}".format(landlock_abi()))
    return "+".join(parts + (["uid"] if uid else []) + (["cgroup"] if cgroup else []))


def refusal(level: str) -> str:
    """Why ``labkit grade`` must not run student code at ``level`` here ('' when it may), in one sentence."""
    if protects_files(level) or level == "none":
        return ""
    return ("no isolation level here keeps a submission inside its own folder (isolation {!r}: bubblewrap is {}, "
            "and this kernel has no Landlock), so a notebook could read and change every file {} can, other "
            "students' submissions and earlier gradebooks included: install bubblewrap (apt-get install "
            "bubblewrap), or grade on Linux 5.13+ with Landlock enabled, or accept the risk with "
            "--allow-unconfined").format(level, "not installed" if not shutil.which("bwrap") else "not permitted",
                                         "root" if os.geteuid() == 0 else "this user")


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
LAUNCHER = [sys.executable, "-I", "-S", os.path.join(os.path.dirname(os.path.abspath(__file__)), "launcher.py")]


def launcher_command(limits: Limits, uid: Optional[int], parent: Optional[int] = None,
                     confined: Sequence[str] = ()) -> List[str]:
    """``python -I -S .../launcher.py ... --`` for these limits and ``confined`` (:func:`landlock_args`)."""
    cmd = list(LAUNCHER) + list(confined)
    # CPU seconds: a backstop a little above the notebook's wall-clock limit, for a kernel whose grader
    # vanished without taking it along
    cpu_s = int(limits.notebook_s * 1.1 + 30) if limits.notebook_s else 0
    # no single file larger than the whole disk share either
    fsize = min([b for b in (limits.fsize_bytes, limits.disk_bytes) if b] or [0])
    for flag, value in (("--memory", limits.memory_bytes), ("--nproc", limits.nproc),
                        ("--fsize", fsize), ("--cpu", cpu_s)):
        if value:
            cmd += [flag, str(int(value))]
    if uid is not None:
        cmd += ["--uid", str(uid), "--gid", str(uid)]
    cmd += ["--die-with-parent"]
    if parent is not None:
        cmd += ["--parent", str(parent)]
    return cmd + ["--"]


_LABKIT = os.path.dirname(os.path.abspath(labkit.__file__))


def _needed_paths() -> List[str]:
    """Paths the kernel must still see (the interpreter, its libraries, labkit and the notebooks beside it,
    ``PYTHONPATH``, ``LABKIT_DATA_DIR``): never hidden; absolute and existing only."""
    paths = [sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)), _LABKIT,
             os.path.join(os.path.dirname(_LABKIT), "notebooks")]
    paths += [p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)]
    for name, module in list(sys.modules.items()):  # editable installs (pip install -e) map packages to checkouts
        mapping = getattr(module, "MAPPING", None) if name.startswith("__editable__") else None
        if isinstance(mapping, dict):
            paths += [p for p in mapping.values() if isinstance(p, str) and os.path.isabs(p)]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isabs(p)]
    data = os.environ.get("LABKIT_DATA_DIR")
    if data:
        paths.append(data)
    return [p for p in dict.fromkeys(map(os.path.realpath, paths)) if os.path.exists(p)]


def landlock_args(workdir: str, conn_dir: str, hidden: Sequence[str] = (), readonly: Sequence[str] = (),
                  tcp: bool = True) -> List[str]:
    """The launcher's Landlock arguments: read what the kernel needs, write ``workdir`` and ``conn_dir``,
    never read ``hidden`` even below a needed folder; ``tcp``: deny TCP (a lab-book re-run needs it)."""
    args = ["--landlock"] + (["--landlock-tcp"] if tcp else [])
    for path in _needed_paths() + [os.path.realpath(p) for p in readonly]:
        args += ["--landlock-read", path]
    for path in (workdir, conn_dir):
        if path:
            args += ["--landlock-write", os.path.realpath(path)]
    for path in hidden:
        args += ["--landlock-deny", os.path.realpath(path)]
    return args


def _unreachable(paths: Sequence[str]) -> List[Tuple[str, str]]:
    """(closed folder, its child on the way) for each needed path another uid cannot reach.

    Python often lives under /root (mode 0700), where a kernel running as an unprivileged uid could
    not even start; bwrap covers such a folder with a tmpfs and binds back only the way to the interpreter.
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


def namespace_prefix(level: str, workdir: str, conn_dir: str, hidden: Sequence[str] = (),
                     readonly: Sequence[str] = ()) -> List[str]:
    """The command that wraps the kernel for ``level`` (empty for ``rlimits``).

    At ``bwrap``, ``hidden`` paths are not seen (but one holding the interpreter or labkit), ``workdir``
    and ``conn_dir`` (may be empty) are writable and ``readonly`` folders are shown read-only.
    """
    if level in ("rlimits", "none"):
        return []
    if level == "unshare":
        return _UNSHARE + ["--mount-proc"]
    cmd = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    needed = _needed_paths()
    made: List[str] = []
    # Emptied: the shared temporary folders and the grader's home (its files are the instructor's).
    home = os.path.realpath(os.path.expanduser("~"))
    covered: List[str] = []
    for folder in ["/tmp", "/var/tmp", "/dev/shm"] + ([home] if home != "/" else []) + \
            [closed for closed, _child in _unreachable(needed)]:
        if os.path.isdir(folder) and not any(landlock.inside(folder, c) for c in covered):
            covered.append(folder)
            cmd += ["--tmpfs", folder]
    # ... and what the kernel needs below them bound back, wherever it lives (a checkout under /tmp).
    for path in needed:
        inside_another = any(landlock.inside(path, other) and other != path for other in needed)
        if not inside_another and any(landlock.inside(path, top) for top in covered):
            cmd += _passable(path, covered, made) + ["--ro-bind", path, path]
    for path in hidden:
        real = os.path.realpath(path)
        if not os.path.exists(real) or real in ("/", "/tmp") or any(landlock.inside(n, real) for n in needed):
            continue
        if os.path.isdir(real):
            cmd += ["--tmpfs", real]
        else:
            cmd += ["--ro-bind", "/dev/null", real]
    covered = [cmd[i + 1] for i, arg in enumerate(cmd) if arg == "--tmpfs"]
    binds = [("--bind", p) for p in (workdir, conn_dir) if p] + [("--ro-bind", p) for p in readonly]
    for how, path in binds:
        cmd += _passable(os.path.realpath(path), covered, made) + [how, path, path]
    return cmd + ["--chdir", workdir, "--"]


def _passable(path: str, covered: Sequence[str], made: List[str]) -> List[str]:
    """bwrap arguments making the folders on the way to ``path`` inside a tmpfs passable (mode 0711):
    bwrap would create them with mode 0700 (root), out of the run's uid's reach."""
    args: List[str] = []
    parts = path.strip(os.sep).split(os.sep)
    for depth in range(1, len(parts)):
        folder = os.sep + os.sep.join(parts[:depth])
        if folder not in made and any(landlock.inside(folder, top) and top != folder for top in covered):
            made.append(folder)
            args += ["--perms", "0711", "--dir", folder]
    return args
