"""The Groq notebook's plan, run and show steps (the five-step shape every exercise notebook has),
and the extra sections that look further into a run made here.

    from labkit.testbeds import groq
    config = groq.SPEC.from_notebook(globals())
    groq.plan(config)                    # the backends that will run, and why; or the log it will read
    run = groq.run_exercise(config)      # load the model and data, build, evaluate: a labkit.results.Run
    groq.show(run)                       # the proof point's table
    groq.show_latency(run); groq.show_parity(run)  # the two kinds of latency; predictions against the CPU's
    results.record(run)

A run made here keeps what it measured beyond its record in ``run.details`` (:class:`GroqDetails`:
the loaded model, the data, the engines, the :class:`GroqResult`); a run read from a log has none,
and the extra sections say so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import labkit.logs
from labkit import display
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds.groq.report import make_run, plot_latency, table_from_runs
from labkit.testbeds.groq.result import GroqResult
from labkit.testbeds.groq.steps import build, evaluate, load_data, load_model

__all__ = ["GroqDetails", "plan", "run_exercise", "show", "show_latency", "show_parity", "details_of"]


@dataclass
class GroqDetails:
    """What a run made here measured beyond its record, for the notebook's extra sections."""

    loaded: Any
    data: Any
    engines: Dict[str, Any]
    result: GroqResult


def plan(config: Config) -> RunPlan:
    """The backends that will run here and why (each with what it runs), or the log that will be read.

    A backend named in ``backends`` that is not here fails now, with the reason.
    """
    from labkit.testbeds.groq import backends

    if config.log_path:
        return RunPlan("log", "reads the GroqFlow log at {}".format(config.log_path),
                       "log_path is set: its table is read, nothing is built or run here")
    names = backends.resolve_backends(config.backends)
    if config.backends.strip().lower() == "auto":
        why = "backends='auto' takes every backend present here"
    else:
        why = "backends={!r} was asked for (cpu always runs: every other backend is compared with it)".format(
            config.backends)
    more = []
    for name in backends.BACKENDS:
        ok, reason = backends.available(name)
        if name in names:
            more.append("- {}: {}".format(name, reason))
        elif not ok and config.backends.strip().lower() == "auto":
            more.append("- {}: not here ({})".format(name, reason))
    return RunPlan("testbed" if "groq" in names else "portable", "backends " + ", ".join(names), why, more=more)


_plan_step = plan  # run_exercise's argument is called plan too


@run_step
def run_exercise(config: Config, plan: Optional[RunPlan] = None) -> Run:
    """Load the model and the data, build one engine per backend, evaluate them all (or read the
    log): the Run, with :class:`GroqDetails` as ``run.details`` for a run made here."""
    chosen = plan if plan is not None else _plan_step(config)
    if chosen.path == "log":
        return _from_log(config.log_path)
    loaded = load_model(config)
    data = load_data(config, loaded)
    engines = build(config, loaded)
    result = evaluate(config, loaded, data, engines)
    run = make_run(config, loaded, data, result)
    run.details = GroqDetails(loaded, data, engines, result)
    return run


def _from_log(path: str) -> Run:
    report = labkit.logs.read(path)
    if not report.runs:
        raise ValueError("log_path = {!r}: no run found in this log ({}).".format(
            path, "; ".join(report.notes) or "unrecognised format"))
    if len(report.runs) > 1:
        print("This log holds {} runs; showing the last. labkit.logs.read(log_path).runs has them all.".format(
            len(report.runs)))
    run = report.runs[-1]
    print("Read a {} run from {} ({} format).".format(run.exercise, path, report.format))
    for note in list(getattr(report, "notes", []) or []) + run.notes:
        print("NOTE:", note)
    run.details = None
    return run


def details_of(run: Run, section: str) -> Optional[GroqDetails]:
    """``run.details``, or None after saying why ``section`` has nothing to show (a run read from a log)."""
    details = getattr(run, "details", None)
    if details is None:
        print("This run was read from a log: nothing ran here, so there is no {} to show.".format(section))
    return details


def show(run: Run) -> Optional[List[Any]]:
    """The proof point's table (GroqFlow's columns), for a run made here or read from a log (the
    rule of :func:`labkit.display.shown`: None in a kernel)."""
    details = getattr(run, "details", None)
    table = details.result.table if details is not None else table_from_runs([run])
    return display.shown([display.show(table)])


def show_latency(run: Run) -> Optional[List[Any]]:
    """Both kinds of latency for every backend: the table and the bar plot."""
    details = details_of(run, "latency measured here")
    if details is None:
        return display.shown([])
    return display.shown([display.show(details.result.latency_table), display.show(plot_latency(details.result))])


def show_parity(run: Run, limit: int = 5) -> Optional[List[Any]]:
    """Every backend's predictions against the CPU's, and up to ``limit`` disagreeing samples each."""
    details = details_of(run, "prediction to compare")
    if details is None:
        return display.shown([])
    return display.shown([display.show(details.result.parity),
                          display.show(details.result.disagreement_examples(limit))])
