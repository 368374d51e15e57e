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
import math
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

from labkit.files import NotAFile, regular_file, write_atomic
from labkit.grading.sandbox import disk, levels, slots
from labkit.grading.reports.class_page import class_data, class_html
from labkit.grading.checks.duplicates import file_fingerprints, find_duplicates, gradebook_note, handout_hashes
from labkit.grading.checks.duplicates import groups as duplicate_groups
from labkit.grading.checks.evidence import Evidence
from labkit.grading.reports.gradebook import (LMS_FORMATS, canvas_csv, class_summary, feedback_html,
                                              summary_markdown, write_gradebook)
from labkit.grading.checks.rubric import load_rubric
from labkit.grading.sandbox.trusted import python_command

__all__ = ["Submission", "find_submissions", "skipped_entries", "grade_class", "STATE_VERSION", "Running",
           "WORKER_GRACE_S", "new_workroot", "start_job", "collect_job", "kill_job", "failed_result", "run_parsl"]

STATE_VERSION = 1


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name).strip(".") or "student"


@dataclass
class Submission:
    student: str
    source: str  # the notebook, or the student's folder
    notebook: str  # the notebook to execute ("" when none was found)
    problem: str = ""


def _not_a_file(path: str) -> str:
    """Why the notebook at ``path`` cannot be graded without following or opening it ('' when it can)."""
    if os.path.islink(path):
        return "{} is a symbolic link; links are never followed: hand in the file itself".format(
            os.path.basename(path))
    try:
        regular_file(path, os.path.basename(path))
    except NotAFile as exc:  # a FIFO, socket or device: a read could block for ever
        return "{} is {}; it was not opened".format(os.path.basename(path), str(exc).rsplit(": is ", 1)[-1])
    return ""


def _special(mode: int) -> bool:
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def find_submissions(folder: str, preferred: Optional[str] = None) -> List[Submission]:
    """``folder/<student>.ipynb`` or ``folder/<student>/<notebook>.ipynb`` (one per student).

    A link, FIFO, socket or device in ``folder`` is a submission that cannot be graded: its row says
    why, and it is neither followed nor opened. Names that start with "." are hidden files (a
    Jupyter ``.ipynb_checkpoints``, a ``.DS_Store``), never submissions: :func:`skipped_entries` lists them."""
    if not os.path.isdir(folder):
        raise FileNotFoundError("SUBMISSIONS: {} is not a folder of notebooks or of student folders".format(folder))
    found: List[Submission] = []
    for entry in sorted(os.listdir(folder)):
        path = os.path.join(folder, entry)
        if entry.startswith("."):
            continue
        mode = os.lstat(path).st_mode
        stem = entry[:-len(".ipynb")] if entry.endswith(".ipynb") else entry
        if stat.S_ISLNK(mode) and (entry.endswith(".ipynb") or os.path.isdir(path)) or _special(mode):
            found.append(Submission(_safe_name(stem), path, "", _not_a_file(path)))
        elif stat.S_ISREG(mode) and entry.endswith(".ipynb"):
            found.append(Submission(_safe_name(stem), path, path))
        elif stat.S_ISDIR(mode):
            notebooks = sorted(f for f in os.listdir(path) if f.endswith(".ipynb") and not f.startswith("."))
            if preferred in notebooks:
                notebooks = [preferred]
            if len(notebooks) == 1:
                notebook = os.path.join(path, notebooks[0])
                found.append(Submission(_safe_name(entry), path, notebook, _not_a_file(notebook)))
                if found[-1].problem:
                    found[-1].notebook = ""
            else:
                problem = "no notebook in the folder" if not notebooks else \
                    "several notebooks ({}); expected one".format(", ".join(notebooks))
                found.append(Submission(_safe_name(entry), path, "", problem))
    names = [s.student for s in found]
    for name in set(n for n in names if names.count(n) > 1):
        raise ValueError("SUBMISSIONS: two submissions are both named '{}' (a notebook and a folder?)".format(name))
    return found


def skipped_entries(folder: str) -> Dict[str, List[str]]:
    """What :func:`find_submissions` leaves out of ``folder``, by why: hidden names (starting with "."),
    and files or links that are neither a notebook nor a student's folder (a ``README.md``)."""
    skipped: Dict[str, List[str]] = {"hidden": [], "not a notebook or a folder": []}
    names = set(s.source for s in find_submissions(folder))
    for entry in sorted(os.listdir(folder)):
        if entry.startswith("."):
            skipped["hidden"].append(entry)
        elif os.path.join(folder, entry) not in names:
            skipped["not a notebook or a folder"].append(entry)
    return {why: entries for why, entries in skipped.items() if entries}


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


def _rubric_key(rubric_path: str, template_path: Optional[str]) -> str:
    digest = hashlib.sha256()
    for path in (rubric_path, template_path):
        if path:
            _hash_files(digest, path)
    return digest.hexdigest()


class _State:
    """``DIR/.labkit-grade/state.json``: student -> last result; written atomically."""

    def __init__(self, out_dir: str):
        self.folder = os.path.join(out_dir, ".labkit-grade")
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self.path = os.path.join(self.folder, "state.json")
        self.results: Dict[str, Dict[str, Any]] = {}
        if not os.path.lexists(self.path):
            return
        # The state holds students graded by earlier runs that this run's SUBMISSIONS may not name:
        # one it cannot read is refused, never replaced by this run's students alone.
        try:
            if not os.path.isfile(self.path) or os.path.islink(self.path):
                raise ValueError("not a regular file")
            with open(self.path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("version") != STATE_VERSION or \
                    not isinstance(data.get("results"), dict):
                raise ValueError("not a version {} grading state".format(STATE_VERSION))
        except (OSError, ValueError) as exc:
            raise RuntimeError("--out: {} is not a grading state labkit can read ({}); nothing was graded: move it "
                               "aside to grade the class again from nothing".format(self.path, exc)) from None
        self.results = {n: r for n, r in data["results"].items() if isinstance(r, dict)}

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


def _check_numbers(workers: int, limits: levels.Limits) -> None:
    """Refuse a number no grading could use (NaN, infinite, negative) before anything runs."""
    most = slots.UID_RANGE[1] - slots.UID_RANGE[0] + 1  # a private uid per concurrent run
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= most:
        raise ValueError("workers: must be a whole number from 1 to {}, got {!r}".format(most, workers))
    for name, value in limits.to_dict().items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or
                                  not math.isfinite(value) or value < 0):
            raise ValueError("limits.{}: must be a finite number >= 0 (0 or None: no limit), got {!r}".format(
                name, value))


def _check_folders(submissions: str, out_dir: str) -> None:
    """Refuse an ``--out`` that is a file, or that shares a folder with SUBMISSIONS (its gradebook and
    feedback would be graded as students at the next run, or the next run would grade itself)."""
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError("--out {}: is a file, not a folder; give a folder for the gradebook and feedback".format(
            out_dir))
    subs, out = os.path.realpath(submissions), os.path.realpath(out_dir)
    common = os.path.commonpath([subs, out])
    if common in (subs, out):
        where = "is SUBMISSIONS {} itself" if subs == out else "is inside SUBMISSIONS {}" if common == subs \
            else "holds SUBMISSIONS {}"
        raise ValueError("--out {}: {} (links followed); give an output folder apart from the submissions (the "
                         "next run would grade the grades as students)".format(out_dir, where.format(submissions)))


def grade_class(submissions: str, rubric_path: str, out_dir: str, workers: int = 1,
                limits: Optional[levels.Limits] = None, reproduce: bool = False, level: Optional[str] = None,
                progress: Optional[Callable[[Dict[str, Any]], None]] = None, only: Optional[Sequence[str]] = None,
                lms: Optional[str] = None, assignment: Optional[str] = None, executor: str = "local",
                parsl_config: Optional[str] = None, allow_unconfined: bool = False,
                tell: Optional[Callable[[str], None]] = None) -> Dict[str, Dict[str, Any]]:
    """Grade every submission not yet graded with this rubric; return student -> result.

    The options are ``labkit grade``'s (docs/grading.md). Students graded into ``out_dir`` earlier whom
    SUBMISSIONS does not name are kept: the gradebook and the reports cover all of them, and ``tell``
    (when given) hears which, and what SUBMISSIONS holds that is no submission. Fails closed: where no level
    here keeps a submission inside its folder, ``RuntimeError`` before any notebook runs, unless
    ``allow_unconfined``; an ``out_dir`` that cannot be written, ``RuntimeError`` before any notebook runs.
    """
    limits = limits or levels.Limits()
    _check_numbers(workers, limits)
    _check_folders(submissions, out_dir)
    rubric = load_rubric(rubric_path)  # a bad rubric stops here, before any notebook runs
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
    lock_fd = -1
    try:  # every write before the first notebook runs: a folder that takes none stops here
        for sub_dir in ("feedback", "executed"):  # makes out_dir too
            os.makedirs(os.path.join(out_dir, sub_dir), exist_ok=True)
        state = _State(out_dir)
        lock_fd = state.lock()
        options = {"limits": limits.to_dict(), "reproduce": reproduce, "level": level}
        keys = {s.student: submission_key(s, rubric_path, rubric.template_path, options) for s in subs}
        rubric_key = _rubric_key(rubric_path, rubric.template_path)
        # A finished result is kept while its key matches; a grader error is no grade, so it is graded again.
        if only:
            pending = [s for s in subs if s.student in set(only)]
        else:
            pending = [s for s in subs if state.results.get(s.student, {}).get("key") != keys[s.student]
                       or state.results[s.student].get("status") == "grader error"]
        hidden = [os.path.abspath(submissions), os.path.abspath(out_dir), os.path.abspath(rubric_path)]
        handout = handout_hashes(os.path.dirname(rubric.template_path) if rubric.template_path else None)
        outputs = _Outputs(out_dir, rubric, lms, assignment)
        outputs.write(state)
    except OSError as exc:
        if lock_fd >= 0:
            os.close(lock_fd)
        raise RuntimeError("--out {}: cannot write there ({}: {}); nothing was graded".format(
            out_dir, exc.strerror or type(exc).__name__, exc.filename or out_dir)) from None
    if tell is not None:
        _tell_what_is_kept(tell, submissions, set(keys), state, rubric_key)

    def finished(job: Dict[str, Any], result: Dict[str, Any]) -> None:
        if not job["problem"] and os.path.exists(job["source"]):
            result["fingerprints"] = file_fingerprints(job["source"], handout)
        result["rubric_key"] = rubric_key  # tells a kept result graded with another rubric
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


def _names(names: List[str]) -> str:
    return ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")


def _tell_what_is_kept(tell: Callable[[str], None], submissions: str, names: set, state: _State,
                       rubric_key: str) -> None:
    kept = sorted(n for n in state.results if n not in names)
    if kept:
        tell("kept {} student{} graded earlier into this folder and not in {}: {}".format(
            len(kept), "" if len(kept) == 1 else "s", submissions, _names(kept)))
    other = [n for n in kept if state.results[n].get("rubric_key", rubric_key) != rubric_key]
    if other:
        tell("{} of them {} graded with another rubric (or its template): grade their submissions again to "
             "grade the class alike: {}".format(len(other), "was" if len(other) == 1 else "were", _names(other)))
    for why, entries in skipped_entries(submissions).items():
        rule = " (hidden files such as .ipynb_checkpoints are never submissions)" if why == "hidden" else ""
        tell("not graded in {}, {}{}: {}".format(submissions, "names that start with '.'" if why == "hidden"
                                                  else why, rule, _names(entries)))


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

    def __init__(self, out_dir: str, rubric: Any, lms: Optional[str], assignment: Optional[str]):
        self.out_dir = out_dir
        self.rubric = rubric
        self.lms = lms
        self.assignment = assignment or rubric.title
        self.flags: Dict[str, List[str]] = {}
        self.runs_read: Dict[Any, Any] = {}  # each student's recorded runs, read once per grading
        # the rubric as the class page reads it, here and in `labkit class DIR`
        write_atomic(os.path.join(out_dir, ".labkit-grade", "rubric.json"),
                     json.dumps({"title": rubric.title, "checks": list(rubric.names)}))

    def write(self, state: _State, new: Optional[Dict[str, Any]] = None) -> None:
        done = list(state.results.values())  # the class: this run's students and those kept from earlier runs
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
