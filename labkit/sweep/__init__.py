"""Grids times repeats: run a notebook over many configurations, each several times.

    labkit sweep notebooks/graphcore/mnist.ipynb -p epochs 4,10 -p learning_rate 0.01,0.03 \\
        --repeats 3 --out runs/mnist-lr --workers 2
    labkit sweep NOTEBOOK ... --executor parsl --config docs/parsl/slurm_testbed.py
    labkit results runs/mnist-lr                 # the summary again

Each repeat runs with a different ``seed`` (the notebook's default seed, +1, +2, ...), so
the notebook must declare ``seed``. Every run is executed into its own notebook under
``OUT/runs/``; its row is saved next to it as ``<run>.json``, written atomically once the
run has ended, which is what makes a sweep resumable: started again with the same
arguments it skips runs that have a row and redoes the others. ``OUT/sweep.json`` holds
the arguments; an ``--out`` from a different sweep is refused. Tables and plots are made
by :mod:`labkit.sweep.report`.

Parallel runs never collide: kernels use private sockets (see :mod:`labkit.execute`), and
with GPUs present each worker's kernels see one GPU (``CUDA_VISIBLE_DEVICES``). Each worker's
kernels get ``cores // workers`` threads, and each run's row says whether its timings were
contended (:mod:`labkit.sweep.share`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import queue
import re
import subprocess
import tempfile
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from labkit.sweep import share as sweep_share
from labkit.execute import NotebookParameters, notebook_parameters, run_notebook
from labkit.params import ParameterError

__all__ = ["SweepError", "SweepPlan", "plan", "run_sweep", "is_sweep", "MANIFEST", "execute_task", "load_parsl_config"]

MANIFEST = "sweep.json"
FORMAT = "labkit-sweep/1"
RUNS = "runs"


class SweepError(ValueError):
    """The sweep's arguments are wrong, or its --out belongs to another sweep."""


@dataclass
class SweepPlan:
    """What a sweep runs: the notebook, the grid (typed values), the repeats and their seeds."""

    notebook: str
    grid: Dict[str, List[Any]]
    repeats: int
    seeds: List[int]
    timeout: Optional[float] = None
    notebook_sha256: str = ""
    baseline: Optional[Dict[str, Any]] = None
    baseline_reason: str = ""

    def configurations(self) -> List[Dict[str, Any]]:
        names = list(self.grid)
        return [dict(zip(names, values)) for values in itertools.product(*(self.grid[n] for n in names))]

    def tasks(self, out: str) -> List[Dict[str, Any]]:
        """One task per configuration and seed, in a fixed order (configuration, then seed)."""
        tasks = []
        for config in self.configurations():
            for seed in self.seeds:
                parameters = dict(config, seed=seed)
                key = run_key(parameters)
                tasks.append({
                    "key": key, "notebook": self.notebook, "parameters": parameters,
                    "output": os.path.join(out, RUNS, key + ".ipynb"),
                    "row": os.path.join(out, RUNS, key + ".json"), "timeout": self.timeout,
                })
        return tasks

    def identity(self) -> Dict[str, Any]:
        """What must match for a restart to resume this sweep (workers and timeout may change)."""
        return {"format": FORMAT, "notebook": self.notebook, "notebook_sha256": self.notebook_sha256,
                "grid": self.grid, "repeats": self.repeats, "seeds": self.seeds}

    def manifest(self) -> Dict[str, Any]:
        data = self.identity()
        data.update({"timeout": self.timeout, "baseline": self.baseline, "baseline_reason": self.baseline_reason,
                     "varied": [n for n, v in self.grid.items() if len(v) > 1]})
        return data


def run_key(parameters: Mapping[str, Any]) -> str:
    """A file name for one run: ``epochs=4__learning_rate=0.01__seed=1``."""
    text = "__".join("{}={}".format(k, json.dumps(v) if not isinstance(v, str) else v) for k, v in parameters.items())
    text = re.sub(r"[^A-Za-z0-9._=+-]", "_", text)
    if len(text) > 120:  # long grids: keep a readable head and make it unique with a hash
        text = text[:100] + "__" + hashlib.sha1(text.encode()).hexdigest()[:12]
    return text


def _split_values(text: str) -> List[str]:
    return [v.strip() for v in text.split(",")] if text.strip() else []


def plan(notebook: str, grid_text: Sequence[Tuple[str, str]], repeats: int = 1,
         timeout: Optional[float] = None) -> SweepPlan:
    """Check a sweep's arguments (every value of every parameter) before anything runs."""
    if not os.path.isfile(notebook):
        raise SweepError("{}: no such notebook".format(notebook))
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise SweepError("--repeats {}: must be a whole number >= 1 (each repeat is one run with its own seed)".format(repeats))
    if timeout is not None and timeout <= 0:
        raise SweepError("--timeout {}: must be a positive number of seconds".format(timeout))
    declared = notebook_parameters(notebook)
    if "seed" not in declared.names:
        raise SweepError("{} declares no parameter 'seed', so its repeats cannot differ; add `seed = 0` to its "
                         "parameters cell (and use it). Its parameters:\n{}".format(notebook, declared.describe()))
    problems: List[str] = []
    grid: Dict[str, List[Any]] = {}
    for name, text in grid_text:
        values = _split_values(text)
        if name == "seed":
            problems.append("-p seed {}: seeds are set by --repeats (default seed, +1, +2, ...), "
                            "not by the grid".format(text))
        elif name in grid:
            problems.append("-p {} is given twice; give all its values once, comma-separated".format(name))
        elif not values or any(v == "" for v in values):
            problems.append("-p {} {!r}: an empty value; give one or more values separated by commas, "
                            "e.g. -p {} 1,2".format(name, text, name))
        else:
            typed = []
            for value in values:
                try:
                    typed.append(declared.from_text({name: value})[name])
                except ParameterError as exc:
                    problems.extend("-p {} {}: {}".format(name, text, p) for p in exc.problems)
                    break
            else:
                if len(set(map(json.dumps, typed))) != len(typed):
                    problems.append("-p {} {}: a value is repeated; use --repeats for repeats".format(name, text))
                grid[name] = typed
    if problems:
        raise ParameterError(problems + ["", declared.describe()], declared.spec.name)
    # every configuration as a whole (cross-checks between parameters)
    defaults = declared.defaults()
    base_seed = defaults.get("seed")
    base_seed = base_seed if isinstance(base_seed, int) and not isinstance(base_seed, bool) else 0
    seeds = [base_seed + r for r in range(repeats)]
    result = SweepPlan(os.path.abspath(notebook), grid, repeats, seeds, timeout, _sha256(notebook))
    for config in result.configurations():
        declared.check(dict(config, seed=seeds[-1]))
    result.baseline, result.baseline_reason = _baseline(result, declared)
    return result


def _baseline(sweep: SweepPlan, declared: NotebookParameters) -> Tuple[Dict[str, Any], str]:
    defaults = declared.defaults()
    configurations = sweep.configurations()
    as_defaults = {n: defaults.get(n) for n in sweep.grid}
    for config in configurations:
        if all(_same(config[n], as_defaults[n]) for n in config):
            return config, "the notebook's defaults"
    return configurations[0], "the first configuration (the notebook's defaults are not in the grid)"


def _same(a: Any, b: Any) -> bool:
    """Equal, counting 1 and 1.0 as the same (a float parameter given as an int default)."""
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    return float(a) == float(b) if numbers else a == b


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` so readers see the old file or the new one, never half."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=os.path.basename(path))
    try:
        with os.fdopen(handle, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def is_sweep(path: str) -> bool:
    return os.path.isfile(os.path.join(path, MANIFEST))


def prepare_out(sweep: SweepPlan, out: str) -> None:
    """Create ``out`` for this sweep, or check it belongs to this sweep (resume)."""
    manifest_path = os.path.join(out, MANIFEST)
    if os.path.isfile(manifest_path):
        try:
            with open(manifest_path) as f:
                existing = json.load(f)
        except (OSError, ValueError) as exc:
            raise SweepError("{}: unreadable sweep manifest ({}); choose another --out".format(manifest_path, exc)) from None
        mine = json.loads(json.dumps(sweep.identity()))
        differences = [k for k in mine if existing.get(k) != mine[k]]
        if differences:
            lines = ["  {}: there {}, here {}".format(k, json.dumps(existing.get(k)), json.dumps(mine[k]))
                     for k in differences]
            raise SweepError("--out {} holds a different sweep; it is left untouched. Resume it with its own "
                             "arguments, or choose another --out.\n{}".format(out, "\n".join(lines)))
    elif os.path.isdir(out) and os.listdir(out):
        raise SweepError("--out {} exists and is not a sweep folder (no {}); it is left untouched. "
                         "Choose a new or empty folder.".format(out, MANIFEST))
    os.makedirs(os.path.join(out, RUNS), exist_ok=True)
    write_atomic(manifest_path, json.dumps(sweep.manifest(), indent=1) + "\n")


def execute_task(task: Mapping[str, Any], env: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Run one task and save its row (atomically); returns the row. Used by every executor."""
    from labkit import results

    final = task["output"]
    running = final[: -len(".ipynb")] + ".running.ipynb"
    load_before = sweep_share.load_average()
    outcome = run_notebook(task["notebook"], running, task["parameters"], timeout=task.get("timeout"),
                           env=env, check=False)
    load_after = sweep_share.load_average()
    if os.path.exists(running):
        os.replace(running, final)
    row: Dict[str, Any] = {"run": task["key"]}
    row.update(task["parameters"])
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
            metrics[metric if len(runs) == 1 else "{}.{}".format(name, metric)] = value
            if metric in run.units:
                units[metric if len(runs) == 1 else "{}.{}".format(name, metric)] = run.units[metric]
        if status == "complete" and run.status != "complete":
            status = run.status
            error = error or "the run recorded status {!r}".format(run.status)
    if status == "complete" and not runs:
        status, error = "error", "the notebook recorded no labkit.results.Run"
    row.update(metrics)
    row.update({"status": status, "error": error, "duration": round(outcome.duration, 3),
                "notebook": os.path.join(RUNS, os.path.basename(final)),
                "gpu": (env or {}).get("CUDA_VISIBLE_DEVICES", "")})
    part = sweep_share.recorded_share(env or {})
    contended, why = sweep_share.contention(part, load_before, load_after)
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


def done_tasks(tasks: Iterable[Mapping[str, Any]]) -> List[str]:
    return [t["key"] for t in tasks if os.path.isfile(t["row"])]


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
    threads = sweep_share.share_env(share_workers or workers)  # cores // workers each, set before the kernel imports torch

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
                on_row(_row_of(future, pending.pop(future)))
    finally:
        for future in pending:
            future.cancel()
        pool.shutdown(wait=True)


def _row_of(future: Future, task: Mapping[str, Any]) -> Dict[str, Any]:
    """The task's row; a worker that failed (not the kernel: the worker) gives an unsaved row."""
    try:
        return future.result()
    except Exception as exc:
        row: Dict[str, Any] = {"run": task["key"]}
        row.update(task["parameters"])
        row.update({"status": "error", "error": "worker failed: {}: {}".format(type(exc).__name__, exc),
                    "duration": 0.0, "notebook": os.path.join(RUNS, os.path.basename(task["output"])), "gpu": ""})
        return row  # not saved: the run itself never ended, so a restart runs it again


def run_sweep(sweep: SweepPlan, out: str, workers: int = 1, executor: str = "local",
              parsl_config: Optional[str] = None, gpus: Optional[Sequence[str]] = None,
              retry_failed: bool = False, quiet: bool = False) -> Dict[str, Any]:
    """Run what is left of ``sweep`` into ``out``, then write results.csv, summary.md, plots.

    Returns {"ran": n, "skipped": n, "total": n, "failed": n} about this call (``failed``: runs
    this call made that did not complete) and, about the whole folder whoever ran it (the same
    on a first and a resumed run), {"finished": n, "complete": n, "not_complete": n}.
    """
    from labkit.sweep import report as sweep_report
    from labkit.progress import bar

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise SweepError("--workers {}: must be a whole number >= 1".format(workers))
    if executor not in ("local", "parsl"):
        raise SweepError("--executor {}: must be 'local' or 'parsl'".format(executor))
    if executor == "parsl" and not parsl_config:
        raise SweepError("--executor parsl needs --config FILE, a Python file defining `config` "
                         "(ready ones: docs/parsl/local.py, slurm_testbed.py, polaris_pbs.py)")
    config = load_parsl_config(parsl_config) if executor == "parsl" else None
    prepare_out(sweep, out)
    tasks = sweep.tasks(os.path.abspath(out))
    if retry_failed:
        for task in tasks:
            if os.path.isfile(task["row"]) and _read_row(task["row"]).get("status") != "complete":
                os.unlink(task["row"])
    finished = set(done_tasks(tasks))
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
        sweep_report.write_reports(out)  # also after an interruption: what is done is reported
    result = {"ran": len(todo), "skipped": len(finished), "total": len(tasks), "failed": failed[0]}
    result.update(sweep_report.counts(out))
    return result


def _read_row(path: str) -> Dict[str, Any]:
    with open(path) as f:
        return json.load(f)


# -- Parsl executor: the same tasks, on whatever the Parsl config provides ---------------------

def load_parsl_config(path: Optional[str]):
    """The ``config`` object of a Parsl config file (a Python file)."""
    import importlib.util

    if not path or not os.path.isfile(path):
        raise SweepError("--config {}: no such file; it must be a Python file defining `config`, a parsl Config "
                         "(see docs/parsl/)".format(path))
    try:
        from parsl.config import Config
    except ImportError:
        raise SweepError("--executor parsl needs Parsl: pip install 'parsl>=2023.1' (labkit[cluster])") from None
    spec = importlib.util.spec_from_file_location("labkit_parsl_config", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except Exception as exc:
        raise SweepError("--config {}: it failed to load: {}: {}".format(path, type(exc).__name__, exc)) from None
    config = getattr(module, "config", None)
    if not isinstance(config, Config):
        raise SweepError("--config {}: it must define `config = parsl.config.Config(...)`; found {}".format(
            path, type(config).__name__))
    return config


def _parsl_task(task: Mapping[str, Any]) -> Dict[str, Any]:
    """Runs on a Parsl worker. HighThroughputExecutor(available_accelerators=...) pins the GPU."""
    from labkit.sweep import execute_task

    gpu = os.environ.get("CUDA_VISIBLE_DEVICES")
    return execute_task(task, env={"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None)


@contextlib.contextmanager
def parsl_session(config: Any, out: str) -> Iterator[Any]:
    """Load ``config`` (its logs kept under ``out/parsl``), yield the DataFlowKernel, clean up.

    Shared by ``labkit sweep`` and ``labkit grade --executor parsl``.
    """
    import parsl

    if getattr(config, "run_dir", "runinfo") == "runinfo":  # keep Parsl's logs with the sweep
        config.run_dir = os.path.join(os.path.abspath(out), "parsl")
    dfk = parsl.load(config)
    log_files = _parsl_log_handlers(config.run_dir)
    try:
        yield dfk
    finally:
        dfk.cleanup()
        parsl.clear()
        for logger, handler in log_files:  # Parsl detaches its parsl.log handler without closing it
            logger.removeHandler(handler)
            handler.close()


def run_parsl(tasks: Sequence[Mapping[str, Any]], config: Any, out: str,
              on_row: Callable[[Dict[str, Any]], None]) -> None:
    import parsl
    from concurrent.futures import as_completed

    with parsl_session(config, out) as dfk:
        app = parsl.python_app(_parsl_task, data_flow_kernel=dfk)
        futures = {app(dict(task)): task for task in tasks}
        for future in as_completed(list(futures)):
            on_row(_row_of(future, futures[future]))


def _parsl_log_handlers(run_dir: str) -> List[Tuple[Any, Any]]:
    """(logger, handler) pairs writing files under this sweep's Parsl run directory."""
    import logging

    found = []
    loggers = [logging.getLogger()] + [lg for lg in logging.root.manager.loggerDict.values()
                                       if isinstance(lg, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if os.path.abspath(getattr(handler, "baseFilename", "/")).startswith(os.path.abspath(run_dir)):
                found.append((logger, handler))
    return found
