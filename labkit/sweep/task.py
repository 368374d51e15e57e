"""One run of a sweep: the machine share its worker gives it, its notebook executed, what it
recorded read, its row (``OUT/runs/<run>.json``) saved atomically once the run has ended, which is
what makes a sweep resumable. Every executor calls :func:`execute_task`. The thread share and when
timings count as contended: docs/sweeps.md, "Parallel runs" and "Contended timings".
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from typing import Any, Dict, Mapping, Optional, Tuple

from labkit.devices import SHARE_VARIABLES, recorded_share
from labkit.execute import run_notebook
from labkit.files import replace_atomic, write_atomic
from labkit.sweep.planning import RUNS

__all__ = ["execute_task", "row_of", "share", "share_env", "recorded_share", "cores", "load_average", "contention",
           "LOAD_SLACK", "THREAD_VARIABLES"]

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


def execute_task(task: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Run one task and save its row (atomically); returns the row. Used by every executor."""
    from labkit import results

    final = task["output"]
    running = final[: -len(".ipynb")] + ".running.ipynb"
    load_before = load_average()
    outcome = run_notebook(task["notebook"], running, task["parameters"], timeout=task.get("timeout"),
                           env=env, check=False)
    load_after = load_average()
    if os.path.exists(running):
        replace_atomic(running, final)
    row = _row_head(task)
    status, error = outcome.status, outcome.error
    metrics: Dict[str, Any] = {}
    try:
        recorded = results.read(final).records if os.path.exists(final) else {}
    except ValueError as exc:
        recorded, status, error = {}, "error", str(exc)
    runs = {name: results.Run.from_dict(data) for name, data in recorded.items()
            if isinstance(data, dict) and "exercise" in data and "metrics" in data}
    units: Dict[str, str] = {}
    for name, run in runs.items():
        for metric, value in run.metrics.items():
            column = metric if len(runs) == 1 else "{}.{}".format(name, metric)
            metrics[column] = value
            if metric in run.units:
                units[column] = run.units[metric]
        if status == "complete" and run.status != "complete":
            status = run.status
            error = error or "the run recorded status {!r}".format(run.status)
    if status == "complete" and not runs:
        status, error = "error", "the notebook recorded no labkit.results.Run"
    row.update(metrics)
    row.update({"status": status, "error": error, "duration": round(outcome.duration, 3),
                "gpu": (env or {}).get("CUDA_VISIBLE_DEVICES", "")})
    part = recorded_share(env or {})
    contended, why = contention(part, load_before, load_after)
    row.update({"exercise": ",".join(sorted({r.exercise for r in runs.values()})),
                "threads": part["threads"] if part else "", "workers": part["workers"] if part else "",
                "load_before": load_before, "load_after": load_after,
                "timing_contended": contended, "contention": why, "units": units,
                # what the run's verdict says (near chance, diverged): summary.md quotes it
                "verdict_notes": [n for r in runs.values() for n in r.notes if "near chance" in n or "diverge" in n]})
    # the sweep was interrupted (Ctrl+C reaches its kernels too), not the run: redo it next time
    if "KeyboardInterrupt" in error or "Interrupted:" in error or status == "interrupted":
        row["status"] = "interrupted"
        return row
    write_atomic(task["row"], json.dumps(results.json_safe(row)) + "\n")
    return row


def row_of(future: Future, task: Mapping[str, Any]) -> Dict[str, Any]:
    """The task's row; a worker that failed (not the kernel: the worker) gives an unsaved row."""
    try:
        return future.result()
    except Exception as exc:
        row = _row_head(task)
        row.update({"status": "error", "error": "worker failed: {}: {}".format(type(exc).__name__, exc),
                    "duration": 0.0, "gpu": ""})
        return row  # not saved: the run itself never ended, so a restart runs it again


def _row_head(task: Mapping[str, Any]) -> Dict[str, Any]:
    """The columns a row has whatever happened: the run, its parameters and its notebook."""
    return {"run": task["key"], **task["parameters"], "notebook": os.path.join(RUNS, os.path.basename(task["output"]))}

