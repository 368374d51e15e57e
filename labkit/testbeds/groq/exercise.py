"""The Groq notebook's plan and run steps, and the steps :func:`run_exercise` takes in turn: load the
model and the data, build one engine per backend, evaluate them all on the same samples (its show
step and the sections that look further into a run made here are in ``report.py``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from labkit import interrupts
from labkit.display import show
from labkit.interrupts import run_step
from labkit.params import Config, ParameterError
from labkit.plans import RunPlan
from labkit.results import Run, same_value
from labkit.testbeds import last_run
from labkit.testbeds.groq import backends, evalsets, models
from labkit.testbeds.groq.report import GroqDetails, GroqResult, make_run
from labkit.testbeds.groq.spec import EXERCISE, SIMILARITY_TOLERANCE

__all__ = ["plan", "run_exercise", "load_model", "load_data", "build", "evaluate"]


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


def load_model(config: Config):
    """The model and tokenizer (hub, local directory or offline copy); prints what was used."""
    try:
        loaded = models.load(config.model, config.max_seq_length)
    except ValueError as exc:  # ModelUnavailable is one, and so is max_seq_length beyond the model's limit
        raise ParameterError([str(exc)], EXERCISE) from None
    print(loaded.describe())
    return loaded


def load_data(config: Config, loaded: Any):
    """The evaluation set, tokenized to max_seq_length as the proof point does; prints its source."""
    reachable, _ = models.hub_status()
    data = evalsets.load(loaded.task, loaded.tokenizer, config.max_seq_length, config.num_samples, hub=reachable)
    print(data.describe())
    return data


def build(config: Config, loaded: Any) -> Dict[str, Any]:
    """One engine per backend, built for the compile-time shape (batch_size, max_seq_length); shows
    what each backend had to build (nothing, an ONNX export new or from the cache, a GroqChip program)."""
    import pandas as pd

    names = backends.resolve_backends(config.backends)
    dummy = evalsets.dummy_inputs(loaded.task, config.max_seq_length, config.batch_size)
    engines = {name: backends.make(name, loaded.model, loaded.task, dummy, label=loaded.requested)
               for name in names}
    rows = [{"backend": name, "compiled input shape": engine.build.input_shape,
             "build": "built now" if engine.build.built_now else (
                 "reused from cache" if name == "onnxruntime" else "none needed"),
             "what runs": _WHAT_RUNS[name]} for name, engine in engines.items()]
    table = show(pd.DataFrame(rows))  # None in a kernel, which shows it
    if table is not None:
        print(table)
    return engines


_WHAT_RUNS = {"cpu": "the PyTorch model, eagerly", "cuda": "the PyTorch model, eagerly, on the GPU",
              "onnxruntime": "a torch.onnx export (file: run.details.engines['onnxruntime'].build.artifact)",
              "groq": "a GroqChip program built by groqit()"}


def _predictions(task: str, outputs: Sequence[Any], inputs: Sequence[Dict[str, Any]], labels: Dict[int, str]) -> List[Any]:
    if task == "classification":
        return [labels.get(int(o[0].argmax()), str(int(o[0].argmax()))) for o in outputs]
    return [evalsets.pair_similarity(o, x["attention_mask"]) for o, x in zip(outputs, inputs)]


def evaluate(config: Config, loaded: Any, data: Any, engines: Dict[str, Any], repetitions: int = 100,
             into: Optional[Dict[str, Any]] = None, stop: Any = None) -> GroqResult:
    """Run the evaluation set on every engine; time the dataset loop (one wall time around it, as the
    proof point times its cpu row) and the compile-time inputs (docs/groq.md: what each number means).

    Phases, named on ``stop`` (the run's stop flag, ``interrupts.keep``'s, when given):
    ``<backend> inference`` for each backend, then summary. After each backend ``into["result"]``
    (when given) holds the result of the backends so far; an interrupt lets the backend in progress
    finish and ends the evaluation there.
    """
    phase = stop.phase if stop is not None else (lambda name: None)
    batches, filler = evalsets.to_batches(data.inputs, config.batch_size)
    dummy = evalsets.dummy_inputs(loaded.task, config.max_seq_length, config.batch_size)
    rows_per_sample = 1 if loaded.task == "classification" else 2
    notes = []
    if filler:
        notes.append("the last batch was filled up with {} copies of its last sample (fixed compiled shape); "
                     "their outputs are not scored".format(filler))
    outputs, scores, latency, predictions = {}, {}, {}, {}
    for name, engine in engines.items():
        phase("{} inference".format(name))
        # once its last batch is done, an interrupt lets its timing finish, then keeps it
        passed = (lambda: into.setdefault("passes", []).append(name)) if into is not None else None
        raw, wall = engine.run_dataset(batches, desc="{} inference".format(name), on_last=passed)
        outputs[name] = [out[start:start + rows_per_sample]
                         for out in raw for start in range(0, out.shape[0], rows_per_sample)][:len(data)]
        scores[name] = data.score(outputs[name])
        predictions[name] = _predictions(loaded.task, outputs[name], data.inputs, loaded.labels)
        compile_inputs = engine.benchmark(dummy, repetitions)
        loop = wall / len(batches)
        on_chip = engine.on_chip_latency_s
        latency[name] = {"loop": loop, "compile_inputs": compile_inputs, "on_chip": on_chip,
                         "end_to_end": compile_inputs if name == "groq" else loop,
                         "loop_ips": len(data) / wall}
        if into is not None:
            into["result"] = _result(config, loaded, data, outputs, scores, latency, predictions, notes)
    phase("summary")
    return _result(config, loaded, data, outputs, scores, latency, predictions, notes)


def _result(config: Config, loaded: Any, data: Any, outputs: Dict[str, Any], scores: Dict[str, float],
            latency: Dict[str, Any], predictions: Dict[str, Any], notes: List[str]) -> GroqResult:
    """The backends measured so far, each compared with cpu (the first one measured)."""
    disagreements, largest = {}, {}
    for name in outputs:
        if name != "cpu" and "cpu" in outputs:
            # labels must be equal; similarities within SIMILARITY_TOLERANCE
            disagreements[name] = [i for i, (a, b) in enumerate(zip(predictions["cpu"], predictions[name]))
                                   if not same_value(a, b, rtol=0, atol=SIMILARITY_TOLERANCE)]
            largest[name] = max(float((a - b).abs().max()) for a, b in zip(outputs["cpu"], outputs[name]))
    return GroqResult(loaded.task, data.score_name, config.batch_size, len(data), dict(scores), dict(latency),
                      dict(predictions), disagreements, largest, list(data.texts), list(notes))
