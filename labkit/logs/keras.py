"""Keras progress output (TensorFlow on Graphcore IPUs or on GPUs, ``model.fit(verbose=1|2)``).

Each epoch's final progress line (``469/469 [====] - 453s 65ms/step - loss: 0.29 - accuracy: 0.91``)
gives every ``name: value`` pair on it; ``- ETA:`` redraws are skipped; ``Epoch 1/N`` after a
finished epoch list starts the next run. What is read: docs/logs.md (the Keras row).

Checked against hand-written logs in the format Keras prints (tests/logs/cases); no course log of
this kind was available.
"""

from __future__ import annotations

import math
import os
import re
from statistics import median
from typing import Dict, List, Optional

from labkit.divergence import divergence_note, loss_divergence
from labkit.logs.base import NUMBER, LineReader, fill_from_filename, new_run, number

__all__ = ["KerasReader"]

_EPOCH = re.compile(r"^Epoch (\d+)/(\d+)\s*$")
# (A blank may sit between a number and its unit when a wrapped copy was joined back.)
_DONE = re.compile(r"^(\d+)/(\d+) (?:\[[=>.]*\] )?- (\d+(?:\.\d+)?) ?(ms|s|min|h)\b(?: (\d+(?:\.\d+)?) ?(us|ms|s)/step)?(.*)$")
_PAIR = re.compile(r"(\w+): (" + NUMBER + r")(?=\s|$)")
_TIME = re.compile(r"training[ _]time\s*[:=]\s*(" + NUMBER + r")\s*(s|sec|secs|seconds|ms|min)?", re.IGNORECASE)

_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "secs": 1.0, "seconds": 1.0, "min": 60.0, "h": 3600.0}

FIRST_EPOCH_NOTE = ("The first epoch includes graph compilation (XLA/Poplar on an IPU, tracing and autotuning on a "
                    "GPU): compare steady-state epochs, not the first one.")


class _State:
    def __init__(self) -> None:
        self.epochs_total: Optional[int] = None
        self.epoch: Optional[int] = None
        self.rows: List[Dict[str, float]] = []
        self.epoch_ids: List[int] = []
        self.epoch_seconds: List[float] = []
        self.step_times: List[float] = []
        self.steps: Optional[int] = None
        self.training_time: Optional[float] = None
        self.anything = False
        self.header_cut: Optional[int] = None  # the first "Epoch k/N" seen, when earlier epochs had none


class KerasReader(LineReader):
    format = "keras"

    def __init__(self, name: str = "<text>") -> None:
        super().__init__(name)
        self.state = _State()
        self.device: Optional[str] = None

    def feed(self, line: str) -> None:
        if not line:
            return
        if self.device is None:
            lower = line.lower()
            self.device = "ipu" if "ipu" in lower else "gpu" if "gpu" in lower else None
        st = self.state
        if line.startswith("Epoch"):
            m = _EPOCH.match(line)
            if m:
                epoch, total = int(m.group(1)), int(m.group(2))
                if st.rows and st.epoch is None and st.epochs_total is None and epoch == len(st.rows) + 1:
                    # The log starts after its first header (cut off when copied): the epochs
                    # read so far are this run's first ones, not another run.
                    st.header_cut = epoch
                elif st.rows and (epoch <= (st.epoch or 0) or total != st.epochs_total):
                    st = self._close()
                st.epoch, st.epochs_total = epoch, total
                st.anything = True
                return
        if " - " in line and line[:1].isdigit() and "ETA" not in line:
            m = _DONE.match(line)
            if m and m.group(1) == m.group(2):
                st.steps = int(m.group(2))
                st.epoch_ids.append(st.epoch if st.epoch is not None else len(st.rows) + 1)
                st.epoch_seconds.append(float(m.group(3)) * _SECONDS[m.group(4)])
                if m.group(5):
                    st.step_times.append(float(m.group(5)) * _SECONDS[m.group(6)] * 1000.0)
                st.rows.append({k: float(v) for k, v in _PAIR.findall(m.group(7))})
                st.anything = True
                return
        if "time" in line.lower():
            m = _TIME.search(line)
            if m:
                value = number(m.group(1))
                if value is not None:
                    st.training_time = float(value) * _SECONDS.get((m.group(2) or "s").lower(), 1.0)
                    st.anything = True
                    if st.rows:
                        self._close()

    def _close(self) -> _State:
        st = self.state
        self.state = _State()
        if not st.anything:
            return self.state
        hint = os.path.basename(self.name).lower()
        run = new_run("keras/mnist" if "mnist" in hint else "keras/model")
        if self.device:
            run.params["device"] = self.device
        if st.epochs_total is not None:
            run.params["epochs"] = st.epochs_total
        if st.steps is not None:
            run.params["steps_per_epoch"] = st.steps
        fill_from_filename(run, self.name)
        if st.header_cut:
            before = st.header_cut - 1
            run.notes.append("The log starts after its first 'Epoch 1/{}' header (cut off when copied): the {} "
                             "before 'Epoch {}/{}' {} of the same run, not another run.".format(
                                 st.epochs_total, "progress line" if before == 1 else "{} progress lines".format(before),
                                 st.header_cut, st.epochs_total,
                                 "is its epoch 1" if before == 1 else "are its epochs 1 to {}".format(before)))
        for key in dict.fromkeys(key for row in st.rows for key in row):
            xs = [e for e, row in zip(st.epoch_ids, st.rows) if key in row]
            ys = [row[key] for row in st.rows if key in row]
            run.add_series(key, xs, ys, x_label="epoch")
            run.add_metric(key, ys[-1])
        if st.epoch_seconds:
            run.add_series("epoch_time_s", st.epoch_ids, st.epoch_seconds, x_label="epoch")
            run.add_metric("train_time_s", round(sum(st.epoch_seconds), 3), "s")
            if len(st.epoch_seconds) >= 2:
                steady = median(st.epoch_seconds[1:])
                run.add_metric("first_epoch_time", st.epoch_seconds[0], "s")
                run.add_metric("epoch_time", steady, "s")
                run.notes.append(FIRST_EPOCH_NOTE)
        if st.step_times:
            run.add_metric("step_time_ms", st.step_times[-1], "ms")
        if st.training_time is not None:
            run.add_metric("training_time_s", st.training_time, "s")
        losses = [row["loss"] for row in st.rows if "loss" in row]
        reason = loss_divergence(losses)
        if reason in ("loss nan", "loss inf"):
            bad = [x for x in losses if not math.isfinite(x)]
            run.status = "diverged"
            run.notes.append("The loss became {} at epoch {}: the run diverged; its later numbers mean nothing.".format(
                bad[0], st.epoch_ids[[i for i, row in enumerate(st.rows) if "loss" in row][losses.index(bad[0])]]))
        elif reason:
            run.status = "diverged"
            run.notes.append(divergence_note(losses, where="epoch"))
        elif st.epochs_total is not None and st.epoch_ids and st.epoch_ids[-1] >= st.epochs_total:
            run.status = "complete"
        elif st.epochs_total is None and st.rows:
            run.status = "complete"
        else:
            run.notes.append("The log stops at epoch {} of {}: the run is incomplete.".format(
                st.epoch_ids[-1] if st.epoch_ids else 0, st.epochs_total))
        self.runs.append(run)
        return self.state
