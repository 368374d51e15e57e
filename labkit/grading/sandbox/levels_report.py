"""What ``labkit grade --check`` prints: each isolation level here, what it protects, which is used.

    print(levels_report.levels_report(chosen=None, allow_unconfined=False))
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional

from labkit.grading.sandbox import cgroups, levels

__all__ = ["levels_report"]


_NEEDS = {"bwrap": "bubblewrap (apt-get install bubblewrap) and user namespaces or root",
          "unshare": "root (util-linux unshare, namespaces permitted)",
          "rlimits": "nothing (files: Landlock, Linux 5.13+)",
          "none": "asking for it: --isolation none"}


def _uid(level: str) -> bool:
    return level != "none" and levels.uid_switch_possible(level)


def _protections(level: str, abi: int, uid: bool, cgroup: bool) -> List[str]:
    """files, network, processes, memory for ``level`` on this machine (as ``--check`` shows them)."""
    landlocked = level != "none" and abi >= 1
    if level == "bwrap":
        files = "yes: hidden+read-only" + ("+Landlock" if landlocked else "")
    else:
        files = "yes: Landlock" if landlocked else "NO"
    if level in ("bwrap", "unshare"):
        network, processes = "yes: no network", "yes: PID namespace"
    else:
        network = "TCP only: Landlock" if landlocked and abi >= 4 else "NO"
        processes = "yes: private uid" if uid else ("yes: cgroup" if cgroup else "NO: background ones survive")
    memory = "rlimits" + ("+cgroup" if cgroup else "")
    return [files, network, processes, memory]


def levels_report(chosen: Optional[str] = None, allow_unconfined: bool = False) -> str:
    """What ``labkit grade --check`` prints: each level here, what it protects and needs, which is used."""
    abi = levels.landlock_abi()
    cgroup = bool(cgroups.cgroup_parents())
    lines = ["labkit grade --check: uid {}{}, Linux {}, Python {}".format(
        os.geteuid(), " (root)" if os.geteuid() == 0 else "", os.uname().release, sys.prefix)]
    if abi:
        lines.append("Landlock ABI {}: files{}{}".format(abi, "; TCP denied (ABI 4+)" if abi >= 4 else "",
                                                         "; abstract sockets and signals scoped (ABI 6+)"
                                                         if abi >= 6 else ""))
    else:
        lines.append("Landlock: not available (needs Linux 5.13+ with landlock among its LSMs)")
    lines.append("bubblewrap: {}".format("works" if levels.level_available("bwrap") else
                                         "installed, not permitted here" if shutil.which("bwrap") else
                                         "not installed (apt-get install bubblewrap)"))
    lines.append("cgroups: {}".format("yes (a process and memory cap per run)" if cgroup else
                                      "no (not writable by this user)"))
    rows = [["level", "works", "gradebook says", "files", "network", "processes", "memory", "needs"]]
    for level in levels.LEVELS:
        works = levels.level_available(level)
        uid = works and _uid(level)
        name = levels.isolation_name(level, uid, cgroup) if works else "-"
        rows.append([level, "yes" if works else "no", name] + _protections(level, abi, uid, cgroup) + [_NEEDS[level]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines.append("")
    for row in rows:
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1])
    lines.append("Every level: kill -9 of labkit grade leaves no kernel; rlimits (memory, file size, CPU, processes).")
    level = chosen or levels.best_level()
    why = "" if allow_unconfined else levels.refusal(level)
    if not levels.level_available(level):
        lines.append("labkit grade --isolation {} would stop: that level does not work here.".format(level))
    elif why:
        lines.append("labkit grade would refuse: " + why + ".")
    else:
        lines.append("labkit grade would use: {} (gradebook: {})".format(
            level, levels.isolation_name(level, _uid(level), cgroup)))
    return "\n".join(lines)
