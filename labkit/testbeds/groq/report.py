"""The Groq exercise's show steps, its run record (:func:`make_run`), the latency plot, and
GroqFlow's table from run records or from a testbed log."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import labkit.logs
from labkit.interrupts import show_step
from labkit import display
from labkit.params import Config
from labkit.results import Run
from labkit.testbeds.groq.metrics import METRICS
from labkit.testbeds.groq.result import GroqDetails, GroqResult
from labkit.testbeds.groq.spec import EXERCISE

__all__ = ["show", "show_latency", "show_parity", "details_of", "make_run", "plot_latency", "table_from_runs",
           "log_table"]


def details_of(run: Run, section: str) -> Optional[GroqDetails]:
    """``run.details``, or None after saying why ``section`` has nothing to show (a run read from a log)."""
    details = getattr(run, "details", None)
    if details is None:
        print("This run was read from a log: nothing ran here, so there is no {} to show.".format(section))
    return details


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The proof point's table (GroqFlow's columns), for a run made here or read from a log."""
    details = getattr(run, "details", None)
    table = details.result.table if details is not None else table_from_runs([run])
    return display.shown([display.show(table)])


@show_step
def show_latency(run: Run) -> Optional[List[Any]]:
    """Both kinds of latency for every backend: the table and the bar plot."""
    details = details_of(run, "latency measured here")
    if details is None:
        return display.shown([])
    return display.shown([display.show(details.result.latency_table), display.show(plot_latency(details.result))])


@show_step
def show_parity(run: Run, limit: int = 5) -> Optional[List[Any]]:
    """Every backend's predictions against the CPU's, and up to ``limit`` disagreeing samples each."""
    details = details_of(run, "prediction to compare")
    if details is None:
        return display.shown([])
    return display.shown([display.show(details.result.parity),
                          display.show(details.result.disagreement_examples(limit))])


def make_run(config: Config, loaded: Any, data: Any, result: GroqResult) -> Run:
    """A labkit.results.Run holding the table's numbers, named as labkit.logs names a GroqFlow log's
    ("cpu_accuracy", "groq_e2e_latency_ms", ...), so runs made here and read from logs tabulate together."""
    from labkit.devices import environment

    exercise = EXERCISE if result.task == "classification" else "groq/minilm"
    run = Run(exercise, source="testbed" if "groq" in result.latency else "portable", params=config.to_dict())
    for name, lat in result.latency.items():
        if result.task == "classification":
            METRICS.add(run, "{}_accuracy".format(name), round(result.scores[name] * 100, 4))
        else:
            METRICS.add(run, "{}_spearman".format(name), result.scores[name])
        METRICS.add(run, "{}_e2e_latency_ms".format(name), lat["end_to_end"] * 1000)
        METRICS.add(run, "{}_e2e_ips".format(name), result.batch_size / lat["end_to_end"])
        if lat.get("on_chip"):
            METRICS.add(run, "{}_onchip_latency_ms".format(name), lat["on_chip"] * 1000)
            METRICS.add(run, "{}_onchip_ips".format(name), result.batch_size / lat["on_chip"])
        METRICS.add(run, "{}_loop_latency_ms".format(name), lat["loop"] * 1000)
        METRICS.add(run, "{}_compile_input_latency_ms".format(name), lat["compile_inputs"] * 1000)
        if name != "cpu":
            METRICS.add(run, "{}_disagreements".format(name), len(result.disagreements[name]))
    METRICS.add(run, "samples", result.samples)
    run.notes.extend(loaded.notes + data.notes + result.notes)
    run.notes.append("data: " + data.name)
    run.notes.append("end-to-end latency: the dataset loop for host backends, benchmark() on the compile-time "
                     "inputs for groq (as GroqFlow's proof point reports them)")
    run.environment = environment(extra={"model_used": loaded.used})
    return run


def plot_latency(result: GroqResult):
    """Bars: dataset-loop and compile-time-input latency for every backend (ms)."""
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(result.latency)
    loop = [result.latency[n]["loop"] * 1000 for n in names]
    compiled = [result.latency[n]["compile_inputs"] * 1000 for n in names]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(x - 0.2, loop, 0.4, label="dataset loop")
    ax.bar(x + 0.2, compiled, 0.4, label="compile-time inputs")
    ax.set_xticks(x)
    ax.set_xticklabels(names)
    ax.set_ylabel("latency per batch (ms)")
    ax.set_title("batch {}, two ways of measuring".format(result.batch_size))
    ax.legend()
    fig.tight_layout()
    return fig


_RUN_KEYS = (("accuracy", "Accuracy"), ("spearman", "Spearman Rank Correlation Coefficient"),
             ("e2e_latency_ms", "end-to-end latency (ms)"), ("e2e_ips", "end-to-end IPS"),
             ("onchip_latency_ms", "on-chip latency (ms)"), ("onchip_ips", "on-chip IPS"))


def table_from_runs(runs: Sequence[Any]):
    """GroqFlow's table from run records (read from a log, or made here): one row per source and run
    from metrics named "<source>_<measure>"; runs without such metrics as their flat records."""
    import pandas as pd

    rows = []
    for index, run in enumerate(runs):
        sources: Dict[str, Dict[str, Any]] = {}
        for key, value in run.metrics.items():
            for suffix, column in _RUN_KEYS:
                if key.endswith("_" + suffix):
                    source = key[: -len(suffix) - 1]
                    sources.setdefault(source, {"run": index, "exercise": run.exercise, "Source": source})[column] = value
        rows.extend(sources.values())
    if not rows:
        return pd.DataFrame([r.flat() for r in runs])
    table = pd.DataFrame(rows)
    ordered = ["run", "exercise", "Source"] + [c for _, c in _RUN_KEYS if c in table.columns]
    table = table[ordered].astype(object)
    return table.where(table.notna(), "--")


def log_table(path: Optional[str]):
    """Read a GroqFlow log from the testbed with labkit.logs and show the same table."""
    if path is None:
        print("log_path is None: set it to a GroqFlow log from the testbed to read its table here.")
        return None
    report = labkit.logs.read(path)
    notes = list(getattr(report, "notes", []) or [])
    for run in report.runs:
        notes.extend(n for n in run.notes if n not in notes)
    for note in notes:
        print("NOTE:", note)
    return table_from_runs(report.runs)
