"""An exercise's table of metrics: each name a run records, its unit, what it means, and which
are primary (what a summary leads with) and which are timings (they change with the machine's load).

    TABLE = MetricTable(("acme/classifier",),
                        Metric("test_accuracy", "%", "share of test samples classified right", primary=True),
                        Metric("epoch_time", "s", "seconds per steady epoch", primary=True, timing=True))
    TABLE.check(run)               # [] or ["metric foo: not in the table of acme/classifier", ...]

Each exercise writes its table in its ``metrics.py``; its run, log reader, report, sweeps and the
homework read names and units from there, and tests/test_metric_tables.py fails when a run or a
log reader records a metric the table lacks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Sequence, Tuple, Union

from labkit.results import Run

__all__ = ["Metric", "MetricTable"]


@dataclass(frozen=True)
class Metric:
    """One metric: its record name, its unit ("" for a count, a loss or a flag), one sentence on what it means."""

    name: str
    unit: str
    meaning: str
    primary: bool = False
    timing: bool = False


class MetricTable:
    """The metrics of one exercise (or of several that share them, e.g. every modelzoo log), in order."""

    def __init__(self, exercises: Sequence[str], *metrics: Metric) -> None:
        self.exercises: Tuple[str, ...] = tuple(exercises)
        self._metrics: Dict[str, Metric] = {}
        for metric in metrics:
            if metric.name in self._metrics:
                raise ValueError("metric {!r} is twice in the table of {}".format(metric.name, self.title))
            self._metrics[metric.name] = metric

    @property
    def title(self) -> str:
        return ", ".join(self.exercises)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())

    def __len__(self) -> int:
        return len(self._metrics)

    def __contains__(self, name: object) -> bool:
        return name in self._metrics

    def __getitem__(self, name: str) -> Metric:
        if name not in self._metrics:
            raise KeyError("metric {!r} is not in the table of {} (its metrics: {})".format(
                name, self.title, ", ".join(self._metrics)))
        return self._metrics[name]

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(self._metrics)

    @property
    def primary(self) -> Tuple[str, ...]:
        """The metrics a summary leads with, in the table's order."""
        return tuple(m.name for m in self if m.primary)

    @property
    def timings(self) -> Tuple[str, ...]:
        """Times and speeds: they depend on the machine and its load, so tests and grading do not compare them."""
        return tuple(m.name for m in self if m.timing)

    def unit(self, name: str) -> str:
        return self[name].unit

    def select(self, *names: str) -> Tuple[str, ...]:
        """``names``, each checked to be in the table (a KeyError names the one that is not)."""
        return tuple(self[name].name for name in names)

    def add(self, run: Run, name: str, value: Any) -> None:
        """``run.add_metric(name, value, unit)`` with the table's unit."""
        run.add_metric(name, value, self.unit(name))

    def check(self, run: Union[Run, Mapping[str, Any]]) -> List[str]:
        """What in ``run`` (a :class:`Run` or its record) disagrees with the table: unknown metrics, wrong units.

        A recorded unit may carry a note after the table's unit ("tokens/s (logged as sequences/s)").
        """
        data = run.to_dict() if isinstance(run, Run) else run
        units = data.get("units") or {}
        problems = []
        for name in data.get("metrics") or {}:
            if name not in self._metrics:
                problems.append("metric {}: not in the table of {}".format(name, self.title))
                continue
            want, got = self._metrics[name].unit, units.get(name, "")
            if got != want and not (want and got.startswith(want + " (")):
                problems.append("metric {}: recorded in {!r}, the table of {} says {!r}".format(
                    name, got, self.title, want))
        return problems

    def frame(self):
        """The table as a pandas DataFrame (index: metric): unit, meaning, primary, timing."""
        import pandas as pd

        rows = [{"metric": m.name, "unit": m.unit, "meaning": m.meaning, "primary": m.primary, "timing": m.timing}
                for m in self]
        return pd.DataFrame(rows, columns=["metric", "unit", "meaning", "primary", "timing"]).set_index("metric")

    def markdown(self) -> str:
        """The table in Markdown, for the docs (docs/metrics.md)."""
        lines = ["| metric | unit | meaning | primary | timing |", "|---|---|---|---|---|"]
        for m in self:
            lines.append("| `{}` | {} | {} | {} | {} |".format(m.name, m.unit, m.meaning.replace("|", "\\|"),
                                                               "yes" if m.primary else "", "yes" if m.timing else ""))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return self.frame()._repr_html_()

    def __repr__(self) -> str:
        return "MetricTable({!r}, {} metrics)".format(self.exercises, len(self))
