"""Dispatch a sweep: what is left of its tasks, to local worker threads or to Parsl; then its reports.

Parallel runs never collide: kernels use private sockets (:mod:`labkit.execute`), each worker's
kernels see one GPU where there are GPUs, and runs that already have a row are skipped.
"""

from __future__ import annotations

import os
import queue
import subprocess
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from labkit.sweep.parsl_executor import load_parsl_config, run_parsl
from labkit.sweep.planning import SweepError, SweepPlan, prepare_out, read_json
from labkit.sweep.task import execute_task, row_of, share_env

__all__ = ["run_sweep", "visible_gpus"]


def visible_gpus() -> List[str]:
    """GPU ids for one-GPU-per-worker, without importing torch: CUDA_VISIBLE_DEVICES or nvidia-smi."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    try:
        listing = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in listing.stdout.splitlines() if line.strip().isdigit()] if listing.returncode == 0 else []


# -- local executor: worker threads, each driving one kernel at a time ------------------------
# Threads are enough: the work happens in the kernels (separate processes); a thread only
# waits on its kernel's sockets. Threads also need no `if __name__ == "__main__"` guard and
# work from inside a notebook, where process pools are awkward.

def run_local(tasks: Sequence[Mapping[str, Any]], workers: int, gpus: Sequence[str],
              on_row: Callable[[Dict[str, Any]], None], share_workers: Optional[int] = None) -> None:
    """Run ``tasks`` on ``workers`` threads; each worker's kernels get the thread share of
    ``share_workers`` (default ``workers``) workers, so a resumed sweep keeps its first share."""
    slots: "queue.Queue[Optional[str]]" = queue.Queue()
    for i in range(workers):
        slots.put(gpus[i % len(gpus)] if gpus else None)
    threads = share_env(share_workers or workers)  # cores // workers each, set before the kernel imports torch

    def work(task: Mapping[str, Any]) -> Dict[str, Any]:
        gpu = slots.get()  # one GPU per worker: its kernels see only that device
        try:
            env = dict(threads)
            if gpu is not None:
                env["CUDA_VISIBLE_DEVICES"] = gpu
            return execute_task(task, env=env)
        finally:
            slots.put(gpu)

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="labkit-sweep")
    pending: Dict[Future, Mapping[str, Any]] = {}
    try:
        for task in tasks:
            pending[pool.submit(work, task)] = task
        while pending:
            finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
            for future in finished:
                on_row(row_of(future, pending.pop(future)))
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)


def run_sweep(sweep: SweepPlan, out: str, workers: int = 1, executor: str = "local",
              parsl_config: Optional[str] = None, gpus: Optional[Sequence[str]] = None,
              retry_failed: bool = False, quiet: bool = False) -> Dict[str, Any]:
    """Run what is left of ``sweep`` into ``out``, then write results.csv, summary.md, plots.

    Returns {"ran": n, "skipped": n, "total": n, "failed": n} about this call (``failed``: runs
    this call made that did not complete) and, about the whole folder whoever ran it (the same
    on a first and a resumed run), {"finished": n, "complete": n, "not_complete": n}.
    """
    from labkit.sweep import report
    from labkit.progress import bar

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SweepError("--workers {}: must be a whole number >= 1".format(workers))
    if executor not in ("local", "parsl"):
        raise SweepError("--executor {}: must be 'local' or 'parsl'".format(executor))
    config = load_parsl_config(parsl_config) if executor == "parsl" else None
    prepare_out(sweep, out)
    tasks = sweep.tasks(os.path.abspath(out))
    if retry_failed:
        for task in tasks:
            if os.path.isfile(task["row"]) and read_json(task["row"]).get("status") != "complete":
                os.unlink(task["row"])
    finished = {t["key"] for t in tasks if os.path.isfile(t["row"])}  # a run with a row is done
    todo = [t for t in tasks if t["key"] not in finished]
    gpus = list(visible_gpus() if gpus is None else gpus)
    failed = [0]
    progress = bar(total=len(todo), desc="sweep", unit="run") if todo and not quiet else None

    def on_row(row: Dict[str, Any]) -> None:
        if row.get("status") != "complete":
            failed[0] += 1
        if progress is not None:
            progress.update(1)
            progress.set_postfix_str("{} failed".format(failed[0]) if failed[0] else "")

    try:
        if todo and executor == "local":
            run_local(todo, min(workers, len(todo)), gpus, on_row, share_workers=workers)
        elif todo:
            run_parsl(todo, config, out, on_row)
    finally:
        if progress is not None:
            progress.close()
        report.write_reports(out)  # also after an interruption: what is done is reported
    result = {"ran": len(todo), "skipped": len(finished), "total": len(tasks), "failed": failed[0]}
    result.update(report.counts(out))
    return result

