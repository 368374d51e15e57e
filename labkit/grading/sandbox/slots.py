"""A run's slot: one private unprivileged uid per concurrent grading run (when the grader runs as root)
and cgroups capping the processes (``pids.max``) and memory of the whole run (v1 or v2).
:meth:`Slot.release` kills every process of the uid and of the cgroups, and removes the cgroups.
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import signal
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from labkit.grading.sandbox.levels import LAUNCHER, Limits, uid_switch_possible

__all__ = ["UID_RANGE", "LOCK_DIR", "Slot", "acquire_slot", "kill_uid", "pids_of_uid", "CGROUP_ROOT",
           "cgroup_parents", "make_cgroups", "kill_cgroup_processes", "remove_cgroups",
           "remove_stale_cgroups", "cgroup_command"]

#: Unprivileged uids the grader runs kernels as (one per concurrent run); chosen among uids
#: with no /etc/passwd entry so no real account is ever signalled.
UID_RANGE = (61000, 61999)
LOCK_DIR = os.path.join(tempfile.gettempdir(), "labkit-grader-locks")


@dataclass
class Slot:
    """A uid reserved (by an flock) for one run; ``uid`` is None when not running as root."""

    uid: Optional[int]
    lock_fd: Optional[int] = None
    cgroups: List[str] = field(default_factory=list)
    _released: bool = field(default=False, repr=False)

    def release(self) -> None:
        if self._released:
            return
        self._released = True
        remove_cgroups(self.cgroups)
        if self.uid is not None:
            kill_uid(self.uid)
        if self.lock_fd is not None:
            os.close(self.lock_fd)


def acquire_slot(level: str = "bwrap") -> Slot:
    """Reserve an unused uid for one run (root), or run as ourselves (not root, or no uid can run)."""
    if not uid_switch_possible(level):
        return Slot(uid=None)
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    for uid in range(UID_RANGE[0], UID_RANGE[1] + 1):
        try:
            pwd.getpwuid(uid)
            continue  # a real account's
        except KeyError:
            pass
        fd = os.open(os.path.join(LOCK_DIR, "uid-{}.lock".format(uid)), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
                continue
            raise
        kill_uid(uid)  # leftovers of a grader that was killed
        return Slot(uid=uid, lock_fd=fd)
    raise RuntimeError("no free grading uid in {}-{}: too many concurrent runs".format(*UID_RANGE))


def pids_of_uid(uid: int) -> List[int]:
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat("/proc/" + name).st_uid == uid:
                pids.append(int(name))
        except OSError:
            continue
    return pids


def kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` (a sandbox uid, never a real account): a child that becomes
    ``uid`` and calls ``kill(-1, SIGKILL)`` reaches them all at once, which a fork bomb cannot outrun."""
    if os.geteuid() != 0 or not (UID_RANGE[0] <= uid <= UID_RANGE[1]):
        return
    for _ in range(50):
        if not pids_of_uid(uid):
            return
        pid = os.fork()
        if pid == 0:  # child: no Python-level work beyond these calls
            try:
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.05)


CGROUP_ROOT = "/sys/fs/cgroup"


def cgroup_parents() -> Dict[str, str]:
    """controller -> the folder under which this grader may make cgroups (v1 or v2), if writable."""
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):  # v2: one unified tree
        folders = {"unified": os.path.join(CGROUP_ROOT, _own_cgroup("").lstrip("/"))}
    else:
        folders = {c: os.path.join(CGROUP_ROOT, c, _own_cgroup(c).lstrip("/")) for c in ("pids", "memory")}
    return {c: folder for c, folder in folders.items() if os.path.isdir(folder) and os.access(folder, os.W_OK)}


def _own_cgroup(controller: str) -> str:
    with suppress(OSError), open("/proc/self/cgroup") as f:
        for line in f:
            _id, names, path = line.rstrip("\n").split(":", 2)
            if (controller == "" and names == "") or controller in names.split(","):
                return path
    return "/"


def make_cgroups(name: str, limits: Limits) -> List[str]:
    """Cgroups capping the run's processes (pids.max) and memory; [] where none can be made."""
    made = []
    for controller, parent in cgroup_parents().items():
        folder = os.path.join(parent, "labkit-grade", name)
        try:
            os.makedirs(folder, exist_ok=True)
            if controller in ("pids", "unified") and limits.nproc:
                _write(os.path.join(folder, "pids.max"), str(int(limits.nproc)))
            if controller == "memory" and limits.memory_bytes:
                _write(os.path.join(folder, "memory.limit_in_bytes"), str(int(limits.memory_bytes)))
                with suppress(OSError):
                    _write(os.path.join(folder, "memory.memsw.limit_in_bytes"), str(int(limits.memory_bytes)))
            if controller == "unified" and limits.memory_bytes:
                _write(os.path.join(folder, "memory.max"), str(int(limits.memory_bytes)))
                with suppress(OSError):
                    _write(os.path.join(folder, "memory.swap.max"), "0")
        except OSError:
            remove_cgroups([folder])
            continue
        made.append(folder)
    return made


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def kill_cgroup_processes(folders: Sequence[str]) -> None:
    """SIGKILL every process in the run's cgroups (until none is left, or 2 s)."""
    for folder in folders:
        for _ in range(100):
            try:
                with open(os.path.join(folder, "cgroup.procs")) as f:
                    pids = [int(line) for line in f if line.strip()]
            except (OSError, ValueError):
                break
            if not pids:
                break
            for pid in pids:
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)


def remove_cgroups(folders: Sequence[str]) -> None:
    kill_cgroup_processes(folders)
    for folder in folders:
        with suppress(OSError):
            os.rmdir(folder)


def remove_stale_cgroups(alive: Any) -> None:
    """Cgroups left by a grader that was killed (named <pid>-r<n>): empty and remove them."""
    for parent in cgroup_parents().values():
        folder = os.path.join(parent, "labkit-grade")
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            pid = name.split("-", 1)[0]
            if pid.isdigit() and not alive(int(pid)) and os.path.isdir(os.path.join(folder, name)):
                remove_cgroups([os.path.join(folder, name)])


def cgroup_command(folders: Sequence[str], parent: int, always: bool) -> List[str]:
    """The first stage of a kernel launch: die with the grader (pid ``parent``), join the run's cgroups; empty
    when there are none, unless ``always`` (``unshare`` itself would otherwise outlive a grader killed with SIGKILL)."""
    if not folders and not always:
        return []
    cmd = LAUNCHER + ["--die-with-parent", "--parent", str(parent)]
    for folder in folders:
        cmd += ["--cgroup", folder]
    return cmd + ["--"]

