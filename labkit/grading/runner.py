"""Execute one submission in a sandboxed fresh kernel and grade what that execution recorded.

    python -m labkit.grading.runner JOB.json        # writes the job's result.json

The steps (docs/grading.md, "What happens to one submission"): copy, put the student's outputs
aside, clear them, execute under the sandbox's limits, read the records of *that* execution,
apply the rubric. Outputs typed into the submitted notebook never reach a grade.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import sys
import time
import traceback
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

# jsonschema's optional IRI format checker imports rfc3987_syntax, which compiles a grammar
# for about 4 s on import; notebook validation never uses that format. Every worker pays for
# the import, so it is skipped here (jsonschema then leaves that one format unchecked).
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import nbformat  # noqa: E402
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from labkit import results
from labkit.files import write_atomic
from labkit.grading.sandbox import disk, levels
from labkit.grading.sandbox.slots import cgroup_command, kill_cgroup_processes, kill_uid
from labkit.grading.sandbox.trusted import drop_escapes, record_refusal
from labkit.grading.checks.duplicates import record_fingerprints
from labkit.grading.checks.evidence import Evidence
from labkit.grading.recompute import run_sandboxed
from labkit.grading.checks.rubric import Rubric, load_rubric
from labkit.testbeds.homework.hardware import where_it_ran
from labkit.testbeds.homework.homeworks import is_overview

__all__ = ["run_job"]

_TRUNCATION_NOTE = "[labkit grade: output beyond {} bytes was dropped]\n"
_HIDDEN_TRACEBACK = ("[labkit grade: the kernel reported this error (execute reply status 'error') but no traceback "
                     "was shown: showtraceback, _showtraceback or sys.excepthook was replaced, or the output was hidden]")


class SandboxKernelManager(AsyncKernelManager):
    """A kernel launched as ``<namespace prefix> <launcher limits> python -m ipykernel_launcher``, whatever
    kernelspec the notebook names: a submission cannot choose what runs it."""

    launch_prefix: List[str] = []
    run_uid: Optional[int] = None

    def format_kernel_cmd(self, extra_arguments: Optional[List[str]] = None) -> List[str]:
        return list(self.launch_prefix) + [
            sys.executable, "-m", "ipykernel_launcher", "-f", os.path.realpath(self.connection_file),
            "--HistoryManager.enabled=False",
        ]

    def write_connection_file(self, **kwargs: Any) -> None:
        super().write_connection_file(**kwargs)
        if self.run_uid is not None:  # the kernel reads it after dropping to the run's uid
            os.chown(self.connection_file, self.run_uid, self.run_uid)


class GradingClient(NotebookClient):
    """nbclient that keeps at most ``output_limit`` bytes of outputs (records always kept)."""

    output_limit = 8 << 20
    record_limit = 1 << 20

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # An error is an error however it is displayed: the execute reply's status decides.
        self.on_cell_executed = self._error_from_reply
        self.kept_bytes = 0
        self.record_bytes = 0
        self.dropped_bytes = 0
        self.cells_s = 0.0  # time spent running cells, for the grader's overhead (benchmarks/)
        self._noted_cells: set = set()

    async def async_execute_cell(self, cell: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await super().async_execute_cell(cell, *args, **kwargs)
        except DeadKernelError:
            cell.setdefault("outputs", []).append(nbformat.v4.new_output(
                "error", ename="DeadKernelError", evalue="the kernel died while this cell ran",
                traceback=["[labkit grade: the kernel died while this cell ran (os._exit, a crash, or a limit reached)]"]))
            raise
        finally:
            self.cells_s += time.monotonic() - started

    def _error_from_reply(self, cell: Any, cell_index: int, execute_reply: Optional[Dict[str, Any]]) -> None:
        """Add an error output when the reply says 'error' and the cell shows none (a hidden traceback)."""
        content = (execute_reply or {}).get("content") or {}
        if content.get("status") != "error" or any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return
        cell.outputs.append(nbformat.v4.new_output(
            "error", ename=str(content.get("ename") or "Error")[:200], evalue=str(content.get("evalue") or "")[:300],
            traceback=[_HIDDEN_TRACEBACK]))

    def output(self, outs: List[Any], msg: Dict[str, Any], display_id: Optional[str], cell_index: int) -> Any:
        content = msg.get("content", {})
        data = content.get("data", {}) or {}
        size = len(content.get("text", "") or "") + sum(len(str(v)) for v in data.values())
        if results.SCRAP_MIME in data and self.record_bytes + size <= self.record_limit:
            self.record_bytes += size
            return super().output(outs, msg, display_id, cell_index)
        if self.kept_bytes + size > self.output_limit:
            self.dropped_bytes += size
            if cell_index not in self._noted_cells:
                self._noted_cells.add(cell_index)
                outs.append(nbformat.v4.new_output("stream", name="stderr",
                                                   text=_TRUNCATION_NOTE.format(self.output_limit)))
            return None
        self.kept_bytes += size
        return super().output(outs, msg, display_id, cell_index)


@dataclass
class ExecutionOutcome:
    """How the grader's execution went: ``status`` is ok, error, timeout, kernel died, failed."""

    status: str
    reason: str = ""
    error: Optional[str] = None
    dropped_bytes: int = 0
    cells_s: float = 0.0  # time in cells, set by the execution (benchmarks/grade_throughput.py)


def launch_prefix(level: str, workdir: str, conn_dir: str, hidden: List[str], limits: levels.Limits,
                  uid: Optional[int], cgroups: List[str] = (), readonly: List[str] = (),
                  tcp: bool = False) -> List[str]:
    """cgroups, then the namespace sandbox, then limits, Landlock and the uid switch, then the command.

    Every stage dies with the one before it, the first with this process. Landlock is applied by the
    last stage, inside the namespaces (bubblewrap could not mount under it); ``tcp``: deny TCP there too.
    """
    parent = os.getpid()
    outer = cgroup_command(cgroups, parent, always=(level == "unshare"))
    middle = levels.namespace_prefix(level, workdir, conn_dir, hidden, readonly)
    first = not outer and not middle
    confined = levels.landlock_args(workdir, conn_dir, hidden, readonly, tcp) if levels.uses_landlock(level) else []
    return outer + middle + levels.launcher_command(limits, uid, parent if first else None, confined)


def _first_error(nb: Any) -> Optional[str]:
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                return "cell {}: {}: {}".format(index + 1, out.get("ename", "Error"), str(out.get("evalue", ""))[:300])
    return None


def execute_sandboxed(nb: Any, workdir: str, conn_dir: str, limits: levels.Limits, level: str,
                      uid: Optional[int], hidden: List[str], log_path: str, cgroups: List[str] = (),
                      share: Optional[disk.Share] = None) -> ExecutionOutcome:
    """Execute ``nb`` in place (outputs already cleared) in a sandboxed kernel; a run whose ``share`` holds more
    than its limit is stopped, all its processes killed, and ends as ``disk limit``."""
    import zmq

    km = SandboxKernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(conn_dir, "k"),
                              connection_file=os.path.join(conn_dir, "kernel.json"))
    km.launch_prefix = launch_prefix(level, workdir, conn_dir, hidden, limits, uid, cgroups, tcp=True)
    km.run_uid = uid
    # One huge message (a gigabyte printed at once) is dropped by ZMQ instead of filling our memory.
    km.context.setsockopt(zmq.MAXMSGSIZE, max(limits.output_bytes, 1 << 20) * 4)
    deadline = time.monotonic() + (limits.notebook_s or 1e9)

    def cell_timeout(cell: Any) -> int:
        left = deadline - time.monotonic()
        return int(max(1, min(limits.cell_s or 1e9, left)))

    client = GradingClient(nb, km=km, timeout_func=cell_timeout, allow_errors=True, interrupt_on_timeout=False,
                           startup_timeout=60, kernel_name="python3", record_timing=False,
                           resources={"metadata": {"path": workdir}})
    client.output_limit = limits.output_bytes
    env = levels.kernel_environment(workdir)

    async def run() -> ExecutionOutcome:
        log = open(log_path, "ab")
        try:
            await client.async_execute(env=env, stdout=log, stderr=log)
            return ExecutionOutcome("ok")
        except CellTimeoutError:
            if deadline - time.monotonic() <= 1.5:
                return ExecutionOutcome("timeout", "the notebook ran past its time limit of {:g} s".format(limits.notebook_s))
            return ExecutionOutcome("timeout", "a cell ran past the per-cell time limit of {:g} s".format(limits.cell_s))
        except DeadKernelError:
            return ExecutionOutcome("kernel died", "the kernel died (os._exit, a crash, or a limit reached)")
        except Exception as exc:  # kernel failed to start, or nbclient failed: this run only
            return ExecutionOutcome("failed", "execution failed: {}: {}".format(type(exc).__name__, exc))
        finally:
            with suppress(Exception):  # already dead
                await km.shutdown_kernel(now=True)
            log.close()

    def stop() -> None:  # from the share's thread: the kernel's process group, then what left it
        process = getattr(km.provisioner, "process", None)
        if process is not None:
            with suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
        if uid is not None:
            kill_uid(uid)
        kill_cgroup_processes(cgroups)

    if share is not None:
        share.watch(stop)
    try:
        outcome = asyncio.run(run())
    finally:
        if share is not None:
            share.stop_watching()
    outcome.error = _first_error(nb)
    outcome.dropped_bytes = client.dropped_bytes
    outcome.cells_s = client.cells_s
    if outcome.status == "ok" and outcome.error:
        outcome.status = "error"
        outcome.reason = "a cell raised an error ({})".format(outcome.error)
    if share is not None and share.measure():  # measured once more: a run may end between two looks
        outcome.status, outcome.reason = "disk limit", share.reason()
    return outcome


def _copy_submission(source: str, notebook: str, workdir: str, max_bytes: int, share_bytes: int = 0) -> str:
    """Copy a notebook (or a student folder) into ``workdir``; return the notebook's new path.

    A folder's regular files are sized and copied without following a link; a link is copied as that link,
    never read nor counted (dangling, a loop, out of the folder: what trusted code later reads through one is
    refused with the reason); FIFOs, sockets and devices are left out unopened.
    """
    if not os.path.isdir(source):
        folders, files, links = [], [("", os.lstat(source).st_size)], []
    else:
        folders, files, links = _contents(source)
    total = sum(size for _path, size in files)
    what = "submission" if os.path.isdir(source) else "notebook"
    if total > max_bytes:
        raise ValueError("the {} is {} bytes, over the {} byte limit".format(what, total, max_bytes))
    if share_bytes and total > share_bytes:
        raise ValueError("the {} is {} bytes, more than its disk share of {} bytes (--disk)".format(
            what, total, share_bytes))
    if not os.path.isdir(source):
        return shutil.copy2(source, workdir)  # the copy's path
    for rel in folders:
        os.makedirs(os.path.join(workdir, rel), exist_ok=True)
    for rel, _size in files:
        target = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(source, rel), target, follow_symlinks=False)
    for rel, points_to in links:
        os.makedirs(os.path.dirname(os.path.join(workdir, rel)), exist_ok=True)
        os.symlink(points_to, os.path.join(workdir, rel))
    return os.path.join(workdir, os.path.relpath(notebook, source))


def _contents(folder: str) -> Tuple[List[str], List[Tuple[str, int]], List[Tuple[str, str]]]:
    """Every folder, (path, size) of every regular file and (path, target) of every link in ``folder``, paths
    relative to it; folders through links are not entered (``os.walk`` does not follow them)."""
    folders: List[str] = []
    files: List[Tuple[str, int]] = []
    links: List[Tuple[str, str]] = []
    for top, dirs, names in os.walk(folder):
        for name in dirs + names:
            path = os.path.join(top, name)
            rel = os.path.relpath(path, folder)
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                folders.append(rel)
            elif stat.S_ISREG(info.st_mode):
                files.append((rel, info.st_size))
            elif stat.S_ISLNK(info.st_mode):
                links.append((rel, os.readlink(path)))
    return folders, files, links


def _chown_tree(path: str, uid: Optional[int]) -> None:
    if uid is None:
        return
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), uid, uid)
    os.chown(path, uid, uid)


def run_job(job: Dict[str, Any]) -> Dict[str, Any]:
    """Grade one submission described by ``job`` (see ``labkit.grading.batch``); return the result."""
    limits = levels.Limits(**job["limits"])
    grader_dir = os.path.join(job["run_dir"], "grader")
    os.makedirs(grader_dir, mode=0o700, exist_ok=True)
    # Everything the kernel writes lies in its share: its copy of the submission, its connection files, its log.
    log = os.path.join(grader_dir, "kernel.log")
    share = disk.Share(os.path.join(job["run_dir"], "share"), limits.disk_bytes, log)
    try:
        return _grade(job, share.open(), limits, grader_dir)
    finally:
        share.close()


def _grade(job: Dict[str, Any], share: disk.Share, limits: levels.Limits, grader_dir: str) -> Dict[str, Any]:
    started = time.monotonic()
    run_dir = job["run_dir"]
    workdir, conn_dir = (os.path.join(share.path, name) for name in ("work", "conn"))
    for path in (workdir, conn_dir):
        os.makedirs(path, mode=0o700, exist_ok=True)
    os.makedirs(os.path.join(workdir, ".tmp", "matplotlib"), exist_ok=True)
    rubric: Rubric = load_rubric(job["rubric"])
    uid = job.get("uid")
    result: Dict[str, Any] = {"student": job["student"], "key": job["key"], "isolation": job.get("isolation", job["level"])}

    try:
        if job.get("problem"):
            raise ValueError(job["problem"])
        local_nb = _copy_submission(job["source"], job["notebook"], workdir, limits.submission_bytes,
                                    limits.disk_bytes)
        submitted = nbformat.read(local_nb, as_version=4)
    except Exception as exc:
        outcome = ExecutionOutcome("unreadable", "the submission could not be read: {}".format(str(exc)[:300]))
        evidence = Evidence(None, {}, {}, outcome.status, outcome.reason, reproduce=job.get("reproduce", False))
        return _finish(result, rubric, evidence, job, started, outcome)

    # The student's outputs go aside (grader-only folder) for the reproduce check, then vanish.
    submitted_copy = os.path.join(grader_dir, "submitted.ipynb")
    nbformat.write(submitted, submitted_copy)
    submitted_records = _records(submitted_copy)
    result["record_fingerprints"] = record_fingerprints(submitted_records)
    nb = nbformat.from_dict(json.loads(json.dumps(submitted)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, local_nb)  # the kernel's working copy has no outputs to read either
    _chown_tree(workdir, uid)
    os.chown(conn_dir, uid if uid is not None else -1, uid if uid is not None else -1)

    result["phases"] = {"prepare_s": round(time.monotonic() - started, 3)}
    executing = time.monotonic()
    outcome = execute_sandboxed(nb, workdir, conn_dir, limits, job["level"], uid, job.get("hidden", []),
                                os.path.join(grader_dir, "kernel.log"), job.get("cgroups", []), share)
    result["disk_used_bytes"] = share.peak
    executed = os.path.join(grader_dir, "executed.ipynb")
    nbformat.write(nb, executed)
    fresh = _records(executed)

    # Nothing the student started may still run (rlimits: a process the kernel put in the
    # background) while trusted code reads the folder; then links out of it and FIFOs go.
    if uid is not None:
        kill_uid(uid)
    kill_cgroup_processes(job.get("cgroups", []))
    refusals: Dict[str, Optional[str]] = {}

    def recompute(function: str, params: List[Dict[str, Any]], timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        for p in params:  # before drop_escapes, so a link out is refused as such
            refusals.setdefault(json.dumps(p, sort_keys=True, default=str), record_refusal(p, workdir))
        if "dropped" not in result:
            result["dropped"] = drop_escapes(workdir)[:20]
        why = [refusals[json.dumps(p, sort_keys=True, default=str)] for p in params]
        todo = [p for p, w in zip(params, why) if not w]
        scratch = os.path.join(run_dir, "recompute")  # its own folder and home, outside the submission
        shutil.rmtree(scratch, ignore_errors=True)
        os.makedirs(os.path.join(scratch, ".tmp", "matplotlib"), mode=0o700)
        _chown_tree(scratch, uid)
        prefix = launch_prefix(job["level"], scratch, "", job.get("hidden", []), limits, uid, job.get("cgroups", []),
                               readonly=[workdir])
        answers = iter(run_sandboxed(function, todo, workdir, prefix, limits, timeout=timeout, scratch=scratch,
                                     exclude=[run_dir] + job.get("hidden", [])) if todo else [])
        return [{"error": "refused: " + w} if w else next(answers) for w in why]

    result["phases"]["execute_s"] = round(time.monotonic() - executing, 3)  # kernel start + cells + shutdown
    evidence = Evidence(submitted, submitted_records, fresh, outcome.status, outcome.reason,
                        reproduce=job.get("reproduce", False), recompute=recompute)
    result["executed"] = executed
    return _finish(result, rubric, evidence, job, started, outcome)


def _records(path: str) -> Dict[str, Any]:
    try:
        return results.read(path).records
    except (OSError, ValueError):
        return {}


def _finish(result: Dict[str, Any], rubric: Rubric, evidence: Evidence, job: Dict[str, Any], started: float,
            outcome: ExecutionOutcome) -> Dict[str, Any]:
    result.update(status=outcome.status, reason=outcome.reason, error=outcome.error,
                  output_dropped_bytes=outcome.dropped_bytes)
    if outcome.dropped_bytes:
        result["reason"] = (result["reason"] + "; " if result["reason"] else "") + \
            "{:.0f} MB of output beyond the {:.0f} MB limit was dropped".format(
                outcome.dropped_bytes / 1e6, float(job["limits"].get("output_bytes", 0)) / 1e6)
    grading = time.monotonic()
    result["checks"] = [c.to_dict() for c in rubric.grade(evidence)]  # recomputation included
    result.setdefault("phases", {})["grade_s"] = round(time.monotonic() - grading, 3)
    # Where each graded run ran, for the feedback page and the gradebook's "where" column.
    result["runs"] = [{"name": name[:200], "exercise": str(run.exercise)[:200], "where": where_it_ran(run)}
                      for name, run in evidence.fresh_runs() if not is_overview(run)]
    result["where"] = ", ".join(sorted({r["where"] for r in result["runs"]}))
    result["total"] = round(sum(c["score"] for c in result["checks"]), 3)
    result["max_total"] = round(sum(c["points"] for c in result["checks"] if not c.get("skipped")), 3)
    result["seconds"] = round(time.monotonic() - started, 2)
    result["cells_s"] = round(outcome.cells_s, 3)
    return result


def main() -> int:
    with open(sys.argv[1]) as f:
        job = json.load(f)
    try:
        result = run_job(job)
    except Exception as exc:  # the grader's own failure, reported for this submission only
        result = {"student": job["student"], "key": job["key"], "isolation": job.get("isolation", job["level"]), "status": "grader error",
                  "reason": "{}: {}".format(type(exc).__name__, exc), "trace": traceback.format_exc()[-4000:]}
    write_atomic(job["result"], json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
