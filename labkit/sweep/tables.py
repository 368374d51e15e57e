"""A sweep's numbers: results.csv as a DataFrame (:func:`collect`) and the statistics per
configuration and metric (:func:`summary_frame`), from ``runs/*.json``, so they show what is
actually done (also after an interrupt). docs/sweeps.md's "Statistics" and "Contended timings"
give the rules; the helpers below the two tables serve report.py.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, Dict, List, Tuple, Union

from labkit import exercises, stats
from labkit.sweep.planning import (MANIFEST, RUNS, SweepError, grid_points, is_sweep, read_json,
                                   same_grid_value)

__all__ = ["ALPHA", "CONTENDED_VERDICT", "read_manifest", "read_rows", "collect", "table", "summary_frame",
           "exercise_table", "contended_mask", "isnan", "fmt", "constant_metrics", "with_unit"]

#: The significance level of the "real difference" verdict.
ALPHA = 0.05
#: The columns of results.csv after the parameters and metrics, in their order.
_TAIL = ("status", "error", "timing_contended", "contention", "threads", "workers", "load_before", "load_after",
         "duration", "notebook", "gpu", "exercise", "run")
_FIXED_COLUMNS = _TAIL + ("units", "verdict_notes")
CONTENDED_VERDICT = "timings contended: not compared"


def read_manifest(out: str) -> Dict[str, Any]:
    """The sweep's sweep.json: its notebook, grid, seeds, repeats and baseline."""
    return read_json(os.path.join(out, MANIFEST))


def read_rows(out: str) -> Tuple[List[Dict[str, Any]], List[str]]:
    """The rows of ``OUT/runs/*.json``, and one sentence for each file that is no row (cut short,
    a FIFO, not a run's): those are left out, and a resumed sweep runs their points again."""
    from labkit.results import json_restore

    folder = os.path.join(out, RUNS)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    rows, problems = [], []
    for name in names:
        path = os.path.join(folder, name)
        try:
            row = json_restore(read_json(path))
        except SweepError as exc:
            problems.append("{}; left out".format(exc))
            continue
        if "run" not in row or "status" not in row:
            problems.append("{}: not a run's row (it has no 'run' and 'status'); left out".format(path))
            continue
        rows.append(row)
    return rows, problems


def table(out: str):
    """results.csv as a DataFrame: one row per finished run, in the sweep's order. Row files that
    cannot be read are left out and named in ``attrs["unreadable"]``."""
    import pandas as pd

    manifest = read_manifest(out)
    rows, problems = read_rows(out)
    units: Dict[str, str] = {}
    notes: Dict[str, List[str]] = {}
    for row in rows:
        units.update(row.pop("units", None) or {})  # kept beside the table, not as a column
        verdicts = row.pop("verdict_notes", None)
        if verdicts:
            notes[row["run"]] = verdicts
    parameters = list(manifest["grid"]) + ["seed"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        frame = pd.DataFrame(columns=parameters + ["status", "error", "duration"])
        frame.attrs["unreadable"] = problems
        return frame
    metrics = [c for c in frame.columns if c not in parameters and c not in _FIXED_COLUMNS]
    order = parameters + metrics + [c for c in _TAIL if c in frame]
    frame = frame.reindex(columns=order).sort_values(parameters, kind="stable").reset_index(drop=True)
    frame.attrs["units"] = units
    frame.attrs["notes"] = notes
    frame.attrs["unreadable"] = problems
    return frame


def collect(out: Union[str, "os.PathLike[str]"]):
    """A sweep folder's table (its results.csv) as a DataFrame: one row per finished run with its
    parameters, seed, metrics, status, cause and duration, rebuilt from the runs done so far."""
    out = os.fspath(out)
    if not is_sweep(out):
        raise SweepError("{} is not a sweep folder (it has no {}): give the --out of a `labkit sweep`; "
                         "for executed notebooks use labkit.results.collect".format(out, MANIFEST))
    frame = table(out)
    for problem in frame.attrs["unreadable"]:
        warnings.warn(problem, stacklevel=2)
    return frame


def exercise_table(frame) -> Any:
    """The :class:`labkit.metrics.MetricTable` of the one exercise the sweep ran (from the registry), else None."""
    names = set(frame["exercise"].dropna()) if "exercise" in frame else set()
    return exercises.metric_table(str(names.pop())) if len(names) == 1 else None


def contended_mask(frame):
    """For each row, whether its timings were contended (``timing_contended`` true)."""
    if "timing_contended" not in frame:
        return frame.index != frame.index  # all False
    return frame["timing_contended"].map(lambda v: v is True or str(v).lower() == "true").astype(bool)


def numeric_metrics(frame, manifest: Dict[str, Any]) -> List[str]:
    """The metric columns that hold numbers (not bools) in every complete run."""
    import pandas as pd

    parameters = set(manifest["grid"]) | {"seed"}
    found = []
    for column in frame.columns:
        if column in parameters or column in _FIXED_COLUMNS:
            continue
        values = frame.loc[frame["status"] == "complete", column]
        if values.empty or values.map(lambda v: isinstance(v, bool)).any():
            continue
        if pd.to_numeric(values, errors="coerce").notna().all():
            found.append(column)
    return found


def summary_frame(out: str):
    """One row per configuration and metric: n, mean, std, 95 % CI, p vs baseline, verdict."""
    import pandas as pd

    from labkit.results import is_unstable

    manifest = read_manifest(out)
    frame = table(out)
    grid = list(manifest["grid"])
    baseline = manifest.get("baseline") or {}
    rows = []
    if frame.empty:
        return pd.DataFrame(rows)
    complete = frame[frame["status"] == "complete"]
    contended = complete[contended_mask(complete)]
    units, exercise = frame.attrs.get("units", {}), exercise_table(frame)
    for metric in numeric_metrics(frame, manifest):
        # a time or a speed depends on the machine's load, unlike accuracy and loss (the exercise's table says)
        timing = (exercise[metric].timing if exercise is not None and metric in exercise
                  else is_unstable({"units": units}, metric))
        base_values = _values(complete, grid, baseline, metric)
        base_contended = len(_values(contended, grid, baseline, metric)) if timing else 0
        for config in grid_points(manifest["grid"]):
            values = _values(complete, grid, config, metric)
            mean, std, low, high = stats.mean_ci(values)
            row: Dict[str, Any] = dict(config)
            row.update({"metric": metric, "n": len(values), "mean": mean, "std": std, "ci_low": low, "ci_high": high,
                        "timing": timing, "contended": len(_values(contended, grid, config, metric)) if timing else 0})
            if config == baseline:
                row.update({"diff": 0.0, "p": float("nan"), "verdict": "baseline"})
            else:
                _t, _df, p = stats.welch(values, base_values)
                diff = mean - (sum(base_values) / len(base_values)) if base_values and values else float("nan")
                if timing and (row["contended"] or base_contended):
                    verdict = CONTENDED_VERDICT
                elif p is None:
                    verdict = "cannot tell (needs >= 2 complete runs here and in the baseline)"
                elif p >= ALPHA:
                    verdict = "within noise"
                else:
                    verdict = "real difference"
                row.update({"diff": diff, "p": float("nan") if p is None else p, "verdict": verdict})
            rows.append(row)
    return pd.DataFrame(rows)


def _values(frame, grid: List[str], config: Dict[str, Any], metric: str) -> List[float]:
    # a plain list of bools (pandas warns on bool & str when a column of an empty frame has string
    # dtype), built from the columns' values, not row by row: cheap for a large grid
    columns = [frame[name].tolist() for name in grid]
    mask = [all(same_grid_value(v, config[name]) for v, name in zip(values, grid)) for values in zip(*columns)] \
        if grid else [True] * len(frame)
    return [float(v) for v in frame.loc[mask, metric] if v is not None and not isnan(v)]


def isnan(v: Any) -> bool:
    """A float NaN (an empty cell); anything else is not."""
    return isinstance(v, float) and math.isnan(v)


def fmt(x: Any) -> str:
    """A value as the summary writes it: 4 significant digits, "–" for NaN."""
    if isnan(x):
        return "–"
    return "{:.4g}".format(x) if isinstance(x, float) else str(x)


def constant_metrics(frame, manifest: Dict[str, Any]) -> Dict[str, Any]:
    """Metrics with one value over every complete run (stated once, not tabulated)."""
    complete = frame[frame["status"] == "complete"] if not frame.empty else frame
    found: Dict[str, Any] = {}
    if len(complete) < 2:
        return found
    for metric in numeric_metrics(frame, manifest):
        values = set(fmt(v) for v in complete[metric])
        if len(values) == 1:
            found[metric] = complete[metric].iloc[0]
    return found


def with_unit(metric: str, units: Dict[str, str]) -> str:
    """``metric (unit)`` for a table heading or an axis label, or the name alone."""
    return "{} ({})".format(metric, units[metric]) if units.get(metric) else metric
