"""The grading worker: the process that grades one submission, started, watched, collected.

Used by the local batch and by Parsl tasks alike (``labkit grade --executor parsl``: :func:`run_parsl`).
The worker is trusted code started in isolated mode (:mod:`labkit.grading.sandbox.trusted`),
so no submission can shadow its imports.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Callable, Dict, List

from labkit.grading.sandbox import levels, slots
from labkit.grading.checks.evidence import Evidence
from labkit.grading.checks.rubric import load_rubric
from labkit.grading.sandbox.trusted import python_command

__all__ = ["Submission", "Running", "WORKER_GRACE_S", "new_workroot", "start_job", "collect_job", "kill_job",
           "failed_result", "run_parsl"]

#: Grace the worker gets beyond the notebook limit (kernel start, recompute, writing) before
#: the batch kills it.
WORKER_GRACE_S = 90.0


@dataclass
class Submission:
    student: str
    source: str  # the notebook, or the student's folder
    notebook: str  # the notebook to execute ("" when none was found)
    problem: str = ""


PR_SET_PDEATHSIG = 1
try:
    import ctypes

    _LIBC: Any = ctypes.CDLL(None)
    _LIBC.prctl  # noqa: B018 - Linux only
except (OSError, AttributeError):  # pragma: no cover - not Linux
    _LIBC = None


def _prepare_worker() -> None:  # pragma: no cover - runs in the child between fork and exec
    # Die with the batch (kill -9 of `labkit grade` must not leave workers grading for nobody).
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # Soft memory limit only: the kernel's launcher may still set its own (higher) limit.
    soft = 6 << 30
    _s, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


@dataclass
class Running:
    sub: Submission
    key: str
    proc: subprocess.Popen
    slot: slots.Slot
    run_dir: str
    result_path: str
    deadline: float
    started: float


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def new_workroot() -> str:
    """A fresh folder for this grader's runs, named by its pid, once those of killed graders are removed."""
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        match = re.match(r"^labkit-grade-(\d+)-", name)
        if match and not _pid_alive(int(match.group(1))):
            shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
    slots.remove_stale_cgroups(_pid_alive)
    workroot = tempfile.mkdtemp(prefix="labkit-grade-{}-".format(os.getpid()))
    os.chmod(workroot, 0o711)  # run uids may pass through to their own folder, not list the others
    return workroot


def start_job(job: Dict[str, Any], sub: Submission, workroot: str, counter: int) -> Running:
    """Start the worker process that grades ``job`` (see runner.py) in ``workroot/r<counter>``."""
    limits = levels.Limits(**job["limits"])
    level = job["level"]
    slot = slots.acquire_slot(level)
    slot.cgroups = slots.make_cgroups("{}-r{}".format(os.getpid(), counter), limits)
    run_dir = os.path.join(workroot, "r{}".format(counter))  # short: ipc socket paths are limited to 107 bytes
    os.makedirs(run_dir, mode=0o711)
    result_path = os.path.join(run_dir, "result.json")
    job = dict(job, run_dir=run_dir, result=result_path, uid=slot.uid, cgroups=slot.cgroups,
               hidden=list(job["hidden"]) + [workroot],
               isolation=levels.isolation_name(level, slot.uid is not None, bool(slot.cgroups)))
    job_path = os.path.join(run_dir, "job.json")
    with open(job_path, "w") as f:
        json.dump(job, f)
    log = open(os.path.join(run_dir, "worker.log"), "wb")
    command = python_command("labkit.grading.runner", [job_path], exclude=[workroot] + list(job["hidden"]))
    proc = subprocess.Popen(command, stdout=log, stderr=log, cwd=run_dir, stdin=subprocess.DEVNULL,
                            start_new_session=True, preexec_fn=_prepare_worker)
    log.close()
    deadline = time.monotonic() + (limits.notebook_s or 1e9) + WORKER_GRACE_S
    return Running(sub, job["key"], proc, slot, run_dir, result_path, deadline, time.monotonic())


def kill_job(item: Running) -> None:
    """Kill the worker's process group, then whatever its run's uid and cgroups left."""
    with suppress(OSError):
        os.killpg(item.proc.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        item.proc.wait(timeout=10)
    item.slot.release()


def collect_job(item: Running, timed_out: bool, limits: levels.Limits, level: str,
             rubric: Any, reproduce: bool) -> Dict[str, Any]:
    """The worker's result (its ``executed`` notebook still in the run folder), or why there is none."""
    if timed_out:
        kill_job(item)
    item.slot.release()  # kills anything the run's uid left behind
    result: Dict[str, Any]
    try:
        with open(item.result_path) as f:
            result = json.load(f)
    except (OSError, ValueError):
        tail = ""
        with suppress(OSError, IndexError), open(os.path.join(item.run_dir, "worker.log"), "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 2000))
            tail = f.read().decode(errors="replace").strip().splitlines()[-1:][0] if f else ""
        why = "the grader stopped this run after {:g} s".format((limits.notebook_s or 0) + WORKER_GRACE_S) if timed_out \
            else "the grading process failed (exit status {}){}".format(item.proc.returncode, ": " + tail if tail else "")
        result = failed_result(item.sub.student, item.key, level, "timeout" if timed_out else "grader error", why,
                               rubric, reproduce)
    result.pop("trace", None)
    result["graded_s"] = round(time.monotonic() - item.started, 3)
    return result


def failed_result(student: str, key: str, level: str, status: str, why: str, rubric: Any,
                  reproduce: bool) -> Dict[str, Any]:
    """The result of a submission whose grading produced nothing: every check scored on ``why``."""
    checks = [c.to_dict() for c in rubric.grade(Evidence(None, {}, {}, status, why, reproduce=reproduce))]
    return {"student": student, "key": key, "isolation": level, "status": status, "reason": why,
            "checks": checks, "total": 0, "max_total": round(sum(c["points"] for c in checks if not c.get("skipped")), 3)}


def grade_on_worker(job: Dict[str, Any]) -> Dict[str, Any]:
    """Runs on a Parsl worker: grade one submission there exactly as the local executor does, and return
    its result with the executed notebook's text. A node where the level does not work grades nothing:
    the submission gets a ``grader error`` naming the node, never a weaker sandbox."""
    host = socket.gethostname()
    rubric = load_rubric(job["rubric"])
    refused = "" if job.get("allow_unconfined") else levels.refusal(job["level"])
    if not levels.level_available(job["level"]) or refused:
        why = refused or "isolation level {!r} does not work".format(job["level"])
        return dict(failed_result(job["student"], job["key"], job["level"], "grader error",
                                  "on node {}, {}; nothing was run".format(host, why), rubric,
                                  job["reproduce"]), host=host)
    workroot = new_workroot()
    sub = Submission(job["student"], job["source"], job["notebook"], job["problem"])
    item = None
    try:
        item = start_job(job, sub, workroot, 1)
        while item.proc.poll() is None and time.monotonic() <= item.deadline:
            time.sleep(0.1)
        limits = levels.Limits(**job["limits"])
        result = collect_job(item, item.proc.poll() is None, limits, job["level"], rubric, job["reproduce"])
        executed = result.pop("executed", None)
        if executed and os.path.exists(executed):
            with open(executed, encoding="utf-8") as f:
                result["executed_text"] = f.read()
    finally:
        if item is not None and item.proc.poll() is None:  # the task itself was cancelled
            kill_job(item)
        shutil.rmtree(workroot, ignore_errors=True)
    result["host"] = host
    result["slurm_job"] = os.environ.get("SLURM_JOB_ID") or os.environ.get("PBS_JOBID") or ""
    return result


def run_parsl(jobs: List[Dict[str, Any]], config: Any, out_dir: str,
              on_result: Callable[[Dict[str, Any], Dict[str, Any]], None]) -> None:
    """Submit every job through Parsl; call ``on_result(job, result)`` here as each finishes (only
    ``labkit grade`` writes the state: docs/grading.md, "Grading on a cluster")."""
    from labkit.sweep.parsl_executor import parsl_map

    if not jobs:
        return
    for job, future in parsl_map(grade_on_worker, jobs, config, out_dir):
        try:
            result = future.result()
        except Exception as exc:  # the Parsl task itself failed (worker lost, node gone)
            why = "the Parsl task failed: {}: {}".format(type(exc).__name__, str(exc)[:300])
            result = failed_result(job["student"], job["key"], job["level"], "grader error", why,
                                   load_rubric(job["rubric"]), job["reproduce"])
        on_result(job, result)
