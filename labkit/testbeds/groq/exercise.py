"""The Groq notebook's plan and run steps (its show step and the sections that look further into a
run made here are in ``report.py``)."""

from __future__ import annotations

from typing import Optional

from labkit import interrupts
from labkit.interrupts import run_step
from labkit.params import Config
from labkit.plans import RunPlan
from labkit.results import Run
from labkit.testbeds import last_run
from labkit.testbeds.groq import backends
from labkit.testbeds.groq.report import make_run
from labkit.testbeds.groq.result import GroqDetails
from labkit.testbeds.groq.steps import build, evaluate, load_data, load_model

__all__ = ["plan", "run_exercise"]


def plan(config: Config) -> RunPlan:
    """The backends that will run here and why (each with what it runs), or the log that will be read.

    A backend named in ``backends`` that is not here fails now, with the reason.
    """
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
        run, notes = last_run(config.log_path)  # a GroqFlow log may hold bert_tiny and minilm runs: the last
        for note in notes + run.notes:
            print("NOTE:", note)
        run.details = None
        return run
    loaded = load_model(config)
    data = load_data(config, loaded)
    engines = build(config, loaded)
    measured: dict = {}  # evaluate's result after each backend: an interrupt keeps the backends measured
    # a backend's pass cut short is not a measurement: until the first one ends an interrupt stops at once
    stop = interrupts.keep(lambda: _run_of(config, loaded, data, engines, measured.get("result")),
                           measuring=lambda: bool(measured.get("passes")))
    result = evaluate(config, loaded, data, engines, into=measured, stop=stop)
    return _run_of(config, loaded, data, engines, result)


def _run_of(config: Config, loaded: object, data: object, engines: dict, result: object) -> Optional[Run]:
    if result is None:  # no backend finished its pass
        return None
    run = make_run(config, loaded, data, result)
    run.details = GroqDetails(loaded, data, engines, result)
    return run

