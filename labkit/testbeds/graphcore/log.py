"""Graphcore logs (``labkit.logs.read(path, format="graphcore")``): PopTorch MNIST (``mnist_poptorch.py``)
and BERT pre-training (``run_pretraining.py``).

MNIST output is tqdm bars, often glued to each other and to PopTorch warnings; a run starts at an
``srun: job N`` line or at a fresh ``Epochs`` bar after a finished run. What each line becomes:
docs/logs.md (the Graphcore rows).

Verified only against real logs from the course (tests/logs, ../shared/fixtures/testbed-logs);
no Graphcore SDK runs here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from statistics import median
from typing import Dict, List, Optional

from labkit.logs.base import (NUMBER, LineReader, clock_seconds, fill_from_filename, new_run, number,
                              params_from_filename)
from labkit.results import Run
from labkit.testbeds.graphcore.metrics import BERT_METRICS, METRICS
from labkit.testbeds.graphcore.record import judge

__all__ = ["GraphcoreReader"]

_SRUN_JOB = re.compile(r"srun: job (\d+) (?:queued|has been allocated)")
_SRUN_IPUS = re.compile(r"srun\b.*--ipus[= ](\d+)")
# One tqdm bar: "| 3/150 [00:01<02:51" (the rest of the bar varies).
_BAR = re.compile(r"(\d+)/(\d+) \[((?:\d+:)?\d+:\d+)(?:<|\])")
_EPOCHS = re.compile(r"Epochs:\s*\d+%.*?(\d+)/(\d+) \[((?:\d+:)?\d+:\d+)")
# The rate tqdm prints after the clock: "12.31s/it" (seconds per epoch) or "1.23it/s".
_EPOCH_RATE = re.compile(r"\]?,?\s*(" + NUMBER + r")\s*(s/it|it/s)\]")
_COMPILE = re.compile(r"Graph compilation:\s*100%.*?100/100 \[((?:\d+:)?\d+:\d+)")
_ACCURACY = re.compile(r"Accuracy on test set:\s*(" + NUMBER + r")\s*%")
_LOSS = re.compile(r"Loss:\s*(" + NUMBER + r")\s*\|\s*Accuracy:\s*(" + NUMBER + r")\s*%")

_BERT_CONFIG = re.compile(r"(?:Using config:|--config[= ])\s*(\S+)")
_BERT_COMPILED = re.compile(r"Compiled/Loaded model in (" + NUMBER + r") secs")
_BERT_STEP = re.compile(r"Step:\s*(\d+)\s*/\s*(\d+)\s*-.*?total loss:\s*(" + NUMBER + r")")
_BERT_FIELD = re.compile(r"(mlm_loss|nsp_loss|mlm_acc|nsp_acc):\s*(" + NUMBER + r")")
_BERT_THROUGHPUT = re.compile(r"throughput:\s*(" + NUMBER + r")\s*samples/sec")
_BERT_METRIC = re.compile(r"^(global_batch_size|device_iterations|training_steps|replication_factor|"
                          r"gradient_accumulation|micro_batch_size):\s*(\d+)\s*$")
_BERT_TIME = re.compile(r"Training time:\s*(" + NUMBER + r")\s*secs")

FIRST_EPOCH_NOTE = ("The first epoch includes PopTorch graph compilation (the training executable is "
                    "compiled on the first step): compare steady-state epochs, not the first one or the "
                    "average over all epochs.")


def _clock_text(seconds: int) -> str:
    return "{:02d}:{:02d}".format(seconds // 60, seconds % 60) if seconds < 3600 else \
        "{}:{:02d}:{:02d}".format(seconds // 3600, seconds % 3600 // 60, seconds % 60)


@dataclass
class _Mnist:
    """State of one PopTorch MNIST run."""

    run: Run = field(default_factory=lambda: new_run("graphcore/mnist"))
    job: Optional[int] = None
    epochs_total: Optional[int] = None
    epoch_elapsed: Dict[int, int] = field(default_factory=dict)  # epochs done -> elapsed seconds
    epochs_done: bool = False
    train_compile_s: Optional[int] = None
    infer_compile_s: Optional[int] = None
    steps_per_epoch: Optional[int] = None
    test_steps: Optional[int] = None
    losses: List[float] = field(default_factory=list)
    batch_accuracies: List[float] = field(default_factory=list)
    last_pair: Optional[tuple] = None
    accuracy: Optional[float] = None
    seen_anything: bool = False
    seconds_per_epoch: Optional[float] = None  # tqdm's "12.31s/it" on the Epochs bar


class GraphcoreReader(LineReader):
    format = "graphcore"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.mnist: Optional[_Mnist] = None
        self.bert: Optional[Run] = None
        self.bert_steps: List[int] = []
        self.bert_losses: List[float] = []
        self.ipus: Optional[int] = None
        self.pending_job: Optional[int] = None

    def feed(self, line: str) -> None:
        if "srun" in line:
            self._srun(line)
        if self.bert is not None or "run_pretraining" in line or "Compiled/Loaded model" in line \
                or "Using config:" in line:
            self._bert(line)
            return  # a BERT log's compilation bars are not MNIST's
        self._mnist(line)

    def _srun(self, line: str) -> None:
        m = _SRUN_IPUS.search(line)
        if m:
            self.ipus = int(m.group(1))
        m = _SRUN_JOB.search(line)
        if not m:
            return
        job = int(m.group(1))
        self.pending_job = job
        current = self.mnist
        if current is not None and current.job == job:
            return
        if current is not None and current.job is None and not current.seen_anything:
            current.job = job
            return
        # A new srun job: a new run (the previous one ends here, finished or not).
        if self.bert is not None:
            self.bert.params.setdefault("job_id", job)
            return
        self._close_mnist()
        self.mnist = _Mnist()
        self.mnist.job = job

    def _current(self) -> _Mnist:
        if self.mnist is None:
            self.mnist = _Mnist()
        return self.mnist

    def _mnist(self, line: str) -> None:
        if "Epochs" in line:
            m = _EPOCHS.search(line)
            if m:
                done, total, elapsed = int(m.group(1)), int(m.group(2)), clock_seconds(m.group(3))
                cur = self._current()
                if cur.accuracy is not None or (cur.epochs_done and done < total):
                    # A fresh Epochs bar after a finished run: the next run in the file.
                    self._close_mnist()
                    cur = self._current()
                cur.seen_anything = True
                cur.epochs_total = total
                cur.epoch_elapsed[done] = elapsed
                rate = _EPOCH_RATE.search(line, m.end())
                if rate and done > 0:
                    value = number(rate.group(1))
                    if value:
                        cur.seconds_per_epoch = value if rate.group(2) == "s/it" else 1.0 / value
                if done == total:
                    cur.epochs_done = True
                self._inner_bars(cur, line, m.end())  # the inner step bar, glued on
                return
        if "Graph compilation" in line:
            m = _COMPILE.search(line)
            if m:
                cur = self._current()
                cur.seen_anything = True
                # Before the epochs finish it is the training graph, after them inference.
                if cur.epochs_done:
                    cur.infer_compile_s = clock_seconds(m.group(1))
                else:
                    cur.train_compile_s = clock_seconds(m.group(1))
            return
        if "Accuracy on test set" in line:
            m = _ACCURACY.search(line)
            if m:
                cur = self._current()
                cur.accuracy = number(m.group(1))
                cur.seen_anything = True
            return
        if "Loss:" in line:
            m = _LOSS.search(line)
            if m:
                cur = self._current()
                pair = (m.group(1), m.group(2))
                if pair != cur.last_pair:  # tqdm redraws the same postfix several times
                    cur.last_pair = pair
                    cur.losses.append(float(m.group(1)))
                    cur.batch_accuracies.append(float(m.group(2)))
                if self._wants_bar(cur):
                    self._inner_bars(cur, line, m.end())
                return
        cur = self.mnist
        if cur is not None and cur.epochs_total is not None and self._wants_bar(cur) and "/" in line:
            self._inner_bars(cur, line, 0)

    @staticmethod
    def _wants_bar(cur: _Mnist) -> bool:
        # Step counts come from the first inner bars seen; later redraws add nothing.
        return cur.test_steps is None if cur.epochs_done else cur.steps_per_epoch is None

    @staticmethod
    def _inner_bars(cur: _Mnist, line: str, start: int) -> None:
        """The step counts of the tqdm bars in ``line`` from ``start``: an epoch's, or the test pass's."""
        for bar in _BAR.finditer(line, start):
            total = int(bar.group(2))
            if total == cur.epochs_total or total == 100 and cur.steps_per_epoch != 100:
                continue  # the Epochs bar itself, or a Graph compilation bar fragment
            if not cur.epochs_done:
                cur.steps_per_epoch = total
            elif cur.test_steps is None:
                cur.test_steps = total

    def _close_mnist(self) -> None:
        cur = self.mnist
        self.mnist = None
        if cur is None or not cur.seen_anything:
            return
        run = cur.run
        for key, value in (("job_id", cur.job), ("ipus", self.ipus), ("epochs", cur.epochs_total),
                           ("steps_per_epoch", cur.steps_per_epoch), ("test_steps", cur.test_steps)):
            if value is not None:
                run.params[key] = value
        for key, value in params_from_filename(self.name).items():
            if key in run.params and run.params[key] != value:
                run.notes.append("The file name suggests {}={} but the log shows {}={}; the log wins.".format(
                    key, value, key, run.params[key]))
        fill_from_filename(run, self.name)
        for key, value in (("test_accuracy", cur.accuracy), ("train_compile_time", cur.train_compile_s),
                           ("test_compile_time", cur.infer_compile_s)):
            if value is not None:
                METRICS.add(run, key, value)
        self._epoch_times(cur)
        if cur.losses:
            steps = list(range(1, len(cur.losses) + 1))
            run.add_series("loss", steps, cur.losses, x_label="logged step")
            run.add_series("batch_accuracy", steps, cur.batch_accuracies, x_label="logged step")
            METRICS.add(run, "final_batch_loss", cur.losses[-1])
        # Status: complete when it ran to the end; diverged only by the one rule (labkit.divergence),
        # never for a low accuracy alone (record.judge notes a near-chance run instead).
        if cur.epochs_done and cur.accuracy is not None:
            run.status = "complete"
        else:
            missing = []
            if cur.epochs_total is None:
                missing.append("no Epochs progress bar")
            elif not cur.epochs_done:
                missing.append("the Epochs bar never reached {0}/{0}".format(cur.epochs_total))
            if cur.accuracy is None:
                missing.append("no 'Accuracy on test set' line")
            if cur.epochs_done and cur.accuracy is None and not cur.losses and cur.train_compile_s is None:
                run.notes.append("Only the Epochs progress bar was given: it tells how long training took, not how "
                                 "well the model learned (that is the 'Accuracy on test set' line).")
            else:
                run.notes.append("The log is cut short: {}.".format("; ".join(missing)))
        judge(run, learning_rate=run.params.get("learning_rate"), losses=cur.losses, where="logged step")
        if cur.train_compile_s == 0 and cur.epochs_total:
            run.notes.append("Graph compilation shows [00:00]: the executable was most likely loaded from PopTorch's "
                             "executable cache, so this run's first epoch is not slowed by compilation as a fresh "
                             "run's is; compare it with runs that compiled with care.")
        self.runs.append(run)

    def _epoch_times(self, cur: _Mnist) -> None:
        run = cur.run
        done = sorted(k for k in cur.epoch_elapsed if k > 0)
        if not done:
            return
        last = done[-1]
        total_s = cur.epoch_elapsed[last]
        METRICS.add(run, "total_train_time", total_s)
        by_clock = round(total_s / last, 3)
        if cur.seconds_per_epoch is not None and abs(cur.seconds_per_epoch - by_clock) <= 1.0 / last + 0.01 * by_clock:
            # tqdm's s/it has 4 significant digits; its mm:ss clock has 1 s steps. Take the precise one.
            METRICS.add(run, "mean_epoch_time", cur.seconds_per_epoch)
            run.notes.append("mean_epoch_time {} s is tqdm's s/it figure on the Epochs bar, the most precise time the "
                             "log prints (the elapsed clock {} / {} epochs gives {} s, to 1 s steps).".format(
                                 cur.seconds_per_epoch, _clock_text(total_s), last, by_clock))
        else:
            METRICS.add(run, "mean_epoch_time", by_clock)
            run.notes.append("mean_epoch_time {} s is the elapsed clock {} / {} epochs{}.".format(
                by_clock, _clock_text(total_s), last,
                " (tqdm's s/it, {} s, is a moving average of the last epochs and disagrees, so it was not used)".format(
                    cur.seconds_per_epoch) if cur.seconds_per_epoch is not None else ""))
        # Per-epoch times where consecutive epochs were drawn (tqdm clocks have 1 s steps).
        xs = [k for previous, k in zip([0] + done, done) if k == previous + 1]
        ys = [cur.epoch_elapsed[k] - cur.epoch_elapsed.get(k - 1, 0) for k in xs]
        if xs:
            run.add_series("epoch_time", xs, ys, x_label="epoch")
        if xs and xs[0] == 1 and len(xs) >= 3:
            steady = median(ys[1:])
            METRICS.add(run, "first_epoch_time", ys[0])
            METRICS.add(run, "epoch_time", steady)
            if steady > 0:
                METRICS.add(run, "first_epoch_ratio", round(ys[0] / steady, 2))
            if cur.train_compile_s:
                run.notes.append("Here the first epoch took {} s = about {} s of steady training + {} s of graph "
                                 "compilation.".format(ys[0], steady, cur.train_compile_s))
        if last > 1 and cur.train_compile_s != 0:
            run.notes.append(FIRST_EPOCH_NOTE)

    def _bert(self, line: str) -> None:
        if self.bert is None:
            self.bert = new_run("graphcore/bert")
        run = self.bert
        config, compiled = _BERT_CONFIG.search(line), _BERT_COMPILED.search(line)
        step, training_time = _BERT_STEP.search(line), _BERT_TIME.search(line)
        metric = _BERT_METRIC.match(line)
        if config:
            run.params["config"] = config.group(1)
        elif compiled:
            BERT_METRICS.add(run, "compile_s", number(compiled.group(1)))
        elif step:
            step_number, loss = int(step.group(1)), number(step.group(3))
            if not self.bert_steps or step_number != self.bert_steps[-1]:
                self.bert_steps.append(step_number)
                self.bert_losses.append(loss)
            else:
                self.bert_losses[-1] = loss  # tqdm redraws a step's bar
            BERT_METRICS.add(run, "last_step", step_number)
            BERT_METRICS.add(run, "total_loss", loss)
            for name, value in _BERT_FIELD.findall(line):
                BERT_METRICS.add(run, name, number(value))
            throughput = _BERT_THROUGHPUT.search(line)
            if throughput:
                BERT_METRICS.add(run, "throughput", number(throughput.group(1)))
        elif metric:
            run.params[metric.group(1)] = int(metric.group(2))
            if metric.group(1) == "global_batch_size":
                run.params["batch_size"] = int(metric.group(2))
        elif training_time:
            BERT_METRICS.add(run, "training_time_s", number(training_time.group(1)))

    def _close_bert(self) -> None:
        run = self.bert
        self.bert = None
        if run is None or (not run.metrics and not run.params):
            return
        if self.ipus is not None:
            run.params["ipus"] = self.ipus
        if self.pending_job is not None:
            run.params.setdefault("job_id", self.pending_job)
        if self.bert_steps:
            run.add_series("loss", self.bert_steps, self.bert_losses)
        if "training_time_s" in run.metrics:
            run.status = "complete"
        else:
            run.notes.append("No 'Training time' line: the log is cut short or training failed.")
        judge(run, losses=self.bert_losses, where="logged step")  # no test_accuracy: only the divergence rule
        if "compile_s" in run.metrics:
            run.notes.append("'Compiled/Loaded model in {} secs' is compilation (or loading from the cache), "
                             "not training; the throughput and 'Training time' exclude it.".format(run.metrics["compile_s"]))
        self.runs.append(run)

    def finish(self) -> List[Run]:
        self._close_mnist()
        self._close_bert()
        return self.runs
