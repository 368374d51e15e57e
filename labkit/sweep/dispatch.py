"""Dispatch a sweep: what is left of its tasks, to local worker threads or to Parsl; then its reports.

Parallel runs never collide: kernels use private sockets (:mod:`labkit.execute`), each worker's
kernels see one GPU where there are GPUs, runs that already have a readable row are skipped, and
a folder is written by one sweep at a time (:func:`labkit.files.exclusive`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import subprocess
import sys
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from labkit.files import exclusive
from labkit.sweep.parsl_executor import load_parsl_config, run_parsl
from labkit.sweep.planning import MANIFEST, SweepError, SweepPlan, check_out, prepare_out, read_json
from labkit.sweep.task import execute_task, row_of, share_env

__all__ = ["run_sweep", "visible_gpus", "MAX_WORKERS"]

#: Local workers at once. Each drives a Jupyter kernel on this machine, some 70 MB before the notebook
#: imports anything and several hundred MB once it imports torch: 128 of them fill a large node's
#: memory, and more workers than cores only contend. Spreading further is Parsl's job (--executor parsl).
MAX_WORKERS = 128


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
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise SweepError("--workers {}: must be a whole number from 1 to {} (each local worker drives one kernel on "
                         "this machine; use --executor parsl to spread wider)".format(workers, MAX_WORKERS))
    if executor not in ("local", "parsl"):
        raise SweepError("--executor {}: must be 'local' or 'parsl'".format(executor))
    config = load_parsl_config(parsl_config) if executor == "parsl" else None
    check_out(sweep, out)  # before the lock, whose file would be a first change to a folder it refuses
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive(os.path.join(out, MANIFEST), "labkit sweep"))
            prepare_out(sweep, out)
        except OSError as exc:
            raise SweepError("--out {}: cannot write there ({}); choose a folder you may write".format(
                out, exc.strerror or exc)) from None
        return _run_held(sweep, out, workers, executor, config, gpus, retry_failed, quiet)


def _run_held(sweep: SweepPlan, out: str, workers: int, executor: str, config: Any, gpus: Optional[Sequence[str]],
              retry_failed: bool, quiet: bool) -> Dict[str, Any]:
    """:func:`run_sweep` once its folder is held: what is left, run; then the reports."""
    from labkit.sweep import report
    from labkit.progress import bar

    tasks = sweep.tasks(os.path.abspath(out))
    finished = set()  # a run with a readable row is done; one whose row cannot be read runs again
    for task in tasks:
        if not os.path.lexists(task["row"]):
            continue
        try:
            status = read_json(task["row"]).get("status")
        except SweepError as exc:
            if not quiet:
                print("labkit sweep: {}; that run is done again".format(exc), file=sys.stderr)
            continue
        if retry_failed and status != "complete":
            os.unlink(task["row"])
            continue
        finished.add(task["key"])
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
    except BaseException:
        if progress is not None:
            progress.close()
        # what is done is reported after an interruption too; the interruption is what the user hears of
        with contextlib.suppress(OSError):
            report.write_reports(out)
        raise
    if progress is not None:
        progress.close()
    report.write_reports(out)
    result = {"ran": len(todo), "skipped": len(finished), "total": len(tasks), "failed": failed[0]}
    result.update(report.counts(out))
    return result
