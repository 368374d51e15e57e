"""The LLaMA-2-7B exercise's tables and plots: one run's metrics and loss curve (:func:`show`), and the
throughput table and plot that put runs side by side, each labelled where it ran (:func:`where_label`).
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from labkit.interrupts import show_step
from labkit import display, plots
from labkit.results import Run
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS
from labkit.testbeds.cerebras.log import on_cerebras_system

__all__ = ["where_label", "metrics_table", "throughput_table", "format_throughput", "plot_loss", "plot_throughput",
           "show", "SHOWN_METRICS", "THROUGHPUT_UNITS"]

#: The metrics :func:`metrics_table` shows, in this order (those the run has).
SHOWN_METRICS = ("global_rate", "tokens_per_s", "final_loss", "validation_loss", "last_rate", "steady_rate", "steps",
                 "samples", "train_seconds", "first_step_s", "build_s", "compile_s", "compile_cached", "staging_s",
                 "checkpoint_s", "parameters")


def where_label(run: Run) -> str:
    """Where a run ran, in words: "portable PyTorch on CPU", "CS-3 (log)", "CS-3 (cszoo fit)", and for a
    modelzoo log of its CPU or GPU backend (``Device=cpu``) "modelzoo on CPU (log)"."""
    if run.source in ("log", "testbed"):
        how = "log" if run.source == "log" else "cszoo fit"
        logged = run.environment.get("device")
        if on_cerebras_system(logged):
            return "CS-3 ({})".format(how)
        return "modelzoo on {} ({})".format(_device_name(logged), how)
    return "portable PyTorch on {}".format(_device_name(run.params.get("device") or run.environment.get("device")))


def _device_name(device: Any) -> str:
    name = str(device or "cpu").split(":")[0]
    return {"cuda": "CUDA", "mps": "Apple MPS"}.get(name, name.upper())


def _text(value: Any, unit: str = "", count: bool = False) -> str:
    # rates without a thousands separator: the golden copies mask "<number> tokens/s" whole
    float_format = "{:.2f}" if unit in ("samples/s", "tokens/s", "s") else "{:.4f}"
    return display.cell_text(value, unit, float_format, "{:,}", count)


def metrics_table(run: Run):
    """The run's metrics as a table (metric, value with its unit, meaning)."""
    import pandas as pd

    rows = [{"metric": name, "value": text, "meaning": ""} for name, text in run.partial_rows()]
    rows.append({"metric": "where", "value": where_label(run), "meaning": "where the run ran"})
    for name in SHOWN_METRICS:
        if name in run.metrics:
            metric = METRICS[name]
            rows.append({"metric": name, "value": _text(run.metrics[name], metric.unit), "meaning": metric.meaning})
    return pd.DataFrame(rows, columns=["metric", "value", "meaning"]).set_index("metric")


def throughput_table(runs: Sequence[Run]):
    """One row per run, by where it ran and batch size: the batch-size study's table (numbers;
    :func:`format_throughput` shows it with units: GlobalRate and last Rate in samples/s)."""
    rows = []
    for run in runs:
        m = run.metrics
        rows.append({"where": where_label(run) + (" (interrupted: partial)" if run.partial() else ""),
                     "status": run.status, "batch_size": run.params.get("batch_size"),
                     "sequence_length": run.params.get("sequence_length"), "steps": m.get("steps"),
                     "GlobalRate": m.get("global_rate"), "tokens/s": m.get("tokens_per_s"),
                     "last Rate": m.get("last_rate"), "final_loss": m.get("final_loss"),
                     "train_seconds": m.get("train_seconds")})
    return display.sorted_rows(rows, ["where", "batch_size"])


#: Units of the throughput table's columns, shown beside each number by :func:`format_throughput`.
THROUGHPUT_UNITS = {"GlobalRate": "samples/s", "tokens/s": "tokens/s", "last Rate": "samples/s",
                    "train_seconds": "s"}


def format_throughput(table: Any):
    """The throughput table as HTML, each number beside its unit (``31.99 samples/s``)."""
    from IPython.display import HTML

    frame = table.copy()
    for column in frame.columns:
        frame[column] = [_text(v, THROUGHPUT_UNITS.get(column, ""), column in _COUNTS) for v in frame[column]]
    return HTML(frame.to_html(index=False))


_COUNTS = ("batch_size", "sequence_length", "steps")


def plot_loss(run: Run):
    """The training loss against the step (every step of a portable run, every report of a log)."""
    return plots.loss_curve(run, "loss (next-token cross-entropy)",
                            "{}, batch size {}".format(where_label(run), run.params.get("batch_size")))


def plot_throughput(runs: Sequence[Run]):
    """GlobalRate (samples/s) and tokens/s against batch size, one line per place a run ran."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    groups: dict = {}
    for run in runs:
        if run.metrics.get("global_rate") is not None:
            groups.setdefault(where_label(run), []).append(run)
    for label, group in sorted(groups.items()):
        group = sorted(group, key=lambda r: r.params.get("batch_size") or 0)
        sizes = [r.params.get("batch_size") for r in group]
        left.plot(sizes, [r.metrics["global_rate"] for r in group], "o-", label=label)
        right.plot(sizes, [r.metrics.get("tokens_per_s") for r in group], "o-", label=label)
    for ax, title, unit in ((left, "GlobalRate", "samples / s"), (right, "tokens per second", "tokens / s")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size (samples per step)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
    if groups:
        left.legend(fontsize="small")
    fig.tight_layout()
    return display.show(fig)


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The show step: the metrics with their units, the notes, the loss curve and the throughput table."""
    from IPython.display import HTML

    table = display.show(HTML(metrics_table(run).to_html()))
    for note in run.notes:
        print("Note:", note)
    return display.shown([table, plot_loss(run), display.show(format_throughput(throughput_table([run])))])
