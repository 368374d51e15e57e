"""What :func:`labkit.testbeds.groq.evaluate` measured (:class:`GroqResult` and its tables) and what a
run made here keeps beyond its record (:class:`GroqDetails`, ``run.details``); the Groq exercise's show
steps, its run record (:func:`make_run`), the latency plot, GroqFlow's table from run records or from a
testbed log, and the sections that look further into a run made here: the student's own sentences
(``custom_text``) on every backend, and what a fixed compiled shape means for an input of another length."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Dict, List, Optional, Sequence, Tuple

import labkit.logs
from labkit.interrupts import show_step
from labkit import display
from labkit.params import Config
from labkit.results import Run, same_value
from labkit.testbeds.groq import evalsets
from labkit.testbeds.groq.metrics import METRICS, TABLE_COLUMNS
from labkit.testbeds.groq.spec import EXERCISE, SIMILARITY_TOLERANCE

__all__ = ["GroqResult", "GroqDetails", "format_ms", "show", "show_latency", "show_parity", "details_of",
           "make_run", "plot_latency", "table_from_runs", "log_table", "custom", "shape_lesson"]


@dataclass
class GroqResult:
    """What :func:`evaluate` measured, as tables and numbers."""

    task: str
    score_name: str
    batch_size: int
    samples: int
    scores: Dict[str, float]
    latency: Dict[str, Dict[str, Optional[float]]]       # backend -> measurement -> seconds
    predictions: Dict[str, List[Any]]                    # backend -> per-sample label or similarity
    disagreements: Dict[str, List[int]]                  # backend -> sample indices
    max_difference: Dict[str, float]                     # backend -> largest |output - cpu output|
    texts: List[Any] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)

    @property
    def table(self):
        """GroqFlow's table: Source, score, end-to-end latency and IPS, on-chip latency and IPS."""
        import pandas as pd

        score = "{:.2%}" if self.task == "classification" else "{:.4f}"
        return pd.DataFrame([{
            "Source": name,
            self.score_name: score.format(self.scores[name]),
            "end-to-end latency (ms)": format_ms(lat["end_to_end"]),
            "end-to-end IPS": _ips(lat["end_to_end"], self.batch_size),
            "on-chip latency (ms)": format_ms(lat.get("on_chip")),
            "on-chip IPS": _ips(lat.get("on_chip"), self.batch_size),
        } for name, lat in self.latency.items()])

    @property
    def latency_table(self):
        """Both kinds of latency for every backend, and how each was measured."""
        import pandas as pd

        return pd.DataFrame([{
            "Source": name,
            "dataset-loop latency (ms)": format_ms(lat["loop"]),
            "dataset-loop IPS": _ips(lat["loop"], self.batch_size),
            "compile-time-input latency (ms)": format_ms(lat["compile_inputs"]),
            "compile-time-input IPS": _ips(lat["compile_inputs"], self.batch_size),
            "in GroqFlow's table": "compile-time inputs (benchmark())" if name == "groq" else "dataset loop",
        } for name, lat in self.latency.items()])

    @property
    def parity(self):
        """Every backend's predictions against the CPU's."""
        import pandas as pd

        what = "predicted label" if self.task == "classification" else \
            "similarity (|difference| > {})".format(SIMILARITY_TOLERANCE)
        return pd.DataFrame([{"backend": name, "compared with": "cpu", "samples": self.samples, "compared": what,
                              "disagreements": len(self.disagreements[name]),
                              "largest output difference": _difference(self.max_difference[name])}
                             for name in self.latency if name != "cpu"])

    def disagreement_examples(self, limit: int = 5):
        """Up to ``limit`` samples per backend where it disagrees with the CPU."""
        import pandas as pd

        rows = []
        for name, indices in self.disagreements.items():
            for i in indices[:limit]:
                text = self.texts[i] if isinstance(self.texts[i], str) else " | ".join(self.texts[i])
                rows.append({"backend": name, "sample": i, "text": text,
                             "cpu": _format_prediction(self.predictions["cpu"][i]),
                             name: _format_prediction(self.predictions[name][i])})
        return pd.DataFrame(rows, columns=["backend", "sample", "text", "cpu"] + [n for n in self.disagreements])


@dataclass
class GroqDetails:
    """What a run made here measured beyond its record, for the notebook's extra sections."""

    loaded: Any
    data: Any
    engines: Dict[str, Any]
    result: GroqResult


def _difference(value: float) -> str:
    # Float rounding differs between CPUs (AVX2, AVX-512): report its order, not its digits.
    return "below 1e-4" if value < 1e-4 else "{:.1e}".format(value)


def _format_prediction(value: Any) -> str:
    return value if isinstance(value, str) else "{:.4f}".format(value)


def format_ms(seconds: Optional[float]) -> str:
    return "{:.2f} ms".format(seconds * 1000) if seconds else "--"


def _ips(seconds: Optional[float], batch_size: int) -> str:
    return "{:.2f} IPS".format(batch_size / seconds) if seconds else "--"


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
    return display.shown([] if details is None else [display.show(details.result.latency_table),
                                                     display.show(plot_latency(details.result))])


@show_step
def show_parity(run: Run, limit: int = 5) -> Optional[List[Any]]:
    """Every backend's predictions against the CPU's, and up to ``limit`` disagreeing samples each."""
    details = details_of(run, "prediction to compare")
    return display.shown([] if details is None else [display.show(details.result.parity),
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
        for kind, seconds in (("e2e", lat["end_to_end"]), ("onchip", lat.get("on_chip"))):
            if seconds:  # on-chip: groq only
                METRICS.add(run, "{}_{}_latency_ms".format(name, kind), seconds * 1000)
                METRICS.add(run, "{}_{}_ips".format(name, kind), result.batch_size / seconds)
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
    ax.set_xticks(x, names)
    ax.set_ylabel("latency per batch (ms)")
    ax.set_title("batch {}, two ways of measuring".format(result.batch_size))
    ax.legend()
    fig.tight_layout()
    return fig


def table_from_runs(runs: Sequence[Any]):
    """GroqFlow's table from run records (read from a log, or made here): one row per source and run
    from metrics named "<source>_<measure>"; runs without such metrics as their flat records."""
    import pandas as pd

    rows = []
    for index, run in enumerate(runs):
        sources: Dict[str, Dict[str, Any]] = {}
        for key, value in run.metrics.items():
            for suffix, column in TABLE_COLUMNS:
                if key.endswith("_" + suffix):
                    source = key[: -len(suffix) - 1]
                    sources.setdefault(source, {"run": index, "exercise": run.exercise, "Source": source})[column] = value
        rows.extend(sources.values())
    if not rows:
        return pd.DataFrame([r.flat() for r in runs])
    table = pd.DataFrame(rows)
    ordered = ["run", "exercise", "Source"] + [c for _, c in TABLE_COLUMNS if c in table.columns]
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


def _model_and_engines(loaded: Any, engines: Optional[Dict[str, Any]], section: str):
    """(loaded, engines) as given, or from the Run of run_exercise in ``loaded``; None for a run from a log."""
    if engines is not None:
        return loaded, engines
    details = details_of(loaded, section)
    return None if details is None else (details.loaded, details.engines)


def custom(config: Config, loaded: Any, engines: Optional[Dict[str, Any]] = None, repetitions: int = 5):
    """The student's sentences on every backend, tokenized to max_seq_length like the evaluation data:
    prediction (or pair similarity) and latency, the median of ``repetitions`` runs (one on groq)."""
    import pandas as pd

    if not config.custom_text:
        print("custom_text is None: set it to a list of your own sentences to run them here.")
        return None
    found = _model_and_engines(loaded, engines, "model to run your sentences on")
    if found is None:
        return None
    loaded, engines = found
    items: List[Tuple[Any, Dict[str, Any]]] = []
    if loaded.task == "classification":
        items = [(sentence, evalsets.encode_sentence(loaded.tokenizer, sentence, config.max_seq_length)[0])
                 for sentence in config.custom_text]
    else:
        if len(config.custom_text) < 2:
            print("sentence similarity compares sentences in pairs: give custom_text at least 2 sentences.")
            return None
        for first, second in combinations(config.custom_text, 2):
            encoded = evalsets.encode_pair(loaded.tokenizer, first, second, config.max_seq_length)
            if encoded is None:
                print("skipped (longer than {} tokens): {} | {}".format(config.max_seq_length, first, second))
                continue
            items.append(((first, second), encoded))
    rows_per_sample = 1 if loaded.task == "classification" else 2
    rows = []
    for text, encoded in items:
        real_tokens = int(encoded["attention_mask"].sum())  # both sentences' of a pair
        batch, _ = evalsets.to_batches([encoded], config.batch_size)
        reference = None
        for name, engine in engines.items():
            times = []
            runs = 1 if name == "groq" else repetitions
            for _ in range(runs):
                start = time.perf_counter()
                out = engine(batch[0])
                times.append(time.perf_counter() - start)
            sample = out[:rows_per_sample]
            if loaded.task == "classification":
                probs = sample[0].softmax(-1)
                prediction: Any = loaded.labels.get(int(probs.argmax()), str(int(probs.argmax())))
                shown = "{} ({:.2f})".format(prediction, float(probs.max()))
            else:
                prediction = evalsets.pair_similarity(sample, encoded["attention_mask"])
                shown = "{:.4f}".format(prediction)
            if reference is None:
                reference = prediction
            same = same_value(prediction, reference, rtol=0, atol=SIMILARITY_TOLERANCE)  # labels: equal
            rows.append({"text": text if isinstance(text, str) else " | ".join(text), "backend": name,
                         "prediction" if loaded.task == "classification" else "similarity": shown,
                         "agrees with cpu": "yes" if same else "NO",
                         "tokens used / compiled": "{} / {}".format(real_tokens, config.max_seq_length * rows_per_sample),
                         "latency (ms)": format_ms(statistics.median(times))})
    return pd.DataFrame(rows)


def shape_lesson(config: Config, loaded: Any, engines: Optional[Dict[str, Any]] = None) -> List[str]:
    """What happens when an input of another length meets each engine: eager PyTorch runs it,
    the fixed-shape ONNX session refuses it (as a GroqChip program would). Returns the lines shown."""
    found = _model_and_engines(loaded, engines, "engine to feed another shape")
    if found is None:
        return []
    loaded, engines = found

    other = config.max_seq_length // 2 if config.max_seq_length >= 4 else config.max_seq_length + 2
    dummy = evalsets.dummy_inputs(loaded.task, other, config.batch_size)
    lines = []
    for name, engine in engines.items():
        if name == "groq":
            lines.append("groq: compiled for {} tokens; a {}-token input needs a new groqit() build (GroqFlow "
                         "rebuilds when it sees the new shape)".format(config.max_seq_length, other))
            continue
        try:
            out = engine(dummy)
            lines.append("{}: a {}-token input runs (output shape {})".format(name, other, tuple(out.shape)))
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            lines.append("{}: a {}-token input is refused: {}".format(name, other, first))
    for line in lines:
        print(line)
    return lines
