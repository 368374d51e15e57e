"""The Groq exercise: BERT-tiny on SST-2 (spring) or MiniLM on STS-B (autumn), compiled for an
inference engine and compared with the CPU. Notebook: notebooks/groq/bert_tiny.ipynb.

    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p num_samples 100
    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p model sentence-transformers/all-MiniLM-L6-v2
    papermill notebooks/groq/bert_tiny.ipynb out.ipynb -p max_seq_length 256 -y 'custom_text: ["What a film!"]'

In Python::

    from labkit.testbeds import groq
    config = groq.BERT_TINY_SPEC.validate({"num_samples": 50})
    loaded = groq.load_model(config); data = groq.load_data(config, loaded)
    engines = groq.build(config, loaded); result = groq.evaluate(config, loaded, data, engines)
    result.table          # GroqFlow's columns: Source, Accuracy, end-to-end and on-chip latency / IPS

The ``cpu`` row is measured as the proof point measures it (PyTorch eager, batch 1, the dataset
loop's wall time divided by the number of samples); ``onnxruntime`` runs a fixed-shape
``torch.onnx`` export; ``cuda`` appears with a GPU; ``groq`` with GroqFlow and a GroqChip
(verified only on the testbed). See docs/groq.md.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Dict, List, Optional, Sequence, Tuple

from labkit.interrupts import run_step
from labkit.params import Config, Param, ParameterError, PATH, Spec

__all__ = ["BERT_TINY_SPEC", "load_model", "load_data", "build", "evaluate", "custom", "shape_lesson",
           "make_run", "plot_latency", "log_table", "table_from_runs", "GroqResult", "COLUMNS"]

EXERCISE = "groq/bert_tiny"
#: GroqFlow's table columns (demo_helpers.compute_performance); the score column depends on the task.
COLUMNS = ("Source", "end-to-end latency (ms)", "end-to-end IPS", "on-chip latency (ms)", "on-chip IPS")
#: Similarity scores further apart than this between a backend and the CPU count as a disagreement.
SIMILARITY_TOLERANCE = 0.01
MAX_CUSTOM = 20


def _check_model(value: str) -> Optional[str]:
    from labkit.testbeds.groq import models

    return models.problem_with_model(value)


def _check_backends(value: str) -> Optional[str]:
    from labkit.testbeds.groq import backends

    try:
        backends.parse_backends(value)
    except ValueError as exc:
        return str(exc)
    return None


def _check_custom(value: List[str]) -> Optional[str]:
    if not value:
        return "an empty list; give at least one sentence, or None"
    if len(value) > MAX_CUSTOM:
        return "{} sentences; at most {} are run".format(len(value), MAX_CUSTOM)
    if any(not s.strip() for s in value):
        return "an empty sentence in the list"
    return None


def _check_log(value: str) -> Optional[str]:
    if not os.path.isfile(value):
        return "no such file: {}".format(value)
    return None


def _cross_length(config: Config) -> Optional[Tuple[str, str]]:
    from labkit.testbeds.groq import models

    limit = models.model_limit(config.model)
    if limit is not None and config.max_seq_length > limit:
        return "max_seq_length", "{} accepts at most {} tokens (its max_position_embeddings)".format(config.model, limit)
    return None


def _cross_custom(config: Config) -> Optional[Tuple[str, str]]:
    from labkit.testbeds.groq import models

    course = models.COURSE_MODELS.get(config.model)
    if config.custom_text is not None and course is not None and course.task == "similarity" and len(config.custom_text) < 2:
        return "custom_text", "sentence similarity compares sentences in pairs: give at least 2 sentences"
    return None


def _cross_backends(config: Config) -> Optional[Tuple[str, str]]:
    from labkit.testbeds.groq import backends

    try:
        backends.resolve_backends(config.backends)
    except ValueError as exc:
        return "backends", str(exc)
    return None


BERT_TINY_SPEC = Spec(
    EXERCISE,
    Param("model", str, "M-FAC/bert-tiny-finetuned-sst2", check=_check_model,
          help="Hugging Face model id or local directory: the BERT-tiny SST-2 checkpoint (spring) or "
               "sentence-transformers/all-MiniLM-L6-v2 (autumn, sentence similarity on STS-B)"),
    Param("max_seq_length", int, 128, min=2, help="tokens per sentence; the compiled shape"),
    Param("batch_size", int, 1, min=1, max=256, help="samples per inference (the proof point uses 1)"),
    Param("num_samples", int, None, optional=True, min=1, help="evaluate the first N samples; None = all"),
    Param("custom_text", list, None, optional=True, item_type=str, check=_check_custom,
          help="your own sentences, run on every backend"),
    Param("backends", str, "auto", check=_check_backends,
          help="'auto' or a comma list of cpu, onnxruntime, cuda, groq"),
    Param("log_path", PATH, None, optional=True, check=_check_log, help="a GroqFlow log from the testbed to read"),
    checks=[_cross_length, _cross_custom, _cross_backends],
)


# ---------------------------------------------------------------------------------------------
# Steps, one notebook cell each


def _parameter_error(problem: str) -> ParameterError:
    return ParameterError([problem], EXERCISE)


@run_step
def load_model(config: Config):
    """The model and tokenizer (hub, local directory or offline copy); prints what was used."""
    from labkit.testbeds.groq import models

    try:
        loaded = models.load(config.model, config.max_seq_length)
    except models.ModelUnavailable as exc:
        raise _parameter_error(str(exc)) from None
    except ValueError as exc:  # max_seq_length beyond the model's limit
        raise _parameter_error(str(exc)) from None
    print(loaded.describe())
    return loaded


def load_data(config: Config, loaded: Any):
    """The evaluation set, tokenized to max_seq_length as the proof point does; prints its source."""
    from labkit.testbeds.groq import evalsets, models

    reachable, _ = models.hub_status()
    data = evalsets.load(loaded.task, loaded.tokenizer, config.max_seq_length, config.num_samples, hub=reachable)
    print(data.describe())
    return data


@run_step
def build(config: Config, loaded: Any) -> Dict[str, Any]:
    """One engine per backend, built for the compile-time shape (batch_size, max_seq_length).

    Shows what each backend had to build: nothing for eager PyTorch, an ONNX export (reused from
    the cache when this model and shape were exported before), a GroqChip program.
    """
    import pandas as pd

    from labkit.testbeds.groq import backends, evalsets

    names = backends.resolve_backends(config.backends)
    dummy = evalsets.dummy_inputs(loaded.task, config.max_seq_length, config.batch_size)
    engines: Dict[str, Any] = {}
    for name in names:
        engines[name] = backends.make(name, loaded.model, loaded.task, dummy, label=loaded.requested)
    rows = []
    for name, engine in engines.items():
        info = engine.build
        rows.append({"backend": name, "compiled input shape": info.input_shape,
                     "build": "built now" if info.built_now else ("reused from cache" if name == "onnxruntime" else "none needed"),
                     "what runs": _WHAT_RUNS.get(name, info.artifact)})
    _display(pd.DataFrame(rows))
    return engines


_WHAT_RUNS = {"cpu": "the PyTorch model, eagerly", "cuda": "the PyTorch model, eagerly, on the GPU",
              "onnxruntime": "a torch.onnx export (file: engines['onnxruntime'].build.artifact)",
              "groq": "a GroqChip program built by groqit()"}


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

        rows = []
        for name, lat in self.latency.items():
            end_to_end = lat["end_to_end"]
            on_chip = lat.get("on_chip")
            rows.append({
                "Source": name,
                self.score_name: _format_score(self.scores[name], self.task),
                "end-to-end latency (ms)": _ms(end_to_end),
                "end-to-end IPS": _ips(end_to_end, self.batch_size),
                "on-chip latency (ms)": _ms(on_chip),
                "on-chip IPS": _ips(on_chip, self.batch_size),
            })
        return pd.DataFrame(rows)

    @property
    def latency_table(self):
        """Both kinds of latency for every backend, and how each was measured."""
        import pandas as pd

        rows = []
        for name, lat in self.latency.items():
            rows.append({
                "Source": name,
                "dataset-loop latency (ms)": _ms(lat["loop"]),
                "dataset-loop IPS": _ips(lat["loop"], self.batch_size),
                "compile-time-input latency (ms)": _ms(lat["compile_inputs"]),
                "compile-time-input IPS": _ips(lat["compile_inputs"], self.batch_size),
                "in GroqFlow's table": "compile-time inputs (benchmark())" if name == "groq" else "dataset loop",
            })
        return pd.DataFrame(rows)

    @property
    def parity(self):
        """Every backend's predictions against the CPU's."""
        import pandas as pd

        what = "predicted label" if self.task == "classification" else \
            "similarity (|difference| > {})".format(SIMILARITY_TOLERANCE)
        rows = []
        for name in self.latency:
            if name == "cpu":
                continue
            rows.append({"backend": name, "compared with": "cpu", "samples": self.samples, "compared": what,
                         "disagreements": len(self.disagreements[name]),
                         "largest output difference": _difference(self.max_difference[name])})
        return pd.DataFrame(rows)

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


def _difference(value: float) -> str:
    # Float rounding differs between CPUs (AVX2, AVX-512): report its order, not its digits.
    return "below 1e-4" if value < 1e-4 else "{:.1e}".format(value)


def _format_score(value: float, task: str) -> str:
    return "{:.2%}".format(value) if task == "classification" else "{:.4f}".format(value)


def _format_prediction(value: Any) -> str:
    return value if isinstance(value, str) else "{:.4f}".format(value)


def _ms(seconds: Optional[float]) -> str:
    return "{:.2f} ms".format(seconds * 1000) if seconds else "--"


def _ips(seconds: Optional[float], batch_size: int) -> str:
    return "{:.2f} IPS".format(batch_size / seconds) if seconds else "--"


def _batches(inputs: Sequence[Dict[str, Any]], batch_size: int) -> Tuple[List[Dict[str, Any]], int]:
    """Samples grouped batch_size at a time (the compiled shape is fixed, so the last batch is
    filled up with copies of its last sample, whose outputs are dropped). Returns the batches
    and the number of filler samples."""
    import torch

    batches, filler = [], 0
    for start in range(0, len(inputs), batch_size):
        group = list(inputs[start:start + batch_size])
        filler += batch_size - len(group)
        group += [group[-1]] * (batch_size - len(group))
        batches.append(group[0] if batch_size == 1 else {k: torch.cat([g[k] for g in group]) for k in group[0]})
    return batches, filler


def _per_sample(outputs: Sequence[Any], rows_per_sample: int, count: int) -> List[Any]:
    samples = []
    for out in outputs:
        for start in range(0, out.shape[0], rows_per_sample):
            samples.append(out[start:start + rows_per_sample])
    return samples[:count]


def _predictions(task: str, outputs: Sequence[Any], inputs: Sequence[Dict[str, Any]], labels: Dict[int, str]) -> List[Any]:
    from labkit.testbeds.groq import evalsets

    if task == "classification":
        return [labels.get(int(o[0].argmax()), str(int(o[0].argmax()))) for o in outputs]
    return [evalsets.pair_similarity(o, x["attention_mask"]) for o, x in zip(outputs, inputs)]


def _compare(task: str, reference: Sequence[Any], other: Sequence[Any], ref_out: Sequence[Any],
             other_out: Sequence[Any]) -> Tuple[List[int], float]:
    if task == "classification":
        indices = [i for i, (a, b) in enumerate(zip(reference, other)) if a != b]
    else:
        indices = [i for i, (a, b) in enumerate(zip(reference, other)) if abs(a - b) > SIMILARITY_TOLERANCE]
    largest = max(float((a - b).abs().max()) for a, b in zip(ref_out, other_out))
    return indices, largest


@run_step
def evaluate(config: Config, loaded: Any, data: Any, engines: Dict[str, Any], repetitions: int = 100) -> GroqResult:
    """Run the evaluation set on every engine; time the dataset loop and the compile-time inputs.

    - dataset loop: one wall time around the whole loop over the samples (as the proof point
      times its cpu row, progress bar included), divided by the number of batches;
    - compile-time inputs: the all-ones inputs given at build time, ``repetitions`` times
      after one warm-up (GroqFlow's benchmark() runs them 100 times on the chip).
    GroqFlow's table reports the dataset loop for the host rows and benchmark() for groq.
    """
    from labkit.testbeds.groq import evalsets

    batches, filler = _batches(data.inputs, config.batch_size)
    dummy = evalsets.dummy_inputs(loaded.task, config.max_seq_length, config.batch_size)
    rows_per_sample = 1 if loaded.task == "classification" else 2
    notes = []
    if filler:
        notes.append("the last batch was filled up with {} copies of its last sample (fixed compiled shape); "
                     "their outputs are not scored".format(filler))
    outputs, scores, latency, predictions = {}, {}, {}, {}
    for name, engine in engines.items():
        raw, wall = engine.run_dataset(batches, desc="{} inference".format(name))
        outputs[name] = _per_sample(raw, rows_per_sample, len(data))
        scores[name] = data.score(outputs[name])
        predictions[name] = _predictions(loaded.task, outputs[name], data.inputs, loaded.labels)
        compile_inputs = engine.benchmark(dummy, repetitions)
        loop = wall / len(batches)
        on_chip = engine.on_chip_latency_s
        latency[name] = {"loop": loop, "compile_inputs": compile_inputs, "on_chip": on_chip,
                         "end_to_end": compile_inputs if name == "groq" else loop,
                         "loop_ips": len(data) / wall}
    disagreements, largest = {}, {}
    for name in engines:
        if name != "cpu":
            disagreements[name], largest[name] = _compare(loaded.task, predictions["cpu"], predictions[name],
                                                          outputs["cpu"], outputs[name])
    return GroqResult(loaded.task, data.score_name, config.batch_size, len(data), scores, latency, predictions,
                      disagreements, largest, list(data.texts), notes)


def custom(config: Config, loaded: Any, engines: Dict[str, Any], repetitions: int = 5):
    """The student's sentences on every backend: prediction (or pair similarity) and latency.

    Each sentence is tokenized to max_seq_length, exactly like the evaluation data (the compiled
    shape does not change with the sentence); latency is the median of ``repetitions`` runs of
    that one input (one run on groq).
    """
    import pandas as pd

    from labkit.testbeds.groq import evalsets

    if not config.custom_text:
        print("custom_text is None: set it to a list of your own sentences to run them here.")
        return None
    items: List[Tuple[Any, Dict[str, Any], int]] = []
    if loaded.task == "classification":
        for sentence in config.custom_text:
            encoded, _ = evalsets.encode_sentence(loaded.tokenizer, sentence, config.max_seq_length)
            items.append((sentence, encoded, int(encoded["attention_mask"].sum())))
    else:
        if len(config.custom_text) < 2:
            print("sentence similarity compares sentences in pairs: give custom_text at least 2 sentences.")
            return None
        for first, second in combinations(config.custom_text, 2):
            encoded = evalsets.encode_pair(loaded.tokenizer, first, second, config.max_seq_length)
            if encoded is None:
                print("skipped (longer than {} tokens): {} | {}".format(config.max_seq_length, first, second))
                continue
            items.append(((first, second), encoded, int(encoded["attention_mask"][0].sum() + encoded["attention_mask"][1].sum())))
    rows = []
    for text, encoded, real_tokens in items:
        batch, _ = _batches([encoded], config.batch_size)
        reference = None
        for name, engine in engines.items():
            times = []
            runs = 1 if name == "groq" else repetitions
            for _ in range(runs):
                start = time.perf_counter()
                out = engine(batch[0])
                times.append(time.perf_counter() - start)
            rows_per_sample = 1 if loaded.task == "classification" else 2
            sample = out[:rows_per_sample]
            if loaded.task == "classification":
                probs = sample[0].softmax(-1)
                label = loaded.labels.get(int(probs.argmax()), str(int(probs.argmax())))
                prediction: Any = label
                shown = "{} ({:.2f})".format(label, float(probs.max()))
            else:
                prediction = evalsets.pair_similarity(sample, encoded["attention_mask"])
                shown = "{:.4f}".format(prediction)
            if reference is None:
                reference = prediction
            same = prediction == reference if loaded.task == "classification" else abs(prediction - reference) <= SIMILARITY_TOLERANCE
            rows.append({"text": text if isinstance(text, str) else " | ".join(text), "backend": name,
                         "prediction" if loaded.task == "classification" else "similarity": shown,
                         "agrees with cpu": "yes" if same else "NO",
                         "tokens used / compiled": "{} / {}".format(real_tokens, config.max_seq_length * rows_per_sample),
                         "latency (ms)": _ms(statistics.median(times))})
    return pd.DataFrame(rows)


def shape_lesson(config: Config, loaded: Any, engines: Dict[str, Any]) -> List[str]:
    """What happens when an input of another length meets each engine: eager PyTorch runs it,
    the fixed-shape ONNX session refuses it (as a GroqChip program would). Returns the lines shown."""
    from labkit.testbeds.groq import evalsets

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


def make_run(config: Config, loaded: Any, data: Any, result: GroqResult, custom_table: Any = None):
    """A labkit.results.Run holding the table's numbers (record it with labkit.results.record).

    Metric names are those labkit.logs gives a GroqFlow log ("cpu_accuracy",
    "groq_e2e_latency_ms", "groq_onchip_ips", ...), so runs made here and runs read from the
    testbed tabulate side by side; "<source>_loop_latency_ms" and
    "<source>_compile_input_latency_ms" add the two kinds of latency.
    """
    from labkit.devices import environment
    from labkit.results import Run

    exercise = EXERCISE if result.task == "classification" else "groq/minilm"
    run = Run(exercise, source="testbed" if "groq" in result.latency else "portable", params=config.to_dict())
    for name, lat in result.latency.items():
        if result.task == "classification":
            run.add_metric("{}_accuracy".format(name), round(result.scores[name] * 100, 4), "%")
        else:
            run.add_metric("{}_spearman".format(name), result.scores[name])
        run.add_metric("{}_e2e_latency_ms".format(name), lat["end_to_end"] * 1000, "ms")
        run.add_metric("{}_e2e_ips".format(name), result.batch_size / lat["end_to_end"], "inferences/s")
        if lat.get("on_chip"):
            run.add_metric("{}_onchip_latency_ms".format(name), lat["on_chip"] * 1000, "ms")
            run.add_metric("{}_onchip_ips".format(name), result.batch_size / lat["on_chip"], "inferences/s")
        run.add_metric("{}_loop_latency_ms".format(name), lat["loop"] * 1000, "ms")
        run.add_metric("{}_compile_input_latency_ms".format(name), lat["compile_inputs"] * 1000, "ms")
        if name != "cpu":
            run.add_metric("{}_disagreements".format(name), len(result.disagreements[name]))
    run.add_metric("samples", result.samples)
    run.notes.extend(loaded.notes + data.notes + result.notes)
    run.notes.append("data: " + data.name)
    run.notes.append("end-to-end latency: the dataset loop for host backends, benchmark() on the compile-time "
                     "inputs for groq (as GroqFlow's proof point reports them)")
    if custom_table is not None:
        run.notes.append("custom_text run on {} backend(s)".format(len(result.latency)))
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


# ---------------------------------------------------------------------------------------------
# Testbed logs


_RUN_KEYS = (("accuracy", "Accuracy"), ("spearman", "Spearman Rank Correlation Coefficient"),
             ("e2e_latency_ms", "end-to-end latency (ms)"), ("e2e_ips", "end-to-end IPS"),
             ("onchip_latency_ms", "on-chip latency (ms)"), ("onchip_ips", "on-chip IPS"))


def table_from_runs(runs: Sequence[Any]):
    """GroqFlow's table from run records: a log read by labkit.logs, or runs recorded here.

    Metrics named "<source>_<measure>" ("cpu_accuracy", "groq_onchip_latency_ms") become one
    row per source and run; a run with none is shown as its flat record.
    """
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
    import labkit.logs

    report = labkit.logs.read(path)
    notes = list(getattr(report, "notes", []) or [])
    for run in report.runs:
        notes.extend(n for n in run.notes if n not in notes)
    for note in notes:
        print("NOTE:", note)
    return table_from_runs(report.runs)


def _display(obj: Any) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover
        print(obj)
        return
    if get_ipython() is not None:
        display(obj)
    else:
        print(obj)
