"""One run of a sweep: execute its notebook, read what it recorded, save its row.

Every executor (the local worker threads, Parsl workers) calls :func:`execute_task`; the row
(``OUT/runs/<run>.json``) is written atomically once the run has ended, which is what makes a
sweep resumable. Whether the run's timings were contended comes from :mod:`labkit.sweep.worker_share`.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from typing import Any, Dict, Mapping, Optional

from labkit.execute import run_notebook
from labkit.files import replace_atomic, write_atomic
from labkit.sweep import worker_share as share
from labkit.sweep.planning import RUNS

__all__ = ["execute_task", "row_of"]


def execute_task(task: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Run one task and save its row (atomically); returns the row. Used by every executor."""
    from labkit import results

    final = task["output"]
    running = final[: -len(".ipynb")] + ".running.ipynb"
    load_before = share.load_average()
    outcome = run_notebook(task["notebook"], running, task["parameters"], timeout=task.get("timeout"),
                           env=env, check=False)
    load_after = share.load_average()
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
    part = share.recorded_share(env or {})
    contended, why = share.contention(part, load_before, load_after)
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
    row: Dict[str, Any] = {"run": task["key"]}
    row.update(task["parameters"])
    row["notebook"] = os.path.join(RUNS, os.path.basename(task["output"]))
    return row

