"""Record what a run measured into its notebook, and read records back.

One record format everywhere (see docs/records.md): what a local run records, what a testbed
log is read into, what a sweep tabulates and what a rubric grades are all :class:`Run`.

Records are scrapbook-compatible display outputs (mimetype
``application/scrapbook.scrap.json+json``), so ``scrapbook.read_notebook`` reads them too,
but labkit does not depend on that unmaintained package.

    labkit results runs/mnist.ipynb        # one JSON line per notebook
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__all__ = ["Run", "record", "read", "read_runs", "collect", "SCRAP_MIME", "NotebookResults"]

SCRAP_MIME = "application/scrapbook.scrap.json+json"
RECORD_VERSION = 1

#: Run.status values.
STATUSES = ("complete", "incomplete", "failed", "diverged")


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
        data["version"] = RECORD_VERSION
        return _json_safe(data)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Run":
        data = _json_restore(dict(data))
        data.pop("version", None)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def flat(self) -> Dict[str, Any]:
        """One row for a table: exercise, source, status, params and metrics side by side."""
        row: Dict[str, Any] = {"exercise": self.exercise, "source": self.source, "status": self.status}
        row.update(self.params)
        row.update(self.metrics)
        return row


def _json_safe(value: Any) -> Any:
    """JSON has no NaN or infinity (a diverged loss has both): store them as text."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf', '-inf'
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return _json_safe(value.item())
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _json_restore(value: Any) -> Any:
    if isinstance(value, str) and value in ("nan", "inf", "-inf"):
        return float(value)
    if isinstance(value, dict):
        return {k: _json_restore(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_restore(v) for v in value]
    return value


def record(run: Union[Run, Mapping[str, Any]], name: str = "run") -> Dict[str, Any]:
    """Record ``run`` (a :class:`Run` or any JSON-able mapping) in the executing notebook.

    Outside a notebook kernel this only returns the payload, so library code can call it
    unconditionally.
    """
    data = run.to_dict() if isinstance(run, Run) else _json_safe(dict(run))
    payload = {"name": name, "data": data, "encoder": "json", "version": 1}
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # pragma: no cover - IPython ships with every kernel
        return payload
    if get_ipython() is not None:
        display(
            {SCRAP_MIME: payload},
            raw=True,
            metadata={"scrapbook": {"name": name, "data": True, "display": False}},
        )
    return payload


@dataclass
class NotebookResults:
    """The records and run facts of one executed notebook."""

    path: str
    parameters: Dict[str, Any]
    records: Dict[str, Any]
    error: Optional[str] = None

    @property
    def runs(self) -> List[Run]:
        found = []
        for data in self.records.values():
            if isinstance(data, dict) and "exercise" in data and "metrics" in data:
                found.append(Run.from_dict(data))
        return found

    def to_dict(self) -> Dict[str, Any]:
        return {"notebook": self.path, "parameters": self.parameters, "records": self.records, "error": self.error}


def read(path: Union[str, os.PathLike]) -> NotebookResults:
    """Read the records, papermill parameters and any execution error of one notebook."""
    import nbformat

    path = os.fspath(path)
    try:
        nb = nbformat.read(path, as_version=4)
    except FileNotFoundError:
        raise FileNotFoundError("{}: no such notebook".format(path)) from None
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
                records[payload["name"]] = _json_restore(payload.get("data"))
            if output.get("output_type") == "error" and error is None:
                error = "{}: {}".format(output.get("ename", "Error"), output.get("evalue", ""))
    papermill = nb.metadata.get("papermill", {})
    if error is None and papermill.get("exception"):
        error = "execution failed"
    return NotebookResults(path, dict(papermill.get("parameters", {})), records, error)


def read_runs(paths: Iterable[Union[str, os.PathLike]]) -> List[Run]:
    """Every :class:`Run` recorded in the given notebooks."""
    runs: List[Run] = []
    for path in paths:
        runs.extend(read(path).runs)
    return runs


def collect(path: Union[str, os.PathLike, Iterable[Union[str, os.PathLike]]]):
    """A pandas DataFrame with one row per recorded run.

    ``path`` is a notebook, a folder of executed notebooks (searched recursively), or a list
    of notebooks. A sweep folder (``labkit sweep --out``) gives its results.csv table: one
    row per run with parameters, seed, metrics, status, cause and duration.
    """
    import pandas as pd

    if isinstance(path, (str, os.PathLike)) and os.path.isfile(os.path.join(os.fspath(path), "sweep.json")):
        from labkit import sweep_report

        return sweep_report.table(os.fspath(path))

    rows = []
    for nb_path in _notebook_paths(path):
        results = read(nb_path)
        for run in results.runs:
            row = {"notebook": os.fspath(nb_path)}
            row.update(run.flat())
            rows.append(row)
    return pd.DataFrame(rows)


def _notebook_paths(path: Any) -> List[str]:
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if os.path.isdir(path):
            found = []
            for root, _dirs, files in os.walk(path):
                found.extend(os.path.join(root, f) for f in files if f.endswith(".ipynb"))
            return sorted(found)
        return [path]
    return [os.fspath(p) for p in path]


def main(paths: Sequence[str]) -> int:
    """``labkit results PATH...``: one JSON line per notebook."""
    status = 0
    for nb_path in [p for path in paths for p in _notebook_paths(path)]:
        try:
            print(json.dumps(read(nb_path).to_dict()))
        except (OSError, ValueError) as exc:
            print("labkit results: {}".format(exc), file=__import__("sys").stderr)
            status = 1
    return status
