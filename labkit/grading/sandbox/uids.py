"""One private unprivileged uid per concurrent grading run (when the grader runs as root).

    slot = acquire_slot(level)   # Slot(uid=None) when not root or no uid can start the kernel
    ...
    slot.release()               # kills every process of the uid, removes the run's cgroups
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import signal
import tempfile
import time
from dataclasses import dataclass, field
from typing import List, Optional

from labkit.grading.sandbox.cgroups import remove_cgroups
from labkit.grading.sandbox.levels import uid_switch_possible

__all__ = ["UID_RANGE", "LOCK_DIR", "Slot", "acquire_slot", "kill_uid", "pids_of_uid"]

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


def _uid_unused(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return True
    return False


def acquire_slot(level: str = "bwrap") -> Slot:
    """Reserve an unused uid for one run (root), or run as ourselves (not root, or no uid can run)."""
    if not uid_switch_possible(level):
        return Slot(uid=None)
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    for uid in range(UID_RANGE[0], UID_RANGE[1] + 1):
        if not _uid_unused(uid):
            continue
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


def kill_uid(uid: int, rounds: int = 50) -> None:
    """SIGKILL every process of ``uid`` (a sandbox uid, never a real account): a child that becomes
    ``uid`` and calls ``kill(-1, SIGKILL)`` reaches them all at once, which a fork bomb cannot outrun."""
    if os.geteuid() != 0 or not (UID_RANGE[0] <= uid <= UID_RANGE[1]):
        return
    for _ in range(rounds):
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

