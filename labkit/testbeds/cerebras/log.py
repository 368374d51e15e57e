"""Cerebras modelzoo logs (``python run.py CSX --mode train --params configs/...yaml``).

    import labkit.logs
    report = labkit.logs.read("bert_log_bs_1024.txt", format="cerebras")

What is read: ``Effective batch size is N``, each
``| Train Device=CSX, Step=100, Loss=9.5, Rate=974.00 samples/sec, GlobalRate=974.00 samples/sec``
(older releases print ``Device=xla:0``) as series, ``Processed N sample(s) in T seconds``
(on its own line or after ``Training completed successfully!``), the compile and execute wsjob
ids, the compile hash, saved checkpoints, and from the time stamps how long the run waited in
the cluster queue, compiled, programmed the wafer and trained. A new ``Effective batch size``
after a finished run starts the next run in the file.

Verified only against real logs from the course; no Cerebras stack runs here.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Dict, List, Optional

from labkit.divergence import divergence_note, loss_divergence
from labkit.logs.base import NUMBER, LineReader, new_run, number, parse_stamp, stamp_text
from labkit.results import Run
from labkit.testbeds.cerebras.log_metrics import add_log_metric

__all__ = ["CerebrasReader"]

_BATCH = re.compile(r"Effective batch size is (\d+)")
_TRAIN = re.compile(r"\| Train Device=([^,]+), Step=(\d+), Loss=(" + NUMBER + r"), Rate=(" + NUMBER +
                    r") samples/sec, GlobalRate=(" + NUMBER + r") samples/sec")
_PROCESSED = re.compile(r"Processed (\d+) sample\(s\) in (" + NUMBER + r") seconds")
_JOB_ID = re.compile(r"(compile|execute) job id: (wsjob-[\w-]+)")
_HASH = re.compile(r"Compile hash is: (\S+)")
_CHECKPOINT = re.compile(r"Saved checkpoint (?:at global step: \d+|(\S+\.mdl))")
_PARAMS = re.compile(r"--params[= ](\S+)")
_MODE = re.compile(r"--mode[= ](\w+)")

# Lines that mark a phase of the run; only those need their time stamp parsed.
_TIMELINE_WORDS = re.compile(r"Compiling the model|job id:|Poll ingress|Ingress is ready|Compile hash|Exploring floorplans|"
                             r"Gradient accumulation trying|Compile was successful|Programming Cerebras|Preparing to execute|"
                             r"Beginning appliance run|Saved checkpoint| ERROR|Traceback")

_MODELS = (("gptj", "gptj"), ("gpt-j", "gptj"), ("gpt2", "gpt2"), ("gpt-2", "gpt2"), ("bert_large", "bert_large"),
           ("bert-large", "bert_large"), ("bertforpretraining", "bert_large"), ("bert", "bert_large"),
           ("llama", "llama2_7b"))


def _model_of(text: str) -> Optional[str]:
    lower = text.lower()
    for hint, model in _MODELS:
        if hint in lower:
            return model
    return None


class _State:
    def __init__(self) -> None:
        self.run = new_run("cerebras/unknown")
        self.model: Optional[str] = None
        self.first: Optional[str] = None  # time stamps as text, parsed when the run closes
        self.last: Optional[str] = None
        self.last_step: Optional[str] = None
        self.marks: Dict[str, datetime] = {}
        self.queue_start: Dict[str, datetime] = {}
        self.queue_s: Dict[str, float] = {}
        self.job_kind: Optional[str] = None  # the wsjob whose ingress is being polled
        self.steps: List[int] = []
        self.losses: List[float] = []
        self.rates: List[float] = []
        self.global_rates: List[float] = []
        self.checkpoints: List[str] = []
        self.completed = False
        self.failed: Optional[str] = None
        self.device: Optional[str] = None
        self.compile_search = False
        self.started = False
        self.summary_only = False  # only the "Processed N sample(s) in T seconds." line was given


class CerebrasReader(LineReader):
    format = "cerebras"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.state = _State()

    def feed(self, line: str) -> None:
        if not line:
            return
        st = self.state
        if "Train Device=" in line:  # most lines of a long run: handled first, cheaply
            raw_stamp = line[:23] if line[:4].isdigit() else stamp_text(line)
            m = _TRAIN.search(line)
            if m:
                device, step, loss, rate, global_rate = m.groups()
                st.device = device
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
        if "run.py" in line:
            if st.started and (st.completed or st.steps):
                self._close()
                st = self.state
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
                self._close()
                st = self.state
            st.run.params["batch_size"] = int(m.group(1))
            st.started = True
        if raw_stamp is not None:
            if st.first is None:
                st.first = raw_stamp
            st.last = raw_stamp
            st.started = True
        if "Processed" in line:
            m = _PROCESSED.search(line)
            if m:
                add_log_metric(st.run, "samples", int(m.group(1)))
                add_log_metric(st.run, "train_seconds", number(m.group(2)))
                st.started = True  # a summary line pasted on its own is a run too
                st.summary_only = not st.steps and not st.run.params
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

    def _timeline(self, st: _State, line: str, stamp: datetime) -> None:
        marks = st.marks
        if "Compiling the model" in line:
            marks.setdefault("compile_start", stamp)
        elif "job id:" in line:
            m = _JOB_ID.search(line)
            if m:
                kind = m.group(1)
                st.run.environment["{}_job_id".format(kind)] = m.group(2)
                st.job_kind = kind
                st.queue_start[kind] = stamp
        elif "Poll ingress status" in line or "Ingress is ready" in line:
            kind = st.job_kind
            if kind and kind in st.queue_start and kind not in st.queue_s:
                if "Queueing" in line or "queueing" in line:
                    pass  # still waiting for the cluster
                else:
                    st.queue_s[kind] = (stamp - st.queue_start[kind]).total_seconds()
        elif "Compile hash is" in line:
            m = _HASH.search(line)
            if m:
                st.run.environment["compile_hash"] = m.group(1)
        elif "Exploring floorplans" in line or "Gradient accumulation trying" in line:
            st.compile_search = True
        elif "Compile was successful" in line:
            marks["compile_end"] = stamp
        elif "Programming Cerebras" in line or "Preparing to execute" in line:
            marks.setdefault("program_start", stamp)
        elif "Beginning appliance run" in line:
            marks["run_start"] = stamp
        elif "Saved checkpoint" in line:
            m = _CHECKPOINT.search(line)
            if m:
                st.checkpoints.append(m.group(1) or line.split("INFO:")[-1].strip())
        elif " ERROR" in line or "Traceback" in line:
            st.failed = st.failed or line[:200]

    def _close(self) -> None:
        st = self.state
        self.state = _State()
        if not st.started:
            return
        run = st.run
        model = st.model or _model_of(" ".join(str(v) for v in run.params.values()))
        if model is None:
            model = _model_of(self.name.rsplit("/", 1)[-1])
            if model is not None:
                run.notes.append("The model ({}) is read from the file name; the log does not name it.".format(model))
        run.exercise = "cerebras/{}".format(model or "unknown")
        if st.device:
            run.environment["device"] = st.device
        if st.steps:
            run.add_series("loss", st.steps, st.losses)
            run.add_series("rate", st.steps, st.rates)
            run.add_series("global_rate", st.steps, st.global_rates)
            add_log_metric(run, "steps", st.steps[-1])
            add_log_metric(run, "final_loss", st.losses[-1])
            add_log_metric(run, "global_rate", st.global_rates[-1])
            add_log_metric(run, "last_rate", st.rates[-1])
            if len(st.rates) > 1:
                add_log_metric(run, "min_rate", min(st.rates))
                add_log_metric(run, "max_rate", max(st.rates))
        if "samples" in run.metrics and run.metrics.get("train_seconds"):
            per_s = run.metrics["samples"] / run.metrics["train_seconds"]
            add_log_metric(run, "samples_per_s", round(per_s, 2))
            run.notes.append(
                "Processed {} samples in {} s: samples/s = {} / {} = {:.1f}. {} s is the whole training time, not "
                "the time per sample; more samples in more seconds is not a slowdown. Compare runs by samples/s "
                "({:.1f} overall here{}), not by seconds.".format(
                    run.metrics["samples"], run.metrics["train_seconds"], run.metrics["samples"],
                    run.metrics["train_seconds"], per_s, run.metrics["train_seconds"], per_s,
                    "; last GlobalRate {} samples/s".format(run.metrics["global_rate"]) if "global_rate" in run.metrics
                    else ""))
        if st.checkpoints:
            run.environment["checkpoints"] = st.checkpoints
        self._phases(st)
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
        if st.steps and len(st.rates) > 1 and max(st.rates) > 1.5 * min(st.rates):
            run.notes.append("The per-interval Rate swings from {} to {} samples/s (a shared cluster): quote the "
                             "GlobalRate, the average since the start.".format(min(st.rates), max(st.rates)))
        self.runs.append(run)

    def _phases(self, st: _State) -> None:
        run, marks = st.run, st.marks
        if "compile_start" in marks and "compile_end" in marks:
            total = (marks["compile_end"] - marks["compile_start"]).total_seconds()
            queued = st.queue_s.get("compile", 0.0)
            add_log_metric(run, "compile_queue_s", queued)
            add_log_metric(run, "compile_s", round(total - queued, 3))
            if not st.compile_search and total - queued < 120:
                add_log_metric(run, "compile_cached", True)
                run.notes.append("The compile took {:.0f} s with no floorplan search: the compile artifacts were "
                                 "reused from an earlier identical compile.".format(total - queued))
        if "execute" in st.queue_s:
            add_log_metric(run, "execute_queue_s", st.queue_s["execute"])
        if "program_start" in marks and "run_start" in marks:
            add_log_metric(run, "setup_s", (marks["run_start"] - marks["program_start"]).total_seconds())
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

    def finish(self) -> List[Run]:
        self._close()
        return self.runs
