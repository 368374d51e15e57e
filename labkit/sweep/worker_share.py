"""Each sweep worker's share of the machine, and whether its runs' timings were contended.

    labkit sweep NOTEBOOK ... --workers 2      # on 2 cores: each run gets 1 thread

Each worker gets ``threads = cores // workers`` (at least 1), set in its kernels' environment
*before* torch starts (``OMP_NUM_THREADS`` and friends are read when torch is imported; a notebook
cannot change them later). The share is recorded in every run's environment
(:func:`labkit.devices.recorded_share` reads it, below the sweep because every run records it).

Timings are still contended when the shares overlap (more workers than cores) or the 1-minute
load average just before or after a run exceeds ``cores + LOAD_SLACK``: then some task waited
for a core, and that wait is in the run's times (docs/sweeps.md, "Contended timings").
"""

from __future__ import annotations

import os
from typing import Dict, Mapping, Optional, Tuple

from labkit.devices import SHARE_VARIABLES, recorded_share

__all__ = ["share", "share_env", "recorded_share", "cores", "load_average", "contention", "LOAD_SLACK", "THREAD_VARIABLES"]

#: Runnable tasks above the core count that still count as "not busy": the sweep's own
#: process and the kernels' I/O threads wake now and then.
LOAD_SLACK = 0.5

#: Thread-pool sizes read by torch (OpenMP), MKL, OpenBLAS and numexpr when they start.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def cores() -> int:
    """The cores this process may use (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def share(workers: int, cpu_cores: Optional[int] = None) -> Dict[str, int]:
    """{"workers", "cores", "threads"}: each worker's threads = cores // workers, at least 1."""
    cpu_cores = cores() if cpu_cores is None else cpu_cores
    return {"workers": workers, "cores": cpu_cores, "threads": max(1, cpu_cores // workers)}


def share_env(workers: int, cpu_cores: Optional[int] = None) -> Dict[str, str]:
    """Environment for one worker's kernels: the thread limits and the share, for the record."""
    part = share(workers, cpu_cores)
    env = {name: str(part["threads"]) for name in THREAD_VARIABLES}
    env.update({name: str(part[key]) for key, name in SHARE_VARIABLES.items()})
    return env


def load_average() -> Optional[float]:
    """The 1-minute load average, or None where the OS does not give one (Windows)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def contention(part: Optional[Mapping[str, int]], load_before: Optional[float], load_after: Optional[float],
               cpu_cores: Optional[int] = None) -> Tuple[bool, str]:
    """(contended, why) for one run, from its worker share and the load around it."""
    cpu_cores = (part or {}).get("cores") or (cores() if cpu_cores is None else cpu_cores)
    reasons = []
    if part and part["workers"] * part["threads"] > part["cores"]:
        reasons.append("{} workers x {} thread(s) on {} cores".format(part["workers"], part["threads"], part["cores"]))
    loads = [v for v in (load_before, load_after) if v is not None]
    if loads and max(loads) > cpu_cores + LOAD_SLACK:
        reasons.append("busy machine: load average {} before, {} after, on {} cores".format(
            "n/a" if load_before is None else load_before, "n/a" if load_after is None else load_after, cpu_cores))
    return bool(reasons), "; ".join(reasons)
