"""The student's own sentences (``custom_text``) on every backend, and what a fixed compiled
shape means when an input of another length arrives."""

from __future__ import annotations

import statistics
import time
from itertools import combinations
from typing import Any, Dict, List, Optional, Tuple

from labkit.params import Config
from labkit.results import same_value
from labkit.testbeds.groq import evalsets
from labkit.testbeds.groq.report import details_of
from labkit.testbeds.groq.result import format_ms
from labkit.testbeds.groq.spec import SIMILARITY_TOLERANCE
from labkit.testbeds.groq.steps import to_batches

__all__ = ["custom", "shape_lesson"]


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
        for sentence in config.custom_text:
            encoded, _ = evalsets.encode_sentence(loaded.tokenizer, sentence, config.max_seq_length)
            items.append((sentence, encoded))
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
        batch, _ = to_batches([encoded], config.batch_size)
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
