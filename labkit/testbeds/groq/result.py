"""What :func:`labkit.testbeds.groq.evaluate` measured (:class:`GroqResult` and its tables), and
what a run made here keeps beyond its record (:class:`GroqDetails`, ``run.details``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from labkit.testbeds.groq.spec import SIMILARITY_TOLERANCE

__all__ = ["GroqResult", "GroqDetails", "format_ms"]


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
