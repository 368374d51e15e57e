"""Grade a class: find the submissions, run them in parallel sandboxed workers, keep a state.

Each submission is graded by its own worker process, here or on a Parsl node (:func:`run_parsl`),
so a submission that crashes, hangs or attacks its grader costs only its own grade. The worker is
trusted code started in isolated mode (:mod:`labkit.grading.sandbox.trusted`), so no submission can
shadow its imports. How the state makes a batch resumable: docs/grading.md, "Crash safety and resuming".
"""

from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import re
import resource
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

from labkit.files import write_atomic
from labkit.grading.sandbox import disk, levels, slots
from labkit.grading.reports.class_page import class_data, class_html
from labkit.grading.checks.duplicates import file_fingerprints, find_duplicates, gradebook_note, handout_hashes
from labkit.grading.checks.duplicates import groups as duplicate_groups
from labkit.grading.checks.evidence import Evidence
from labkit.grading.reports.gradebook import (LMS_FORMATS, canvas_csv, class_summary, feedback_html,
                                              summary_markdown, write_gradebook)
from labkit.grading.checks.rubric import load_rubric
from labkit.grading.sandbox.trusted import python_command

__all__ = ["Submission", "find_submissions", "grade_class", "STATE_VERSION", "Running", "WORKER_GRACE_S",
           "new_workroot", "start_job", "collect_job", "kill_job", "failed_result", "run_parsl"]

STATE_VERSION = 1


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name).strip(".") or "student"


@dataclass
class Submission:
    student: str
    source: str  # the notebook, or the student's folder
    notebook: str  # the notebook to execute ("" when none was found)
    problem: str = ""


def find_submissions(folder: str, preferred: Optional[str] = None) -> List[Submission]:
    """``folder/<student>.ipynb`` or ``folder/<student>/<notebook>.ipynb`` (one per student)."""
    if not os.path.isdir(folder):
        raise FileNotFoundError("SUBMISSIONS: {} is not a folder of notebooks or of student folders".format(folder))
    found: List[Submission] = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.startswith(".") or os.path.islink(path):
            continue
        if os.path.isfile(path) and entry.endswith(".ipynb"):
            found.append(Submission(_safe_name(entry[:-len(".ipynb")]), path, path))
        elif os.path.isdir(path):
            notebooks = sorted(f for f in os.listdir(path) if f.endswith(".ipynb") and not f.startswith("."))
            if preferred in notebooks:
                notebooks = [preferred]
            if len(notebooks) == 1:
                found.append(Submission(_safe_name(entry), path, os.path.join(path, notebooks[0])))
            else:
                problem = "no notebook in the folder" if not notebooks else \
                    "several notebooks ({}); expected one".format(", ".join(notebooks))
                found.append(Submission(_safe_name(entry), path, "", problem))
    names = [s.student for s in found]
    for name in set(n for n in names if names.count(n) > 1):
        raise ValueError("SUBMISSIONS: two submissions are both named '{}' (a notebook and a folder?)".format(name))
    return found


def _hash_files(digest: Any, path: str) -> None:
    """Hash a file's bytes, or a folder's names and files; a link by its target, a FIFO or device by its
    kind: never what a link points to (``/dev/zero``, a FIFO would never end in this process)."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        digest.update(b"link:" + os.fsencode(os.readlink(path)))
        return
    if stat.S_ISREG(mode):
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return
    if not stat.S_ISDIR(mode):
        digest.update("special:{:o}".format(stat.S_IFMT(mode)).encode())
        return
    for root, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(root, name)
            digest.update(os.fsencode(os.path.relpath(full, path)) + b"\0")
            _hash_files(digest, full)


def submission_key(sub: Submission, rubric_path: str, template_path: Optional[str], options: Dict[str, Any]) -> str:
    """hash(submission files + rubric + template + grading options)."""
    digest = hashlib.sha256()
    for path in (rubric_path, template_path):
        if path:
            _hash_files(digest, path)
    digest.update(json.dumps(options, sort_keys=True).encode())
    digest.update((sub.notebook and os.path.relpath(sub.notebook, sub.source) or "").encode() + sub.problem.encode())
    _hash_files(digest, sub.source)
    return digest.hexdigest()


class _State:
    """``DIR/.labkit-grade/state.json``: student -> last result; written atomically."""

    def __init__(self, out_dir: str):
        self.folder = os.path.join(out_dir, ".labkit-grade")
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self.path = os.path.join(self.folder, "state.json")
        self.results: Dict[str, Dict[str, Any]] = {}
        # none yet, or unreadable: grade again, losing nothing but time
        with suppress(FileNotFoundError, ValueError), open(self.path) as f:
            data = json.load(f)
            if data.get("version") == STATE_VERSION:
                self.results = data.get("results", {})

    def lock(self) -> int:
        fd = os.open(os.path.join(self.folder, "lock"), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise RuntimeError("another `labkit grade` is writing to {}; wait for it or stop it".format(
                os.path.dirname(self.folder))) from None
        return fd

    def save(self) -> None:
        write_atomic(self.path, json.dumps({"version": STATE_VERSION, "results": self.results}, indent=1))


def grade_class(submissions: str, rubric_path: str, out_dir: str, workers: int = 1,
                limits: Optional[levels.Limits] = None, reproduce: bool = False, level: Optional[str] = None,
                progress: Optional[Callable[[Dict[str, Any]], None]] = None, only: Optional[Sequence[str]] = None,
                lms: Optional[str] = None, assignment: Optional[str] = None, executor: str = "local",
                parsl_config: Optional[str] = None, allow_unconfined: bool = False) -> Dict[str, Dict[str, Any]]:
    """Grade every submission not yet graded with this rubric; return student -> result.

    The options are ``labkit grade``'s (docs/grading.md). Fails closed: where no level here keeps a
    submission inside its folder, ``RuntimeError`` before any notebook runs, unless ``allow_unconfined``.
    """
    rubric = load_rubric(rubric_path)  # a bad rubric stops here, before any notebook runs
    limits = limits or levels.Limits()
    if executor not in ("local", "parsl"):
        raise ValueError("--executor {}: must be 'local' or 'parsl'".format(executor))
    if lms is not None and lms not in LMS_FORMATS:
        raise ValueError("--lms {}: must be one of {}".format(lms, ", ".join(LMS_FORMATS)))
    config = None
    if executor == "parsl":
        from labkit.sweep.parsl_executor import load_parsl_config

        config = load_parsl_config(parsl_config)  # its errors name --config, as for sweeps
    level = level or levels.best_level()
    levels.check_level(level)
    if executor == "local" and not levels.level_available(level):
        raise RuntimeError("isolation level {!r} does not work on this machine".format(level))
    if executor == "local" and not allow_unconfined and levels.refusal(level):
        raise RuntimeError(levels.refusal(level))
    if executor == "local":
        disk.check_space(out_dir, workers, limits.disk_bytes, limits.fsize_bytes, limits.output_bytes)
    preferred = os.path.basename(rubric.template_path) if rubric.template_path else None
    subs = find_submissions(submissions, preferred)
    if only:
        unknown = sorted(set(only) - set(s.student for s in subs))
        if unknown:
            raise ValueError("--only {}: no such submission in {}; the submissions are: {}".format(
                ", ".join(unknown), submissions, ", ".join(s.student for s in subs) or "none"))
    for sub_dir in ("feedback", "executed"):  # makes out_dir too
        os.makedirs(os.path.join(out_dir, sub_dir), exist_ok=True)
    state = _State(out_dir)
    lock_fd = state.lock()
    options = {"limits": limits.to_dict(), "reproduce": reproduce, "level": level}
    keys = {s.student: submission_key(s, rubric_path, rubric.template_path, options) for s in subs}
    # Forget students who are no longer in SUBMISSIONS; keep finished results whose key matches.
    state.results = {n: r for n, r in state.results.items() if n in keys}
    if only:
        pending = [s for s in subs if s.student in set(only)]
    else:
        pending = [s for s in subs if state.results.get(s.student, {}).get("key") != keys[s.student]]
    hidden = [os.path.abspath(submissions), os.path.abspath(out_dir), os.path.abspath(rubric_path)]
    handout = handout_hashes(os.path.dirname(rubric.template_path) if rubric.template_path else None)
    outputs = _Outputs(out_dir, rubric, subs, lms, assignment)
    outputs.write(state)

    def finished(job: Dict[str, Any], result: Dict[str, Any]) -> None:
        if os.path.exists(job["source"]):
            result["fingerprints"] = file_fingerprints(job["source"], handout)
        state.results[job["student"]] = result
        state.save()
        outputs.write(state, result)
        if progress is not None:
            progress(result)

    # what a worker needs to grade a submission, as plain data: it may travel to another node
    jobs = [{"student": s.student, "key": keys[s.student], "source": os.path.abspath(s.source),
             "notebook": os.path.abspath(s.notebook) if s.notebook else "", "problem": s.problem,
             "rubric": os.path.abspath(rubric_path), "limits": limits.to_dict(), "level": level, "hidden": hidden,
             "reproduce": reproduce, "allow_unconfined": allow_unconfined} for s in pending]
    try:
        if executor == "parsl":
            run_parsl(jobs, config, out_dir, lambda job, result: finished(job, _store_executed(result, out_dir)))
        else:
            _run_local(jobs, rubric, workers, out_dir, finished)
    finally:
        os.close(lock_fd)
    return {s.student: state.results[s.student] for s in subs if s.student in state.results}


def _run_local(pending: List[Dict[str, Any]], rubric: Any, workers: int, out_dir: str,
               finished: Callable[[Dict[str, Any], Dict[str, Any]], None]) -> None:
    """Grade the submissions of ``pending`` here, ``workers`` at a time, each in its own worker process."""
    workroot = new_workroot()
    running: List[Running] = []
    numbers = itertools.count(1)
    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while pending or running:
            while pending and len(running) < max(1, workers):
                running.append(start_job(pending.pop(0), workroot, next(numbers)))
            time.sleep(0.1)
            for item in list(running):
                timed_out = time.monotonic() > item.deadline
                if item.proc.poll() is None and not timed_out:
                    continue
                running.remove(item)
                result = _store_executed(collect_job(item, timed_out, rubric), out_dir)
                if not os.environ.get("LABKIT_GRADE_KEEP_RUNS"):  # set it to inspect a run's kernel.log
                    disk.remove_run_folder(item.job["run_dir"])
                finished(item.job, result)
    finally:
        for item in running:  # interrupted: stop what runs; the state keeps what finished
            kill_job(item)
        signal.signal(signal.SIGTERM, previous_term)
        if not os.environ.get("LABKIT_GRADE_KEEP_RUNS"):
            disk.remove_run_folder(workroot)


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt("labkit grade stopped by signal {}".format(signum))


def _store_executed(result: Dict[str, Any], out_dir: str) -> Dict[str, Any]:
    """Move the executed notebook (a path here, or its text from a remote worker) to ``DIR/executed``."""
    target = os.path.join(out_dir, "executed", result["student"] + ".ipynb")
    executed = result.pop("executed", None)
    text = result.pop("executed_text", None)
    if executed and os.path.exists(executed):
        shutil.copyfile(executed, target)
    elif text is not None:
        write_atomic(target, text)
    return result


class _Outputs:
    """Everything derived from the state: gradebook, feedback, summary, the class page, LMS export."""

    def __init__(self, out_dir: str, rubric: Any, subs: List[Submission], lms: Optional[str],
                 assignment: Optional[str]):
        self.out_dir = out_dir
        self.rubric = rubric
        self.names = set(s.student for s in subs)
        self.lms = lms
        self.assignment = assignment or rubric.title
        self.flags: Dict[str, List[str]] = {}
        self.runs_read: Dict[Any, Any] = {}  # each student's recorded runs, read once per grading
        # the rubric as the class page reads it, here and in `labkit class DIR`
        write_atomic(os.path.join(out_dir, ".labkit-grade", "rubric.json"),
                     json.dumps({"title": rubric.title, "checks": list(rubric.names)}))

    def write(self, state: _State, new: Optional[Dict[str, Any]] = None) -> None:
        done = [r for n, r in state.results.items() if n in self.names]
        flags = find_duplicates(done)
        changed = set(n for n in set(flags) | set(self.flags) if flags.get(n) != self.flags.get(n))
        self.flags = flags
        # flags are derived from all results each time: shown, never stored in the state
        done = [dict(r, duplicates=[what for what, _ in flags.get(r["student"], [])],
                     duplicate_note=gradebook_note(flags.get(r["student"], []))) for r in done]
        write_gradebook(os.path.join(self.out_dir, "gradebook.csv"), self.rubric.names, done)
        if new is not None:
            changed.add(new["student"])
        for result in done if new is None else [r for r in done if r["student"] in changed]:
            write_atomic(os.path.join(self.out_dir, "feedback", result["student"] + ".html"),
                         feedback_html(result, self.rubric.title))
        write_atomic(os.path.join(self.out_dir, "summary.md"),
                     summary_markdown(class_summary(done, self.rubric.names), len(done), self.rubric.title,
                                      duplicate_groups(done)))
        write_atomic(os.path.join(self.out_dir, "class.html"),
                     class_html(class_data(self.out_dir, done, self.runs_read)))
        if self.lms == "canvas":
            possible = max([r.get("max_total", 0) for r in done] or [0])
            write_atomic(os.path.join(self.out_dir, "canvas.csv"), canvas_csv(done, self.assignment, possible))


# -- one submission's worker process, started, watched, collected ----------------------------

#: Grace the worker gets beyond the notebook limit (kernel start, recompute, writing) before
#: the batch kills it.
WORKER_GRACE_S = 90.0


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
    job: Dict[str, Any]  # with its run's folder, uid and cgroups
    proc: subprocess.Popen
    slot: slots.Slot
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
            disk.remove_run_folder(os.path.join(tmp, name))
    slots.remove_stale_cgroups(_pid_alive)
    workroot = tempfile.mkdtemp(prefix="labkit-grade-{}-".format(os.getpid()))
    os.chmod(workroot, 0o711)  # run uids may pass through to their own folder, not list the others
    return workroot


def start_job(job: Dict[str, Any], workroot: str, counter: int) -> Running:
    """Start the worker process that grades ``job`` (see runner.py) in ``workroot/r<counter>``."""
    limits = levels.Limits(**job["limits"])
    level = job["level"]
    slot = slots.acquire_slot(level)
    slot.cgroups = slots.make_cgroups("{}-r{}".format(os.getpid(), counter), limits)
    run_dir = os.path.join(workroot, "r{}".format(counter))  # short: ipc socket paths are limited to 107 bytes
    os.makedirs(run_dir, mode=0o711)
    job = dict(job, run_dir=run_dir, result=os.path.join(run_dir, "result.json"), uid=slot.uid, cgroups=slot.cgroups,
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
    return Running(job, proc, slot, deadline, time.monotonic())


def kill_job(item: Running) -> None:
    """Kill the worker's process group, then whatever its run's uid and cgroups left."""
    with suppress(OSError):
        os.killpg(item.proc.pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        item.proc.wait(timeout=10)
    item.slot.release()


def collect_job(item: Running, timed_out: bool, rubric: Any) -> Dict[str, Any]:
    """The worker's result (its ``executed`` notebook still in the run folder), or why there is none."""
    if timed_out:
        kill_job(item)
    item.slot.release()  # kills anything the run's uid left behind
    result: Dict[str, Any]
    try:
        with open(item.job["result"]) as f:
            result = json.load(f)
    except (OSError, ValueError):
        tail = ""
        with suppress(OSError, IndexError), open(os.path.join(item.job["run_dir"], "worker.log"), "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 2000))
            tail = f.read().decode(errors="replace").strip().splitlines()[-1]
        notebook_s = item.job["limits"]["notebook_s"] or 0
        why = "the grader stopped this run after {:g} s".format(notebook_s + WORKER_GRACE_S) if timed_out \
            else "the grading process failed (exit status {}){}".format(item.proc.returncode, ": " + tail if tail else "")
        result = failed_result(item.job, "timeout" if timed_out else "grader error", why, rubric)
    result.pop("trace", None)
    result["graded_s"] = round(time.monotonic() - item.started, 3)
    return result


def failed_result(job: Dict[str, Any], status: str, why: str, rubric: Any) -> Dict[str, Any]:
    """The result of a submission whose grading produced nothing: every check scored on ``why``."""
    checks = [c.to_dict() for c in rubric.grade(Evidence(None, {}, {}, status, why, reproduce=job["reproduce"]))]
    return {"student": job["student"], "key": job["key"], "isolation": job["level"], "status": status, "reason": why,
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
        return dict(failed_result(job, "grader error", "on node {}, {}; nothing was run".format(host, why), rubric),
                    host=host)
    workroot = new_workroot()
    item = None
    try:
        item = start_job(job, workroot, 1)
        while item.proc.poll() is None and time.monotonic() <= item.deadline:
            time.sleep(0.1)
        result = collect_job(item, item.proc.poll() is None, rubric)
        executed = result.pop("executed", None)
        if executed and os.path.exists(executed):
            with open(executed, encoding="utf-8") as f:
                result["executed_text"] = f.read()
    finally:
        if item is not None and item.proc.poll() is None:  # the task itself was cancelled
            kill_job(item)
        disk.remove_run_folder(workroot)
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
            result = failed_result(job, "grader error", why, load_rubric(job["rubric"]))
        on_result(job, result)
