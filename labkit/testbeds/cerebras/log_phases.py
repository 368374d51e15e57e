"""A modelzoo run's phases, from its log's time stamps: queue, compile, staging, training, checkpoints.

:class:`LogState` is what :class:`labkit.testbeds.cerebras.log.CerebrasReader` has read of the run in
progress; when the run closes, :func:`add_phases` gives the phase metrics and :func:`add_run_notes`
what a reader of the numbers must know beside them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Dict, List, Optional, Tuple

from labkit.logs.base import new_run, parse_stamp
from labkit.testbeds.cerebras.log_metrics import TOKENS_PER_S_UNIT, add_log_metric

__all__ = ["LogState", "add_phases", "add_run_notes"]

# A 'Processed' time this much longer than the steps' own span holds more than training.
_OVERHEAD_FACTOR = 1.05
_OVERHEAD_MIN_S = 30.0


class LogState:
    """What has been read of one run so far (time stamps kept as text, parsed when the run closes)."""

    def __init__(self) -> None:
        self.run = new_run("cerebras/unknown")
        self.model: Optional[str] = None
        self.first: Optional[str] = None
        self.last: Optional[str] = None
        self.last_step: Optional[str] = None
        self.marks: Dict[str, datetime] = {}
        self.queue_start: Dict[str, datetime] = {}
        self.queue_s: Dict[str, float] = {}
        self.job_kind: Optional[str] = None  # the wsjob being started or polled
        self.steps: List[int] = []
        self.losses: List[float] = []
        self.rates: List[float] = []
        self.global_rates: List[float] = []
        self.checkpoints: List[str] = []
        self.saving_since: Optional[datetime] = None  # a checkpoint save under way
        self.checkpoint_s = 0.0
        self.completed = False
        self.failed: Optional[str] = None
        self.device: Optional[str] = None
        self.compile_search = False
        self.cached_compile = False  # 2.6: "Found existing cached compile"
        self.inconsistent_version = False
        self.processed_training = False  # 2.6: "Processed N training sample(s)"
        self.cszoo_lines = False  # 2.6 Train lines (LoopTimeRemaining=...): a CS-3 `cszoo fit` run
        self.started = False
        self.summary_only = False  # only the "Processed N sample(s) in T seconds." line was given
        self.label: Optional[Tuple[int, str]] = None  # (batch size, the Markdown label above the pasted log)


def _seconds(marks: Dict[str, datetime], start: str, end: str) -> Optional[float]:
    if start in marks and end in marks:
        return (marks[end] - marks[start]).total_seconds()
    return None


def add_phases(st: LogState) -> None:
    """The samples/s of the 'Processed' line and the phase metrics of the closing run."""
    run, marks, metrics = st.run, st.marks, st.run.metrics
    if "samples" in metrics and metrics.get("train_seconds"):
        per_s = metrics["samples"] / metrics["train_seconds"]
        add_log_metric(run, "samples_per_s", round(per_s, 2))
        if _overhead_s(st) is None:
            run.notes.append(
                "Processed {} samples in {} s: samples/s = {} / {} = {:.1f}. {} s is the whole training time, not "
                "the time per sample; more samples in more seconds is not a slowdown. Compare runs by samples/s "
                "({:.1f} overall here{}), not by seconds.".format(
                    metrics["samples"], metrics["train_seconds"], metrics["samples"], metrics["train_seconds"], per_s,
                    metrics["train_seconds"], per_s,
                    "; last GlobalRate {} samples/s".format(metrics["global_rate"]) if "global_rate" in metrics
                    else ""))
    if "compile_start" in marks and "compile_end" in marks:
        total = (marks["compile_end"] - marks["compile_start"]).total_seconds()
        queued = st.queue_s.get("compile", 0.0)
        add_log_metric(run, "compile_queue_s", queued)
        add_log_metric(run, "compile_s", round(total - queued, 3))
        if not st.compile_search and total - queued < 120:
            add_log_metric(run, "compile_cached", True)
            run.notes.append("The compile took {:.0f} s with no floorplan search: the compile artifacts were "
                             "reused from an earlier identical compile.".format(total - queued))
    elif st.cached_compile:
        add_log_metric(run, "compile_cached", True)
    if "execute" in st.queue_s:
        add_log_metric(run, "execute_queue_s", st.queue_s["execute"])
    setup = _seconds(marks, "program_start", "run_start")
    if setup is not None:
        add_log_metric(run, "setup_s", setup)
    staging = _seconds(marks, "staging_start", "staging_end")
    if staging is not None:
        add_log_metric(run, "staging_s", round(staging, 3))
    if st.checkpoints and st.checkpoint_s > 0:
        add_log_metric(run, "checkpoint_s", round(st.checkpoint_s, 3))
    end = marks.get("completed") or parse_stamp(st.last_step)
    if "run_start" in marks and end is not None:
        add_log_metric(run, "run_wall_s", (end - marks["run_start"]).total_seconds())
    first, last = parse_stamp(st.first), parse_stamp(st.last)
    if first is not None and last is not None and last > first:  # one time stamp is no duration
        add_log_metric(run, "wall_s", (last - first).total_seconds())
    queued = sum(st.queue_s.values())
    if queued >= 30:
        run.notes.append("{:.0f} s of this log's wall time was spent queueing for the cluster ({}), not "
                         "compiling or training: queue time is not run time.".format(
                             queued, ", ".join("{} job {:.0f} s".format(k, v) for k, v in st.queue_s.items())))


def _step_span_s(st: LogState) -> Optional[float]:
    """Seconds from 'Beginning appliance run' to the last step logged: the training itself."""
    last_step = parse_stamp(st.last_step)
    if "run_start" not in st.marks or last_step is None:
        return None
    return (last_step - st.marks["run_start"]).total_seconds()


def _overhead_s(st: LogState) -> Optional[float]:
    """How much longer the 'Processed' time is than the steps' span (None when it is not, or unknown)."""
    seconds, span = st.run.metrics.get("train_seconds"), _step_span_s(st)
    if not seconds or span is None or span <= 0:
        return None
    if seconds > span * _OVERHEAD_FACTOR + _OVERHEAD_MIN_S:
        return seconds - span
    return None


def _and(items: List[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def add_run_notes(st: LogState, model: Optional[str]) -> None:
    """What the phase metrics alone do not say: cached compile, overheads in 'Processed', versions, sequence length."""
    run, metrics = st.run, st.run.metrics
    if st.cached_compile and "compile_s" not in metrics:
        run.notes.append("The compile was cached (hash {}): nothing was compiled, so no compile time was measured "
                         "and none is recorded (not 0 s). A fresh compile of the same model takes minutes to an hour "
                         "before the first step: compare a cached run's wall time with a fresh one's only as "
                         "such.".format(run.environment.get("compile_hash", "unknown")))
    overhead = _overhead_s(st)
    if overhead is not None:
        span = _step_span_s(st)
        outside = []
        if metrics.get("compile_s") and metrics["compile_s"] <= overhead:  # 2.6 counts a fresh compile in 'Processed'
            outside.append("{:.0f} s compiling".format(metrics["compile_s"]))
        if "staging_s" in metrics:
            outside.append("{:.0f} s of appliance staging".format(metrics["staging_s"]))
        if "checkpoint_s" in metrics:
            outside.append("{:.0f} s saving checkpoints".format(metrics["checkpoint_s"]))
        run.notes.append(
            "Processed {} {}samples in {} s, but the steps ran {:.0f} s (from 'Beginning appliance run' to the last "
            "step): the other {:.0f} s are not training{}. samples / seconds = {:.2f} samples/s understates the "
            "training speed; compare runs by GlobalRate ({} samples/s), and never by total seconds (more samples in "
            "more seconds is not a slowdown).".format(
                metrics["samples"], "training " if st.processed_training else "", metrics["train_seconds"], span,
                overhead, " (outside the steps the log shows " + _and(outside) + ")" if outside else "",
                metrics["samples"] / metrics["train_seconds"], metrics.get("global_rate", "unknown")))
    elif "checkpoint_s" in metrics and st.processed_training:
        run.notes.append("Saving checkpoints took {:.0f} s; that time is not training and is not in the "
                         "rates.".format(metrics["checkpoint_s"]))
    if st.inconsistent_version:
        env = run.environment
        if "job_image_version" in env or "client_semantic_version" not in env:
            which = "the job image version {} differs from the cluster server version {}".format(
                env.get("job_image_version", "?"), env.get("cluster_server_version", "?"))
        else:
            which = "the client's semantic version {} differs from the cluster server's {}".format(
                env["client_semantic_version"], env.get("cluster_server_semantic_version", "?"))
        run.notes.append("The cluster warned (InconsistentVersion) that {}: the job may fail or behave differently; "
                         "numbers from such a run are worth checking against a run with matching "
                         "versions.".format(which))
    _batch_size(st)
    _estimate_note(st)
    if model == "llama2_7b" and run.params.get("sequence_length") and "global_rate" in metrics:
        run.add_metric("tokens_per_s", round(metrics["global_rate"] * run.params["sequence_length"], 1),
                       TOKENS_PER_S_UNIT)
    elif model == "llama2_7b" and "sequence_length" not in run.params and st.steps:
        run.notes.append("The log does not give the sequence length, so tokens/s (GlobalRate x sequence length) "
                         "cannot be read from it alone; llama2_7b.read_log(path, config) takes it from the config.")


def _batch_size(st: LogState) -> None:
    """The batch size: printed, or the 'Processed' samples / steps, or else the Markdown label above the log."""
    run, metrics = st.run, st.run.metrics
    if "batch_size" not in run.params and st.steps and metrics.get("samples") and metrics["samples"] % st.steps[-1] == 0:
        run.params["batch_size"] = metrics["samples"] // st.steps[-1]
        run.notes.append("The log does not print the batch size: {} is the samples of the 'Processed' line divided by "
                         "the {} steps.".format(run.params["batch_size"], st.steps[-1]))
    if st.label is None:
        return
    labelled, text = st.label
    if "batch_size" not in run.params:
        run.params["batch_size"] = labelled
        run.notes.append("The log itself does not give its batch size: {} is read from the label '{}' above it in the "
                         "file.".format(labelled, text))
    elif run.params["batch_size"] != labelled:
        run.notes.append("The label '{}' above this log says batch size {}, but the log's own numbers give {}: the "
                         "log's is used.".format(text, labelled, run.params["batch_size"]))


def _estimate_note(st: LogState) -> None:
    """The compiler's estimate of samples/s beside the measured GlobalRate."""
    metrics = st.run.metrics
    estimate = metrics.get("compile_estimated_rate")
    if not estimate:
        return
    if "global_rate" in metrics:
        off = (metrics["global_rate"] - estimate) / estimate * 100
        st.run.notes.append("The compiler estimated {} samples/s for this run and the measured GlobalRate is {} "
                            "samples/s, {:.1f}% {} the estimate (the compiler says it may be 10-25% off).".format(
                                estimate, metrics["global_rate"], abs(off), "below" if off < 0 else "above"))
    else:
        st.run.notes.append("The compiler estimated {} samples/s for this run, but no step was logged, so no measured "
                            "rate stands beside it.".format(estimate))
