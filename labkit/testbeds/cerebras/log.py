"""Cerebras modelzoo logs: CS-2 ``python run.py CSX ...`` (releases 2.1-2.3) and CS-3 ``cszoo fit`` (2.6),
read by ``labkit.logs.read(path, format="cerebras")``.

What is read, and where one pasted log ends and the next begins: docs/logs.md (the Cerebras row
and "Pasted text"). When a run closes, :func:`add_phases` gives the phase metrics from the time stamps
and :func:`add_run_notes` what a reader of the numbers must know beside them.

Verified only against real logs from the course; no Cerebras stack runs here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Dict, List, Optional, Tuple

from labkit.divergence import divergence_note, loss_divergence
from labkit.logs.base import NUMBER, LineReader, new_run, number, parse_stamp, stamp_text
from labkit.metrics import Metric, MetricTable
from labkit.results import Run

__all__ = ["CerebrasReader", "LOG_METRICS", "on_cerebras_system"]

#: The log reader's metrics, in the order the tables list them.
LOG_METRICS: Tuple[Metric, ...] = (
    Metric("global_rate", "samples/s", "the modelzoo's GlobalRate at the last logged step: samples per second "
                                       "averaged since the first step", timing=True),
    Metric("last_rate", "samples/s", "the modelzoo's Rate at the last logged step: over the last interval only",
           timing=True),
    Metric("min_rate", "samples/s", "the lowest Rate logged", timing=True),
    Metric("max_rate", "samples/s", "the highest Rate logged", timing=True),
    Metric("samples_per_s", "samples/s", "samples / train_seconds of the 'Processed' line", timing=True),
    Metric("samples", "samples", "samples trained on, from 'Processed N (training) sample(s) in T seconds'"),
    Metric("train_seconds", "s", "seconds the 'Processed' line gives; when they exceed the steps' own span (CS-3 "
                                 "logs: set-up and checkpoint saves), a note says so", timing=True),
    Metric("steps", "", "training steps run (the last step logged)"),
    Metric("final_loss", "", "training loss at the last logged step"),
    Metric("compile_estimated_rate", "samples/s", "the compiler's own estimate of the run's speed ('Compile estimated "
                                                  "performance: N samples/sec', a fresh compile only): a prediction, "
                                                  "shown beside the measured GlobalRate", timing=True),
    Metric("compile_s", "s", "seconds the compile job took, cluster queue excluded (absent when the compile was "
                             "cached and no compile time was measured)", timing=True),
    Metric("compile_queue_s", "s", "seconds the compile job waited in the cluster's queue", timing=True),
    Metric("compile_cached", "", "True when the compile reused earlier artifacts (short, no floorplan search)"),
    Metric("execute_queue_s", "s", "seconds the execute job waited in the cluster's queue", timing=True),
    Metric("setup_s", "s", "seconds from the program's start to the run's start (log time stamps)", timing=True),
    Metric("staging_s", "s", "seconds the appliance spent staging (weights, data workers) before the first step, "
                             "from the log's time stamps", timing=True),
    Metric("checkpoint_s", "s", "seconds spent saving checkpoints (log time stamps); never counted as training",
           timing=True),
    Metric("run_wall_s", "s", "seconds from the run's start to its end (log time stamps)", timing=True),
    Metric("wall_s", "s", "seconds between the log's first and last time stamps, queues included", timing=True),
)

_TABLE = MetricTable(("the Cerebras log reader",), *LOG_METRICS)

_BATCH = re.compile(r"Effective batch size is (\d+)")
_TRAIN = re.compile(r"\| Train Device=([^,]+), Step=(\d+), Loss=(" + NUMBER + r"), Rate=(" + NUMBER +
                    r") samples/sec, GlobalRate=(" + NUMBER + r") samples/sec")
_PROCESSED = re.compile(r"Processed (\d+) (training )?sample\(s\) in (" + NUMBER + r") seconds")
_JOB_ID = re.compile(r"(compile|execute) job id: (wsjob-[\w-]+)")
_NEW_JOB = re.compile(r"Initiating a new (compile|execute) wsjob")
_JOB_ID_26 = re.compile(r"Job id: (wsjob-[\w-]+)(?:, workflow id: (wflow-[\w-]+))?")
_HASH = re.compile(r"Compile hash is: (\S+)")
_CACHED = re.compile(r"Found existing cached compile with hash: \"?([\w-]+)")
_VERSIONS = re.compile(r"job image version (\S+) is inconsistent with cluster server version (\S+?),")
# 2.6 on the Fall 2025 cluster: the client's and the server's semantic versions.
_SEMANTIC = re.compile(r"client semantic version:? (\S+?),? (?:is inconsistent with )?"
                       r"cluster server semantic version:? ([^\s,']+)")
# What the timeline lines tell of the environment: the compile hash, and a version mismatch's two versions.
_ENVIRONMENT = ((_HASH, ("compile_hash",)), (_CACHED, ("compile_hash",)),
                (_VERSIONS, ("job_image_version", "cluster_server_version")),
                (_SEMANTIC, ("client_semantic_version", "cluster_server_semantic_version")))
_ESTIMATE = re.compile(r"Compile estimated performance: (" + NUMBER + r") samples/sec")
# A Markdown label above a pasted log: "#### batch_size: 128", "**Batch size = 256**", "bs=64", a heading
# that names it anywhere ("### Run 2 (batch size 64)"); never a sentence or a warning that mentions one.
_LABEL = re.compile(r"^(?:#+.*?|[\W_]*(?:<summary>)?[\W_]*)\b(?:batch[ _-]?size|bs)\b\W{0,3}(?:is |of )?\**\s*(\d+)\b",
                    re.IGNORECASE)
_FENCE = ("```", "~~~")
_SEQUENCE = re.compile(r"\bmax_sequence_length\b\W{1,3}(\d+)")
_CHECKPOINT = re.compile(r"Saved checkpoint (?:at global step: \d+|(\S+\.mdl))")
_PARAMS = re.compile(r"--params[= ](\S+)")
_MODE = re.compile(r"--mode[= ](\w+)")

# Lines that mark a phase of the run; only those need their time stamp parsed.
_TIMELINE_WORDS = re.compile(r"Compiling the model|[jJ]ob id:|Poll ingress|Ingress is ready|Compile hash|Exploring floorplans|"
                             r"Gradient accumulation trying|Compile was successful|Programming Cerebras|Preparing to execute|"
                             r"Beginning appliance run|Sav(?:ed|ing) checkpoint| ERROR|Traceback|Initiating a new|"
                             r"Found existing cached compile|InconsistentVersion|Appliance staging is complete|"
                             r"Compile estimated performance|Trainer Fit Summary|semantic version")

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
        _TABLE.add(run, "samples_per_s", round(per_s, 2))
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
        _TABLE.add(run, "compile_queue_s", queued)
        _TABLE.add(run, "compile_s", round(total - queued, 3))
        if not st.compile_search and total - queued < 120:
            _TABLE.add(run, "compile_cached", True)
            run.notes.append("The compile took {:.0f} s with no floorplan search: the compile artifacts were "
                             "reused from an earlier identical compile.".format(total - queued))
    elif st.cached_compile:
        _TABLE.add(run, "compile_cached", True)
    if "execute" in st.queue_s:
        _TABLE.add(run, "execute_queue_s", st.queue_s["execute"])
    setup = _seconds(marks, "program_start", "run_start")
    if setup is not None:
        _TABLE.add(run, "setup_s", setup)
    staging = _seconds(marks, "staging_start", "staging_end")
    if staging is not None:
        _TABLE.add(run, "staging_s", round(staging, 3))
    if st.checkpoints and st.checkpoint_s > 0:
        _TABLE.add(run, "checkpoint_s", round(st.checkpoint_s, 3))
    end = marks.get("completed") or parse_stamp(st.last_step)
    if "run_start" in marks and end is not None:
        _TABLE.add(run, "run_wall_s", (end - marks["run_start"]).total_seconds())
    first, last = parse_stamp(st.first), parse_stamp(st.last)
    if first is not None and last is not None and last > first:  # one time stamp is no duration
        _TABLE.add(run, "wall_s", (last - first).total_seconds())
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
    if seconds and span is not None and span > 0 and seconds > span * _OVERHEAD_FACTOR + _OVERHEAD_MIN_S:
        return seconds - span
    return None


def on_cerebras_system(device: Optional[str]) -> bool:
    """Whether a Train line's ``Device=`` names a Cerebras system: ``CSX`` (2.x), ``xla:0`` (older
    releases); a log that names no device is taken as the testbed's. The modelzoo's CPU and GPU
    backends print the torch device (``cpu``, ``cuda:0``: ``trainer.backend.device`` in
    trainer/loggers/progress.py)."""
    return device is None or device.upper() == "CSX" or device.startswith("xla")


def _and(items: List[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def add_run_notes(st: LogState, model: Optional[str]) -> None:
    """What the phase metrics alone do not say: cached compile, overheads in 'Processed', versions, the batch size,
    the compiler's estimate, sequence length."""
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
    estimate = metrics.get("compile_estimated_rate")
    if estimate and "global_rate" in metrics:
        off = (metrics["global_rate"] - estimate) / estimate * 100
        run.notes.append("The compiler estimated {} samples/s for this run and the measured GlobalRate is {} "
                         "samples/s, {:.1f}% {} the estimate (the compiler says it may be 10-25% off).".format(
                             estimate, metrics["global_rate"], abs(off), "below" if off < 0 else "above"))
    elif estimate:
        run.notes.append("The compiler estimated {} samples/s for this run, but no step was logged, so no measured "
                         "rate stands beside it.".format(estimate))
    if model == "llama2_7b" and run.params.get("sequence_length") and "global_rate" in metrics:
        # the LLaMA table (llama2_7b/metrics.py) holds this metric, in this unit
        run.add_metric("tokens_per_s", round(metrics["global_rate"] * run.params["sequence_length"], 1), "tokens/s")
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


_MODELS = (("gptj", "gptj"), ("gpt-j", "gptj"), ("gpt2", "gpt2"), ("gpt-2", "gpt2"), ("bert_large", "bert_large"),
           ("bert-large", "bert_large"), ("bertforpretraining", "bert_large"), ("bert", "bert_large"),
           ("llama", "llama2_7b"))


def _model_of(text: str) -> Optional[str]:
    lower = text.lower()
    for hint, model in _MODELS:
        if hint in lower:
            return model
    return None


def _ended(st: LogState) -> bool:
    """The run printed its end: 'Training completed', its 'Processed' line, or a failure."""
    return st.completed or "samples" in st.run.metrics or bool(st.failed)


def _has_run(st: LogState) -> bool:
    return bool(st.steps) or _ended(st)


class CerebrasReader(LineReader):
    format = "cerebras"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.state = LogState()

    def feed(self, line: str) -> None:
        if not line:
            return
        st = self.state
        if "Train Device=" in line:  # most lines of a long run: handled first, cheaply
            raw_stamp = line[:23] if line[:4].isdigit() else stamp_text(line)
            m = _TRAIN.search(line)
            if m:
                device, step, loss, rate, global_rate = m.groups()
                if st.steps and int(step) < st.steps[-1]:  # the step count went back: the next log's run
                    st = self._close()
                st.device = device
                st.cszoo_lines = st.cszoo_lines or "LoopTimeRemaining=" in line
                st.steps.append(int(step))
                st.losses.append(float(loss))
                st.rates.append(float(rate))
                st.global_rates.append(float(global_rate))
                st.started = True
                if raw_stamp is not None:
                    st.last = st.last_step = raw_stamp
                    st.first = st.first or raw_stamp
            return
        raw_stamp = stamp_text(line)
        if raw_stamp is None and self._markdown(line):
            return
        if ("Trainer Fit Summary" in line and (_has_run(st) or "compile_start" in st.marks)) or \
                ("Compiling the model" in line and _has_run(st)):
            st = self._close()  # a new `cszoo fit` begins: several logs pasted into one file
        if "run.py" in line:
            if st.started and (st.completed or st.steps):
                st = self._close()
            m = _PARAMS.search(line)
            if m:
                st.run.params["params_file"] = m.group(1)
                st.model = st.model or _model_of(m.group(1))
            m = _MODE.search(line)
            if m:
                st.run.params["mode"] = m.group(1)
            st.started = True
        m = _BATCH.search(line) if "Effective batch" in line else None
        if m:
            if st.completed or st.steps:
                st = self._close()
            st.run.params["batch_size"] = int(m.group(1))
            st.started = True
        if raw_stamp is not None:
            st.first = st.first or raw_stamp
            st.last = raw_stamp
            st.started = True
        if "Processed" in line:
            m = _PROCESSED.search(line)
            if m:
                _TABLE.add(st.run, "samples", int(m.group(1)))
                _TABLE.add(st.run, "train_seconds", number(m.group(3)))
                st.processed_training = bool(m.group(2))
                st.started = True  # a summary line pasted on its own is a run too
                st.summary_only = not st.steps and not st.run.params
        if "max_sequence_length" in line:
            m = _SEQUENCE.search(line)
            if m:
                st.run.params["sequence_length"] = int(m.group(1))
        if "Training completed successfully" in line:
            st.completed = True
            stamp = parse_stamp(raw_stamp)
            if stamp:
                st.marks["completed"] = stamp
        if st.model is None and ("model_dir" in line or "Initializing module" in line or "params_" in line):
            st.model = _model_of(line)
        if raw_stamp is None:
            if line.startswith("Traceback") or re.match(r"\w*(Error|Exception):", line):
                st.failed = st.failed or line[:200]
            return
        if "Train Device" in line or not _TIMELINE_WORDS.search(line):
            return
        stamp = parse_stamp(raw_stamp)
        if stamp is not None:
            self._timeline(st, line, stamp)

    def _markdown(self, line: str) -> bool:
        """A Markdown fence or a batch-size label between pasted logs: True when the line is used up."""
        st = self.state
        if line.startswith(_FENCE):
            if _ended(st):  # the fence closes a finished log; the next block is another run
                self._close()
            return True
        m = _LABEL.search(line) if len(line) <= 120 and "Effective batch" not in line else None
        if m is None:
            return False
        if _has_run(st):
            self._close()
        self.state.label = (int(m.group(1)), re.sub(r"<[^>]*>|[#*]", "", line).strip())
        return True

    def _timeline(self, st: LogState, line: str, stamp: datetime) -> None:
        marks, env = st.marks, st.run.environment
        for pattern, keys in _ENVIRONMENT:
            m = pattern.search(line)
            if m:
                env.update(zip(keys, m.groups()))
        if "Compiling the model" in line:
            marks.setdefault("compile_start", stamp)
        elif "Initiating a new" in line:
            m = _NEW_JOB.search(line)
            if m:
                st.job_kind = m.group(1)
        elif "job id:" in line:
            m = _JOB_ID.search(line)
            if m:
                self._job(st, m.group(1), m.group(2), stamp)
        elif "Job id:" in line:
            m = _JOB_ID_26.search(line)
            if m:
                self._job(st, st.job_kind or "execute", m.group(1), stamp)
                if m.group(2):
                    env["{}_workflow_id".format(st.job_kind or "execute")] = m.group(2)
        elif "Poll ingress status" in line or "Ingress is ready" in line:
            kind = st.job_kind
            still_queued = "Queueing" in line or "queueing" in line  # still waiting for the cluster
            if kind and kind in st.queue_start and kind not in st.queue_s and not still_queued:
                st.queue_s[kind] = (stamp - st.queue_start[kind]).total_seconds()
        elif "Found existing cached compile" in line:
            st.cached_compile = True
        elif "Exploring floorplans" in line or "Gradient accumulation trying" in line:
            st.compile_search = True
        elif "Compile was successful" in line:
            marks["compile_end"] = stamp
        elif "Programming Cerebras" in line or "Preparing to execute" in line:
            marks.setdefault("program_start", stamp)
            if "Preparing to execute" in line:
                marks.setdefault("staging_start", stamp)
        elif "Appliance staging is complete" in line:
            marks["staging_end"] = stamp
        elif "Beginning appliance run" in line:
            marks["run_start"] = stamp
        elif "Saving checkpoint" in line:
            st.saving_since = stamp
        elif "Saved checkpoint" in line:
            m = _CHECKPOINT.search(line)
            if m:
                st.checkpoints.append(m.group(1) or line.split("INFO:")[-1].strip())
            if st.saving_since is not None:
                st.checkpoint_s += (stamp - st.saving_since).total_seconds()
                st.saving_since = None
        elif "InconsistentVersion" in line:
            st.inconsistent_version = True
        elif "Compile hash is" in line or "semantic version" in line:
            pass  # read into the environment above
        elif "Compile estimated performance" in line:
            m = _ESTIMATE.search(line)
            if m:
                _TABLE.add(st.run, "compile_estimated_rate", number(m.group(1)))
        elif " ERROR" in line or "Traceback" in line:
            st.failed = st.failed or line[:200]

    @staticmethod
    def _job(st: LogState, kind: str, job_id: str, stamp: datetime) -> None:
        st.run.environment["{}_job_id".format(kind)] = job_id
        st.job_kind = kind
        st.queue_start[kind] = stamp

    def _close(self) -> LogState:
        st = self.state
        self.state = LogState()
        if not st.started:
            return self.state
        run = st.run
        model = st.model or _model_of(" ".join(str(v) for v in run.params.values()))
        if model is None:
            model = _model_of(self.name.rsplit("/", 1)[-1])
            if model is not None:
                run.notes.append("The model ({}) is read from the file name; the log does not name it.".format(model))
        if model is None and st.cszoo_lines:
            # A cszoo run that stopped before its first checkpoint names no model; the course's only
            # CS-3 training exercise is LLaMA-2-7B, and its measured rate must still count.
            model = "llama2_7b"
            run.notes.append("The log does not name its model; its 2.6 Train lines (cszoo fit) are read "
                             "as the course's LLaMA-2-7B.")
        run.exercise = "cerebras/{}".format(model or "unknown")
        if st.device:
            run.environment["device"] = st.device
        if st.steps:
            run.add_series("loss", st.steps, st.losses)
            run.add_series("rate", st.steps, st.rates)
            run.add_series("global_rate", st.steps, st.global_rates)
            _TABLE.add(run, "steps", st.steps[-1])
            _TABLE.add(run, "final_loss", st.losses[-1])
            _TABLE.add(run, "global_rate", st.global_rates[-1])
            _TABLE.add(run, "last_rate", st.rates[-1])
            if len(st.rates) > 1:
                _TABLE.add(run, "min_rate", min(st.rates))
                _TABLE.add(run, "max_rate", max(st.rates))
        if st.checkpoints:
            run.environment["checkpoints"] = st.checkpoints
        add_phases(st)
        add_run_notes(st, model)
        if loss_divergence(st.losses):
            run.status = "diverged"
            run.notes.append(divergence_note(st.losses, where="logged step"))
        elif st.completed:
            run.status = "complete"
        elif st.summary_only and not st.failed:
            # The modelzoo prints this line only once training has ended.
            run.status = "complete"
            run.notes.append("Only the summary line was given: the model, batch size, steps and loss are not in it, "
                             "so this run cannot be checked beyond its samples/s.")
        elif st.failed:
            run.status = "failed"
            run.notes.append("The run failed: {}".format(st.failed))
        else:
            run.notes.append("No 'Training completed' line: the log is cut short (or the run was stopped); "
                             "the numbers are those of the last step logged.")
        if len(st.steps) == 1 and run.status != "complete":
            run.notes.append("The run stopped after its first report (step {}): its measured GlobalRate of {} samples/s "
                             "still counts, as an incomplete run's, but rests on that one report.".format(
                                 st.steps[0], st.global_rates[0]))
        if st.steps and len(st.rates) > 1 and max(st.rates) > 1.5 * min(st.rates):
            run.notes.append("The per-interval Rate swings from {} to {} samples/s{}: quote the GlobalRate, the average "
                             "since the start.".format(min(st.rates), max(st.rates),
                                                       " (a shared cluster)" if on_cerebras_system(st.device) else ""))
        self.runs.append(run)
        return self.state

    def finish(self) -> List[Run]:
        first_of: Dict[str, int] = {}
        for index, run in enumerate(super().finish(), 1):
            job = run.environment.get("execute_job_id")
            if job in first_of:
                run.notes.append("This is run {} again (the same execute wsjob, {}): one run pasted twice, not a "
                                 "second measurement.".format(first_of[job], job))
            elif job:
                first_of[job] = index
        return self.runs
