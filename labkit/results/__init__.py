"""Record what a run measured into its notebook, and read records back.

One record format everywhere: what a local run records, what a testbed log is read into, what a
sweep tabulates and what a rubric grades are all :class:`Run`. Records are scrapbook-compatible
display outputs (``application/scrapbook.scrap.json+json``), so ``scrapbook.read_notebook``
reads them too, but labkit does not depend on that unmaintained package.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from labkit.files import NotAFile, regular_file

__all__ = ["Run", "record", "read", "collect", "notebook_paths", "output_lines", "compare_records", "same_value",
           "SCRAP_MIME", "NotebookResults", "json_safe", "json_restore"]

SCRAP_MIME = "application/scrapbook.scrap.json+json"
RECORD_VERSION = 1

#: Run.status values. "interrupted": stopped by the student (Kernel -> Interrupt); its metrics
#: cover only the steps before the stop, and sweeps, summaries and grading never count it as complete.
STATUSES = ("complete", "incomplete", "failed", "diverged", "interrupted")


@dataclass
class Run:
    """What one run did and measured.

    - ``exercise``: "graphcore/mnist", "cerebras/bert_large", ...
    - ``source``: how it ran: "portable" (labkit's PyTorch path), "testbed" (the vendor stack
      driven by labkit) or "log" (read from a testbed log).
    - ``params``: the effective parameters, after defaults (what actually ran).
    - ``metrics``: name -> number (or short text); ``units``: name -> unit ("%", "samples/s").
    - ``series``: name -> {"x": [...], "y": [...], "x_label": "step"}, e.g. loss over steps.
    - ``notes``: sentences a student should read (misreadings, substitutions, warnings).
    - ``environment``: device, library versions, host.
    - ``stopped_in``: for an interrupted run, the phase the interrupt came in (labkit.interrupts).
    """

    exercise: str
    source: str = "portable"
    status: str = "complete"
    params: Dict[str, Any] = field(default_factory=dict)
    metrics: Dict[str, Any] = field(default_factory=dict)
    units: Dict[str, str] = field(default_factory=dict)
    series: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    notes: List[str] = field(default_factory=list)
    environment: Dict[str, Any] = field(default_factory=dict)
    #: the phase an interrupt came in ("testing", "epoch 2/10", "summary"); "" for a run not interrupted
    stopped_in: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError("Run.status must be one of {}, not {!r}".format(STATUSES, self.status))

    def add_metric(self, name: str, value: Any, unit: str = "") -> None:
        self.metrics[name] = value
        if unit:
            self.units[name] = unit

    def add_series(self, name: str, x: Sequence[float], y: Sequence[float], x_label: str = "step") -> None:
        self.series[name] = {"x": list(x), "y": list(y), "x_label": x_label}

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        if not data["stopped_in"]:  # a run that was not interrupted keeps the record it always had
            del data["stopped_in"]
        data["version"] = RECORD_VERSION
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Run":
        data = json_restore(dict(data))
        data.pop("version", None)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def table(self):
        """The metrics as a one-column pandas table, each value with its unit ("98.12%", "0.25 s")."""
        import pandas as pd

        # an interrupted run's rows first: the numbers below cover only part of the run
        rows = [{"metric": name, "value": text} for name, text in self.partial_rows()]
        for name, value in self.metrics.items():
            unit = self.units.get(name, "")
            text = "{:.2f}".format(value) if isinstance(value, float) else str(value)
            rows.append({"metric": name, "value": text + unit if unit == "%" else (text + " " + unit).strip()})
        return pd.DataFrame(rows, columns=["metric", "value"]).set_index("metric")

    def partial(self) -> str:
        """"interrupted: partial run" for an interrupted run (stopped by the student), else ""."""
        return "interrupted: partial run" if self.status == "interrupted" else ""

    def mark_interrupted(self, line: str, consequence: str) -> None:
        """Status ``interrupted`` and the one note format :meth:`stopped_at` reads.

        ``line`` is what :func:`labkit.interrupts.where` printed ("interrupted at epoch 2/10, step 40/150");
        ``consequence`` says what the partial run lacks.
        """
        self.status = "interrupted"
        self.notes.append("{}{}: a partial run; {}".format(line[:1].upper(), line[1:], consequence))

    def stopped_at(self) -> str:
        """Where an interrupted run stopped ("epoch 2/10, step 40/150"), from its note; else ""."""
        for note in self.notes if self.status == "interrupted" else []:
            if note.startswith("Interrupted at "):
                return note[len("Interrupted at "):].split(":", 1)[0]
        return ""

    def partial_rows(self) -> List[Tuple[str, str]]:
        """(metric, value) rows that a metrics table shows first for an interrupted run."""
        if not self.partial():
            return []
        return ([("status", self.partial())] + ([("stopped in", self.stopped_in)] if self.stopped_in else [])
                + ([("stopped at", self.stopped_at())] if self.stopped_at() else []))

    def partial_title(self) -> str:
        """A plot title's second line for an interrupted run, else ""."""
        if not self.partial():
            return ""
        return "\n" + self.partial() + (", stopped at " + self.stopped_at() if self.stopped_at() else "")

    def flat(self) -> Dict[str, Any]:
        """One row for a table: exercise, source, status, params and metrics side by side."""
        return {"exercise": self.exercise, "source": self.source, "status": self.status, **self.params, **self.metrics}


def json_safe(value: Any) -> Any:
    """JSON has no NaN or infinity (a diverged loss has both): store them as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf'
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return json_safe(value.item())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def json_restore(value: Any) -> Any:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, dict):
        return {k: json_restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_restore(v) for v in value]
    return value


def scrap(run: Union[Run, Mapping[str, Any]], name: str = "run") -> Dict[str, Any]:
    """The scrapbook payload that :func:`record` displays."""
    data = run.to_dict() if isinstance(run, Run) else json_safe(dict(run))
    return {"name": name, "data": data, "encoder": "json", "version": 1}


def record(run: Union[Run, Mapping[str, Any]], name: str = "run") -> None:
    """Record ``run`` (a :class:`Run` or any JSON-able mapping) in the executing notebook; outside a
    kernel it does nothing, so library code can call it unconditionally."""
    from IPython import get_ipython
    from IPython.display import display

    payload = scrap(run, name)
    if get_ipython() is not None:
        from labkit.interrupts.cell import deferred, holding_a_run

        with deferred(returning=sys._getframe()):  # a Ctrl-C here would lose the record of a finished run
            display(
                {SCRAP_MIME: payload},
                raw=True,
                metadata={"scrapbook": {"name": name, "data": True, "display": False}},
            )
            holding_a_run(False)


@dataclass
class NotebookResults:
    """The records and run facts of one executed notebook."""

    path: str
    parameters: Dict[str, Any]
    records: Dict[str, Any]
    error: Optional[str] = None
    #: the notebook's metadata (papermill's facts, labkit's spec), for readers that need more than records
    metadata: Dict[str, Any] = field(default_factory=dict)

    @property
    def runs(self) -> List[Run]:
        return [Run.from_dict(data) for data in self.records.values()
                if isinstance(data, dict) and "exercise" in data and "metrics" in data]

    def to_dict(self) -> Dict[str, Any]:
        return {"notebook": self.path, "parameters": self.parameters, "records": self.records, "error": self.error}


def read(path: Union[str, os.PathLike]) -> NotebookResults:
    """Read the records, papermill parameters and any execution error of one notebook."""
    import nbformat

    path = os.fspath(path)
    try:
        regular_file(path, "notebook")  # a FIFO would block the read for ever
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise FileNotFoundError("{}: no such notebook".format(path)) from None
    except NotAFile:
        raise  # its own sentence already names the notebook and what it is
    except Exception as exc:
        raise ValueError("{}: not a readable notebook ({})".format(path, exc)) from None
    records: Dict[str, Any] = {}
    error = None
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            payload = output.get("data", {}).get(SCRAP_MIME)
            if isinstance(payload, dict) and "name" in payload:
                records[payload["name"]] = json_restore(payload.get("data"))
            if output.get("output_type") == "error" and error is None:
                error = "{}: {}".format(output.get("ename", "Error"), output.get("evalue", ""))
    papermill = nb.metadata.get("papermill", {})
    if error is None and papermill.get("exception"):
        error = "execution failed"
    return NotebookResults(path, dict(papermill.get("parameters", {})), records, error, dict(nb.metadata))


def collect(path: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]):
    """A pandas DataFrame with one row per run recorded in ``path`` (:func:`notebook_paths`); a
    sweep's own table, with each run's status, cause and duration, is ``labkit.sweep.collect(out)``."""
    import pandas as pd

    return pd.DataFrame([{"notebook": os.fspath(nb_path), **run.flat()}
                         for nb_path in notebook_paths(path) for run in read(nb_path).runs])


def notebook_paths(path: Any) -> List[str]:
    """The notebooks ``path`` names: itself, those under a folder (sorted, recursively), or a list's."""
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if os.path.isdir(path):
            found = []
            for root, _dirs, files in os.walk(path):
                found.extend(os.path.join(root, f) for f in files if f.endswith(".ipynb"))
            return sorted(found)
        return [path]
    return [os.fspath(p) for p in path]


def output_lines(path: Union[str, os.PathLike], containing: str) -> List[str]:
    """Lines of a notebook's printed output that contain ``containing`` (progress-bar frames
    are dropped: only the text after the last carriage return of a line counts)."""
    import nbformat

    nb = nbformat.read(os.fspath(regular_file(path, "notebook")), as_version=4)
    found = []
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            for line in output.get("text", "").splitlines():
                line = line.rsplit("\r", 1)[-1]
                if containing in line:
                    found.append(line)
    return found


#: Units whose values change from run to run on the same inputs (time and speed).
UNSTABLE_UNITS = ("s", "ms", "us", "min", "h", "samples/s", "samples/sec", "images/s", "sequences/s",
                  "tokens/s", "IPS", "it/s", "steps/s", "TFLOP/s")
#: Metric names that are timings even when recorded without a unit.
UNSTABLE_NAME_PARTS = ("time", "throughput", "latency", "seconds", "rate", "ips", "duration", "mfu")


def is_unstable(run: Mapping[str, Any], metric: str) -> bool:
    unit = (run.get("units") or {}).get(metric, "")
    return unit in UNSTABLE_UNITS or any(part in metric.lower() for part in UNSTABLE_NAME_PARTS)


def compare_records(expected: Mapping[str, Any], actual: Mapping[str, Any], rtol: float = 1e-6,
                    atol: float = 1e-9,
                    close: Optional[Callable[[str, Optional[str], Any, Any], bool]] = None) -> List[str]:
    """Differences between two run records, ignoring what legitimately varies between runs.

    Timings and speeds (by unit or name), the environment and the time series of timings are
    skipped; other numbers are compared with a tolerance; everything else exactly. Used by the
    golden-notebook tests and by grading's reproduction check. ``close(name, unit, expected,
    actual)``, when given, decides for each metric value (and each point of a series) instead
    of ``rtol``/``atol``: the golden tests pass tests/golden/numeric.py's per-quantity rule.
    """
    units = expected.get("units") or {}

    def same(name: str, a: Any, b: Any) -> bool:
        if close is None:
            return same_value(a, b, rtol, atol)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            return len(a) == len(b) and all(same(name, x, y) for x, y in zip(a, b))
        return close(name, units.get(name), json_restore(a), json_restore(b))

    problems: List[str] = []
    for key in ("exercise", "source", "status"):
        if expected.get(key) != actual.get(key):
            problems.append("{}: expected {!r}, got {!r}".format(key, expected.get(key), actual.get(key)))
    # A parameter the expected record lacks was added to labkit after it was made (precision, say):
    # its re-run is compared on the parameters the record had.
    exp_params, act_params = expected.get("params") or {}, actual.get("params") or {}
    for name in exp_params:
        if name not in act_params or exp_params[name] != act_params[name]:
            problems.append("params: {}: expected {!r}, got {!r}".format(
                name, exp_params[name], act_params.get(name, "nothing")))
    exp_metrics = expected.get("metrics") or {}
    act_metrics = actual.get("metrics") or {}
    for name in sorted(set(exp_metrics) | set(act_metrics)):
        if is_unstable(expected, name) and name in act_metrics:
            continue
        if name not in act_metrics or name not in exp_metrics:
            problems.append("metric {}: present in only one record".format(name))
            continue
        a, b = exp_metrics[name], act_metrics[name]
        if not same(name, a, b):
            problems.append("metric {}: expected {!r}, got {!r}".format(name, a, b))
    for name, series in (expected.get("series") or {}).items():
        if is_unstable(expected, name):
            continue
        other = (actual.get("series") or {}).get(name)
        if other is None or not same(name, series.get("y"), other.get("y")):
            problems.append("series {}: differs".format(name))
    return problems


def same_value(a: Any, b: Any, rtol: float = 1e-9, atol: float = 1e-12) -> bool:
    """The one numeric closeness rule: numbers within ``atol + rtol * max(|a|, |b|)``.

    Symmetric (the order of ``a`` and ``b`` never matters); 1 and 1.0 alike; NaN equal to NaN
    and ``"nan"`` / ``"inf"`` as JSON stores them equal to the floats; numpy scalars are numbers,
    booleans are not; lists and tuples item by item; anything else by ``==``.
    """
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y, rtol, atol) for x, y in zip(a, b))
    a, b = json_restore(a), json_restore(b)  # "nan" as stored in JSON
    if _is_number(a) and _is_number(b):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= atol + rtol * max(abs(a), abs(b))
    return bool(a == b)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)
