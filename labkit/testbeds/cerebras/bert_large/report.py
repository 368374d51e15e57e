"""The exercise's tables and plots: one run's metrics and loss curve (:func:`show`), and the homework's
batch-size comparison (:func:`comparison_table`, shown by :func:`format_table` and :func:`plot_comparison`).
"""

from __future__ import annotations

import os
from typing import Any, List, Optional, Sequence

from labkit.interrupts import show_step
from labkit import display, plots
from labkit.results import Run
from labkit.testbeds.cerebras.bert_large.metrics import METRICS, standardize

__all__ = ["comparison_table", "plot_comparison", "metrics_table", "plot_loss", "show", "format_table",
           "TABLE_UNITS", "SHOWN_METRICS"]


def comparison_table(runs: Sequence[Run]):
    """Throughput and time per sample against batch size, one row per run, sorted by source and batch."""
    rows = []
    for run in runs:
        m = standardize(run).metrics
        rows.append({
            "source": run.source + (" (interrupted: partial)" if run.partial() else ""),
            "device": run.environment.get("device", run.params.get("device", "")),
            "batch_size": run.params.get("batch_size"),
            "samples_per_sec": m.get("samples_per_sec"),
            "time_per_sample_ms": None if m.get("time_per_sample") is None else 1000.0 * m["time_per_sample"],
            "final_loss": m.get("final_loss"),
            "total_samples": m.get("total_samples"),
            "total_time_s": m.get("total_time"),
            "log": os.path.basename(str(run.environment.get("log_path", ""))) if run.source == "log" else "",
        })
    return display.sorted_rows(rows, ["source", "batch_size"])


def plot_comparison(table: Any):
    """Two panels: samples/s and ms per sample against batch size, one line per source."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for (source, device), group in table.groupby(["source", "device"], sort=True):
        label = "{} ({})".format(source, device) if device else source
        group = group.sort_values("batch_size")
        left.plot(group["batch_size"], group["samples_per_sec"], "o-", label=label)
        right.plot(group["batch_size"], group["time_per_sample_ms"], "o-", label=label)
    for ax, title in ((left, "throughput (GlobalRate)"), (right, "time per sample")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    left.set_ylabel("samples / s")
    right.set_ylabel("ms / sample")
    left.legend(fontsize="small")
    fig.tight_layout()
    return display.show(fig)


#: Units of the comparison table's columns (for :func:`format_table`).
TABLE_UNITS = {"samples_per_sec": "samples/s", "time_per_sample_ms": "ms", "total_time_s": "s"}

#: The metrics :func:`metrics_table` shows, in this order.
SHOWN_METRICS = ("samples_per_sec", "time_per_sample", "final_loss", "total_samples", "total_time", "steps",
                 "warmup_time", "setup_time", "compile_time", "last_rate", "steady_rate")


def metrics_table(run: Run):
    """The run's main metrics as a table: metric, value, unit (from the exercise's table of metrics)."""
    import pandas as pd

    rows = [{"metric": name, "value": run.metrics[name], "unit": METRICS.unit(name)}
            for name in SHOWN_METRICS if name in run.metrics]
    rows[:0] = [{"metric": name, "value": text, "unit": ""} for name, text in run.partial_rows()]
    return pd.DataFrame(rows, columns=["metric", "value", "unit"], dtype=object)  # object: counts stay ints


_COUNT_COLUMNS = ("batch_size", "total_samples", "steps")
#: Decimals of a float by its unit (five for a loss or a count).
_FLOAT_FORMATS = {"samples/s": "{:.2f}", "samples/sec": "{:.2f}", "s": "{:.4f}", "ms": "{:.4f}"}


def _cell(value: Any, unit: str = "", count: bool = False) -> str:
    return display.cell_text(value, unit, _FLOAT_FORMATS.get(unit, "{:.5f}"), count=count)


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The notebook's show step: the metrics with their units, the run's notes, the loss curve."""
    table = display.show(format_table(metrics_table(run)))
    for note in run.notes:
        print("Note:", note)
    return display.shown([table, plot_loss(run)])


def format_table(table: Any):
    """A table for the notebook, with each number next to its unit (``19.91 samples/s``): a metrics table's
    own units, or :data:`TABLE_UNITS` for the comparison table's columns."""
    from IPython.display import HTML

    frame = table.copy()
    if list(frame.columns) == ["metric", "value", "unit"]:
        frame["value"] = [_cell(v, u) for v, u in zip(frame["value"], frame["unit"])]
        frame = frame.drop(columns="unit").set_index("metric")
    else:
        for column in frame.columns:
            frame[column] = [_cell(v, TABLE_UNITS.get(column, ""), column in _COUNT_COLUMNS) for v in frame[column]]
    return HTML(frame.to_html())


def plot_loss(run: Run):
    """The training loss against the step (every step for a portable run, every log step for a log)."""
    return plots.loss_curve(run, "loss (masked LM + next sentence)",
                            "{} run, batch size {}".format(run.source, run.params.get("batch_size")))
