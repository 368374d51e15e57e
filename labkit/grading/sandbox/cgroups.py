"""Cgroups: one cap on the processes (``pids.max``) and memory of a whole grading run (v1 or v2).

    folders = make_cgroups("<pid>-r<n>", limits)   # [] where this grader may make none
    cgroup_command(folders, parent)                # the launcher stage that joins them
    remove_cgroups(folders)                        # kill what is left, remove them
"""

from __future__ import annotations

import os
import signal
import time
from contextlib import suppress
from typing import Any, Dict, List, Optional, Sequence

from labkit.grading.sandbox.levels import LAUNCHER, Limits

__all__ = ["CGROUP_ROOT", "cgroup_parents", "make_cgroups", "kill_cgroup_processes", "remove_cgroups", "remove_stale_cgroups", "cgroup_command"]

CGROUP_ROOT = "/sys/fs/cgroup"


def cgroup_parents() -> Dict[str, str]:
    """controller -> the folder under which this grader may make cgroups (v1 or v2), if writable."""
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):  # v2: one unified tree
        own = _own_cgroup("")
        folder = os.path.join(CGROUP_ROOT, own.lstrip("/"))
        return {"unified": folder} if os.access(folder, os.W_OK) else {}
    found = {}
    for controller in ("pids", "memory"):
        folder = os.path.join(CGROUP_ROOT, controller, _own_cgroup(controller).lstrip("/"))
        if os.path.isdir(folder) and os.access(folder, os.W_OK):
            found[controller] = folder
    return found


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


def _cgroup_pids(folder: str) -> List[int]:
    try:
        with open(os.path.join(folder, "cgroup.procs")) as f:
            return [int(line) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def kill_cgroup_processes(folders: Sequence[str]) -> None:
    """SIGKILL every process in the run's cgroups (until none is left, or 2 s)."""
    for folder in folders:
        for _ in range(100):
            pids = _cgroup_pids(folder)
            if not pids:
                break
            for pid in pids:
                with suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.02)


def remove_cgroups(folders: Sequence[str]) -> None:
    """Kill whatever is left in the run's cgroups, then remove them."""
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


def cgroup_command(folders: Sequence[str], parent: Optional[int] = None, always: bool = False) -> List[str]:
    """The first stage of a kernel launch: die with the grader, join the run's cgroups; empty when there
    are none, unless ``always`` (``unshare`` itself would otherwise outlive a grader killed with SIGKILL)."""
    if not folders and not always:
        return []
    cmd = LAUNCHER + ["--die-with-parent"]
    if parent is not None:
        cmd += ["--parent", str(parent)]
    for folder in folders:
        cmd += ["--cgroup", folder]
    return cmd + ["--"]

