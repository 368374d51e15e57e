"""What the SambaNova notebook shows: the run's metrics, its loss curve, and the homework's
throughput table and plot against ntasks.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

from labkit.interrupts import show_step
from labkit import display
from labkit.results import Run

__all__ = ["show", "throughput_table", "plot_throughput", "metrics_table", "format_throughput", "plot_loss"]


def throughput_table(runs: Sequence[Run]):
    """One row per run: ntasks, e2e time, SambaNova's throughput (tokens/s), true sequences/s."""
    rows = []
    for r in runs:
        m = r.metrics
        if "e2e_train_time" not in m:
            continue
        rows.append({
            "source": r.source,
            "ntasks": r.params.get("ntasks"),
            "ntasks_per_node": r.params.get("ntasks_per_node"),
            "model_size": r.params.get("model_size", "large" if r.source != "portable" else None),
            "batch_size": r.params.get("batch_size"),
            "steps": r.params.get("steps", r.params.get("steps_this_run")),
            "e2e_train_time (s)": m["e2e_train_time"],
            "training_sequences_per_second (tokens/s)": m.get("training_sequences_per_second"),
            "sequences/s": m.get("sequences_per_second"),
            "tokens/s per task": m.get("throughput_per_task"),
        })
    return display.sorted_rows(rows, ["source", "ntasks"])


def plot_throughput(table, ax=None):
    """The homework plot: throughput (tokens/s, SambaNova's figure) against ntasks, one line per
    source, with the ideal linear scaling from each source's smallest run dashed."""
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(6, 4))
    column = "training_sequences_per_second (tokens/s)"
    for (source, size), group in table.groupby(["source", "model_size"], dropna=False):
        group = group.sort_values("ntasks")
        label = "{} ({})".format(source, size if isinstance(size, str) else "?")
        ax.plot(group["ntasks"], group[column], marker="o", label=label)
        first = group.iloc[0]
        ideal = [first[column] * n / first["ntasks"] for n in group["ntasks"]]
        ax.plot(group["ntasks"], ideal, linestyle="--", alpha=0.5, label=label + " ideal")
    ax.set_xlabel("ntasks (ranks)")
    ax.set_ylabel("training_sequences_per_second\n(tokens/s)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_title("BERT throughput against --ntasks")
    ax.legend(fontsize="small")
    return ax


_MEANINGS = {
    "e2e_train_time": "wall time of the training steps (not the compile)",
    "training_sequences_per_second": "SambaNova's figure: ntasks x batch x steps x max_seq_length / e2e, i.e. TOKENS/s",
    "sequences_per_second": "true sequences per second: ntasks x batch x steps / e2e",
    "throughput_per_task": "tokens/s per task (flat when scaling is perfect)",
    "final_loss": "masked-LM + next-sentence loss at the last step",
    "compile_s": "compile time from the compile log (COMPILE END AT)",
    "replicas_in_sync": "every rank holds the same weights after training",
}


def _fmt(value: Any, unit: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    # Fixed widths, so a table keeps its layout whatever the numbers (and a golden notebook
    # whose timings are masked still compares equal).
    if unit == "s":
        return "{:10.3f} s".format(value)
    if unit.startswith("tokens/s"):
        return "{:12.0f} tokens/s".format(value)
    if unit == "sequences/s":
        return "{:10.1f} sequences/s".format(value)
    return "{:.3f}".format(value) if isinstance(value, float) else str(value)


def metrics_table(run_: Run):
    """The run's metrics with units and what each means, as a DataFrame."""
    import pandas as pd

    rows = [{"metric": name, "value": _fmt(value, run_.units.get(name, "")), "meaning": _MEANINGS.get(name, "")}
            for name, value in run_.metrics.items() if name in _MEANINGS]
    rows[:0] = [{"metric": name, "value": text, "meaning": "the run was stopped by an interrupt"}
                for name, text in run_.partial_rows()]
    return pd.DataFrame(rows).set_index("metric")


def format_throughput(table):
    """:func:`throughput_table` with units in every cell, for display."""
    shown = table.copy()
    units = {"e2e_train_time (s)": "s", "training_sequences_per_second (tokens/s)": "tokens/s",
             "sequences/s": "sequences/s", "tokens/s per task": "tokens/s"}
    for column, unit in units.items():
        if column in shown:
            shown[column] = [_fmt(v, unit) for v in shown[column]]
    return shown


def plot_loss(run_: Run, ax=None):
    """Loss against step for one run (rank 0's loss, as SambaFlow logs it)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _fig, ax = plt.subplots(figsize=(6, 3.5))
    series = run_.series.get("loss")
    if series:
        ax.plot(series["x"], series["y"], marker="." if len(series["x"]) < 50 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (MLM + NSP)")
    ax.set_title("{} run, ntasks={}".format(run_.source, run_.params.get("ntasks"))
                 + run_.partial_title())
    return ax


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The metrics with what each means, the run's notes, the loss curve."""
    table = display.show(metrics_table(run))
    for note in run.notes:
        print("-", note)
    return display.shown([table, display.show(plot_loss(run).figure)])
