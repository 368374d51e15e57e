"""``labkit grade --executor parsl --config FILE``: each submission graded on a Parsl worker.

    labkit grade submissions/ --rubric hw.rubric.yml --out grades/ --executor parsl \
        --config docs/parsl/slurm_testbed.py

A task grades one submission on its node exactly as the local executor does and returns the
result and the executed notebook's text; only ``labkit grade`` writes the state (docs/grading.md,
"Grading on a cluster"). A node where the requested level does not work grades nothing: the
submission gets a ``grader error`` naming the node, never a weaker sandbox.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from typing import Any, Callable, Dict, List

from labkit.grading import worker
from labkit.grading.sandbox import levels
from labkit.grading.checks.rubric import load_rubric

__all__ = ["run_parsl"]


def grade_on_worker(job: Dict[str, Any]) -> Dict[str, Any]:
    """Runs on a Parsl worker: grade one submission there and return its result."""
    host = socket.gethostname()
    rubric = load_rubric(job["rubric"])
    refused = "" if job.get("allow_unconfined") else levels.refusal(job["level"])
    if not levels.level_available(job["level"]) or refused:
        why = refused or "isolation level {!r} does not work".format(job["level"])
        return dict(worker.failed_result(job["student"], job["key"], job["level"], "grader error",
                                         "on node {}, {}; nothing was run".format(host, why), rubric,
                                         job["reproduce"]), host=host)
    workroot = worker.new_workroot()
    sub = worker.Submission(job["student"], job["source"], job["notebook"], job["problem"])
    item = None
    try:
        item = worker.start_job(job, sub, workroot, 1)
        while item.proc.poll() is None and time.monotonic() <= item.deadline:
            time.sleep(0.1)
        limits = levels.Limits(**job["limits"])
        result = worker.collect_job(item, item.proc.poll() is None, limits, job["level"], rubric, job["reproduce"])
        executed = result.pop("executed", None)
        if executed and os.path.exists(executed):
            with open(executed, encoding="utf-8") as f:
                result["executed_text"] = f.read()
    finally:
        if item is not None and item.proc.poll() is None:  # the task itself was cancelled
            worker.kill_job(item)
        shutil.rmtree(workroot, ignore_errors=True)
    result["host"] = host
    result["slurm_job"] = os.environ.get("SLURM_JOB_ID") or os.environ.get("PBS_JOBID") or ""
    return result


def run_parsl(jobs: List[Dict[str, Any]], config: Any, out_dir: str,
              on_result: Callable[[Dict[str, Any], Dict[str, Any]], None]) -> None:
    """Submit every job through Parsl; call ``on_result(job, result)`` here as each finishes."""
    from labkit.sweep.parsl_executor import parsl_map

    if not jobs:
        return
    for job, future in parsl_map(grade_on_worker, jobs, config, out_dir):
        try:
            result = future.result()
        except Exception as exc:  # the Parsl task itself failed (worker lost, node gone)
            why = "the Parsl task failed: {}: {}".format(type(exc).__name__, str(exc)[:300])
            result = worker.failed_result(job["student"], job["key"], job["level"], "grader error", why,
                                          load_rubric(job["rubric"]), job["reproduce"])
        on_result(job, result)
