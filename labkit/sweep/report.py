"""A sweep's tables and plots: results.csv, summary.md and one PNG per metric and parameter.

    labkit results runs/NAME                      # prints summary.md again
    labkit.results.collect("runs/NAME")           # results.csv as a DataFrame, in a notebook
    labkit.sweep.report.summary_frame("runs/NAME")  # one row per configuration and metric

The rows come from ``runs/*.json``, each written once its run ended, so the tables are
rebuilt from what is actually done (also after an interrupted sweep).

Statistics (see :mod:`labkit.sweep.stats`): per configuration the mean, the sample standard
deviation and a 95 % confidence interval of the mean (Student t with n-1 degrees of
freedom). A configuration's difference from the baseline is "within noise" when Welch's
two-sided t-test (unequal variances) gives p >= 0.05. Only runs with status ``complete``
enter the statistics; the others are listed with their cause.

Timings (metrics with a time or speed unit or name, see :func:`labkit.results.is_unstable`)
are per worker share (:mod:`labkit.sweep.share`). A run whose share overlapped another's, or
that ran on a busy machine, has ``timing_contended`` set in results.csv; a timing metric of a
configuration with such a run (or whose baseline has one) gets no "real difference" verdict.

summary.md leads with the exercise's primary metrics (its table of metrics, e.g.
``labkit.testbeds.graphcore.metrics``), then the others; a parameter with one value and a metric
equal in every run are stated once at the top, not repeated in the tables.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Optional

from labkit.sweep import stats
from labkit.sweep.planning import MANIFEST, RUNS, write_atomic

__all__ = ["table", "summary_frame", "summary_markdown", "write_reports", "plot_files", "counts", "is_timing",
           "primary_metrics", "exercise_table"]

ALPHA = 0.05
_FIXED_COLUMNS = ("run", "status", "error", "duration", "notebook", "gpu", "exercise", "threads", "workers",
                  "load_before", "load_after", "timing_contended", "contention", "units", "verdict_notes")
CONTENDED_VERDICT = "timings contended: not compared"


def _manifest(out: str) -> Dict[str, Any]:
    with open(os.path.join(out, MANIFEST)) as f:
        return json.load(f)


def table(out: str):
    """results.csv as a DataFrame: one row per finished run, in the sweep's order."""
    import pandas as pd

    from labkit.results import json_restore

    manifest = _manifest(out)
    rows = []
    folder = os.path.join(out, RUNS)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    units: Dict[str, str] = {}
    notes: Dict[str, List[str]] = {}
    for name in names:
        with open(os.path.join(folder, name)) as f:
            row = json_restore(json.load(f))
        units.update(row.pop("units", None) or {})  # kept beside the table, not as a column
        verdicts = row.pop("verdict_notes", None)
        if verdicts:
            notes[row.get("run", name)] = verdicts
        rows.append(row)
    parameters = list(manifest["grid"]) + ["seed"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=parameters + ["status", "error", "duration"])
    metrics = [c for c in frame.columns if c not in parameters and c not in _FIXED_COLUMNS]
    tail = ("status", "error", "timing_contended", "contention", "threads", "workers", "load_before", "load_after",
            "duration", "notebook", "gpu", "exercise", "run")
    order = parameters + metrics + [c for c in tail if c in frame]
    frame = frame[order].sort_values(parameters, kind="stable").reset_index(drop=True)
    frame.attrs["units"] = units
    frame.attrs["notes"] = notes
    return frame


def is_timing(metric: str, units: Dict[str, str], table: Any = None) -> bool:
    """A time or a speed: it depends on the machine's load, unlike accuracy and loss (the exercise's table says)."""
    from labkit.results import is_unstable

    return table.is_timing(metric) if table is not None and metric in table else is_unstable({"units": units}, metric)


def primary_metrics(frame) -> List[str]:
    """The primary metrics in the exercise's table of metrics, when the sweep ran one exercise."""
    table = exercise_table(frame)
    return list(table.primary) if table is not None else []


def exercise_table(frame) -> Any:
    """The :class:`labkit.metrics.MetricTable` of the one exercise the sweep ran, else None."""
    from labkit.testbeds.metric_tables import table_for

    exercises = set(frame["exercise"].dropna()) if "exercise" in frame else set()
    return table_for(str(exercises.pop())) if len(exercises) == 1 else None


def _contended(frame):
    if "timing_contended" not in frame:
        return frame.index != frame.index  # all False
    return frame["timing_contended"].map(lambda v: v is True or str(v).lower() == "true").astype(bool)


def numeric_metrics(frame, manifest: Dict[str, Any]) -> List[str]:
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

    manifest = _manifest(out)
    frame = table(out)
    grid = list(manifest["grid"])
    baseline = manifest.get("baseline") or {}
    rows = []
    if frame.empty:
        return pd.DataFrame(rows)
    complete = frame[frame["status"] == "complete"]
    contended = complete[_contended(complete)]
    units, exercise = frame.attrs.get("units", {}), exercise_table(frame)
    for metric in numeric_metrics(frame, manifest):
        timing = is_timing(metric, units, exercise)
        base_values = _values(complete, grid, baseline, metric)
        base_contended = len(_values(contended, grid, baseline, metric)) if timing else 0
        for config in _configurations(manifest):
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


def _configurations(manifest: Dict[str, Any]) -> List[Dict[str, Any]]:
    import itertools

    names = list(manifest["grid"])
    return [dict(zip(names, v)) for v in itertools.product(*(manifest["grid"][n] for n in names))]


def _values(frame, grid: List[str], config: Dict[str, Any], metric: str) -> List[float]:
    # a plain list of bools (pandas warns on bool & str when a column of an empty frame has string
    # dtype), built from the columns' values, not row by row: cheap for a large grid
    columns = [frame[name].tolist() for name in grid]
    mask = [all(_same(v, config[name]) for v, name in zip(values, grid)) for values in zip(*columns)] \
        if grid else [True] * len(frame)
    return [float(v) for v in frame.loc[mask, metric] if v is not None and not _isnan(v)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def _isnan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if math.isnan(x):
            return "–"
        return "{:.4g}".format(x)
    return str(x)


def _constant_metrics(frame, manifest: Dict[str, Any]) -> Dict[str, Any]:
    """Metrics with one value over every complete run (stated once, not tabulated)."""
    complete = frame[frame["status"] == "complete"] if not frame.empty else frame
    found: Dict[str, Any] = {}
    if len(complete) < 2:
        return found
    for metric in numeric_metrics(frame, manifest):
        values = set(_fmt(v) for v in complete[metric])
        if len(values) == 1:
            found[metric] = complete[metric].iloc[0]
    return found


def _with_unit(metric: str, units: Dict[str, str]) -> str:
    return "{} ({})".format(metric, units[metric]) if units.get(metric) else metric


def _share_line(frame) -> Optional[str]:
    if "threads" not in frame or frame.empty:
        return None
    shares = sorted({(int(w), int(t)) for w, t in zip(frame["workers"], frame["threads"])
                     if str(w) not in ("", "nan") and str(t) not in ("", "nan")})
    if not shares:
        return None
    text = ", ".join("{} worker{} at once with {} thread{} each".format(w, "s" if w > 1 else "", t, "s" if t > 1 else "")
                     for w, t in shares)
    return ("- worker share: {} (on {} cores): **timings are per worker share** (what one run does with its "
            "threads while the others run), not the whole machine's speed".format(text, _cores()))


def _cores() -> int:
    from labkit.sweep.share import cores

    return cores()


def _contention_line(frame) -> Optional[str]:
    if frame.empty or "timing_contended" not in frame:
        return None
    hit = frame[_contended(frame)]
    loads = [v for v in list(frame.get("load_before", [])) + list(frame.get("load_after", []))
             if isinstance(v, (int, float)) and not _isnan(v)]
    measured = "load average measured before and after each run: {:.2f} to {:.2f}".format(
        min(loads), max(loads)) if loads else "load average not measured on this OS"
    if hit.empty:
        return "- contention: none ({}); timings are comparable".format(measured)
    kinds = []
    for cause in hit["contention"]:
        for part in str(cause).split("; "):
            kind = "a busy machine" if part.startswith("busy machine") else part
            if kind not in kinds:
                kinds.append(kind)
    return ("- contention: **{} of {} runs have contended timings** ({}; {}, on {} cores). Their timing metrics are "
            "marked `timing_contended` in results.csv and get no \"real difference\" verdict; accuracy and loss "
            "are not affected and are compared as usual".format(len(hit), len(frame), ", ".join(kinds), measured,
                                                                  _cores()))


def summary_markdown(out: str) -> str:
    manifest = _manifest(out)
    frame = table(out)
    summary = summary_frame(out)
    units = frame.attrs.get("units", {})
    grid = list(manifest["grid"])
    varied = [n for n in grid if len(manifest["grid"][n]) > 1]
    fixed = {n: manifest["grid"][n][0] for n in grid if len(manifest["grid"][n]) == 1}
    total = len(manifest["seeds"]) * max(1, len(_configurations(manifest)))
    complete = int((frame["status"] == "complete").sum()) if not frame.empty else 0
    lines = ["# Sweep of {}".format(os.path.basename(manifest["notebook"])), ""]
    lines.append("- notebook: `{}`".format(manifest["notebook"]))
    lines.append("- grid: {}; repeats: {} (seeds {})".format(
        ", ".join("{} = {}".format(k, ", ".join(map(str, manifest["grid"][k]))) for k in varied) or "(no parameter varied)",
        manifest["repeats"], ", ".join(map(str, manifest["seeds"]))))
    if fixed:
        lines.append("- same in every run: " + ", ".join("{} = {}".format(k, v) for k, v in fixed.items()))
    lines.append("- runs: {} of {} finished, {} complete, {} not complete".format(
        len(frame), total, complete, len(frame) - complete))
    base = {k: v for k, v in (manifest.get("baseline") or {}).items() if k in varied}
    lines.append("- baseline: {} ({})".format(", ".join("{} = {}".format(k, v) for k, v in base.items()) or "defaults",
                                              manifest.get("baseline_reason", "")))
    for extra in (_share_line(frame), _contention_line(frame)):
        if extra:
            lines.append(extra)
    constant = _constant_metrics(frame, manifest)
    if constant:
        lines.append("- equal in every complete run: " + ", ".join(
            "{} = {}{}".format(m, _fmt(v), " " + units[m] if units.get(m) else "") for m, v in constant.items()))
    lines.append("- statistics: mean and sample standard deviation over the complete runs of each configuration; "
                 "95 % CI = mean ± t(0.975, n−1)·std/√n. \"within noise\": Welch's two-sided t-test "
                 "(unequal variances) against the baseline gives p ≥ {}; \"real difference\": p < {}.".format(ALPHA, ALPHA))
    lines.append("")
    if not summary.empty:
        primary = [m for m in primary_metrics(frame) if m in set(summary["metric"])]
        order = primary + [m for m in dict.fromkeys(summary["metric"]) if m not in primary and m not in constant]
        for metric in order:
            part = summary[summary["metric"] == metric]
            timing = bool(part["timing"].iloc[0])
            title = _with_unit(metric, units) + (" — primary" if metric in primary else "")
            lines.append("## {}".format(title))
            lines.append("")
            if timing:
                lines.append("Per worker share; runs with contended timings are counted in the last column.")
                lines.append("")
            head = varied + ["n", "mean", "std", "95 % CI", "diff vs baseline", "p", "verdict"]
            head += ["contended runs"] if timing else []
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            for _, row in part.iterrows():
                ci = "–" if _isnan(row["ci_low"]) else "[{}, {}]".format(_fmt(row["ci_low"]), _fmt(row["ci_high"]))
                cells = [_fmt(row[n]) for n in varied] + [str(int(row["n"])), _fmt(row["mean"]), _fmt(row["std"]), ci,
                                                          _fmt(row["diff"]), _fmt(row["p"]), row["verdict"]]
                cells += [str(int(row["contended"]))] if timing else []
                lines.append("| " + " | ".join(cells) + " |")
            lines.append("")
    notes = frame.attrs.get("notes", {})
    if notes:
        lines.append("## What the runs say about themselves")
        lines.append("")
        for run, texts in notes.items():
            for text in texts:
                lines.append("- `{}`: {}".format(run, text))
        lines.append("")
    failed = frame[frame["status"] != "complete"] if not frame.empty else frame
    if len(failed):
        lines.append("## Runs not complete (left out of the statistics)")
        lines.append("")
        lines.append("| run | status | cause |")
        lines.append("|---|---|---|")
        for _, row in failed.iterrows():
            cause = str(row.get("error", "")).replace("|", "\\|").replace("\n", " ")
            lines.append("| {} | {} | {} |".format(row["run"], row["status"], cause[:200]))
        lines.append("")
    plots = plot_files(out)
    if plots:
        lines.append("Plots: " + ", ".join(plots))
        lines.append("")
    return "\n".join(lines)


def plot_files(out: str) -> List[str]:
    return sorted(n for n in os.listdir(out) if n.startswith("plot_") and n.endswith(".png"))


def _log_axis(values) -> bool:
    """A parameter that spans a decade or more (learning rates, batch sizes) reads on a log axis."""
    numbers = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return len(numbers) == len(list(values)) and len(numbers) > 1 and min(numbers) > 0 and \
        max(numbers) / min(numbers) >= 10.0


def write_plots(out: str) -> List[str]:
    """One PNG per numeric metric and varied parameter: every run as a point, beside the mean with
    its 95 % CI error bar; a log x axis for a parameter that spans a decade; units on the axes."""
    import matplotlib

    matplotlib.use("Agg", force=False) if not _pyplot_loaded() else None
    import matplotlib.pyplot as plt

    manifest = _manifest(out)
    frame = table(out)
    summary = summary_frame(out)
    units = frame.attrs.get("units", {})
    varied = [n for n, v in manifest["grid"].items() if len(v) > 1]
    written: List[str] = []
    if summary.empty:
        return written
    complete = frame[frame["status"] == "complete"]
    constant = _constant_metrics(frame, manifest)
    for metric, part in summary.groupby("metric", sort=False):
        if metric in constant:
            continue
        timing = bool(part["timing"].iloc[0])
        for name in varied:
            others = [n for n in varied if n != name]
            text = _is_text(manifest["grid"][name])
            log = not text and _log_axis(manifest["grid"][name])
            positions = {v: i for i, v in enumerate(manifest["grid"][name])} if text else None
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            groups = part.groupby(others, sort=False) if others else [((), part)]
            for index, (key, group) in enumerate(groups):
                key = key if isinstance(key, tuple) else (key,)
                group = group.sort_values(name)
                label = ", ".join("{}={}".format(o, k) for o, k in zip(others, key))
                xs = [positions[v] if text else float(v) for v in group[name]]
                err = [(m - lo if not _isnan(lo) else 0.0) for m, lo in zip(group["mean"], group["ci_low"])]
                line = ax.errorbar(xs, group["mean"], yerr=err, marker="o", markersize=7, capsize=4,
                                   label=("mean ± 95 % CI" + (", " + label if label else "")) if index == 0 or label else None)
                # every run beside its mean (shifted a little to the right so both stay visible)
                runs = complete
                for o, k in zip(others, key):
                    runs = runs[runs[o].map(lambda v, want=k: _same(v, want)).astype(bool)]
                shift = (lambda x: x * 1.08) if log else (lambda x: x + 0.06 * _step(xs))
                for flag in (False, True):
                    chosen = runs[_contended(runs) == flag] if timing else (runs if not flag else runs.iloc[0:0])
                    rx = [shift(positions[v] if text else float(v)) for v in chosen[name]]
                    ry = [float(v) for v in chosen[metric]]
                    if rx:
                        ax.scatter(rx, ry, s=14, alpha=0.6, color=line[0].get_color(),
                                   marker="x" if flag else "o",
                                   label=("each run, timing contended" if flag else "each run") if index == 0 else None)
            if log:
                ax.set_xscale("log")
            if text:
                ax.set_xticks(list(positions.values()))
                ax.set_xticklabels([str(v) for v in positions])
            ax.set_xlabel(_with_unit(name, units) + (" (log scale)" if log else ""))
            ax.set_ylabel(_with_unit(metric, units) + (", per worker share" if timing else ""))
            ax.set_title("{} vs {}".format(metric, name))
            ax.legend(fontsize="small")
            fig.tight_layout()
            filename = "plot_{}_vs_{}.png".format(_safe(metric), _safe(name))
            fig.savefig(os.path.join(out, ".tmp-" + filename))
            os.replace(os.path.join(out, ".tmp-" + filename), os.path.join(out, filename))
            plt.close(fig)
            written.append(filename)
    for stale in set(plot_files(out)) - set(written):  # e.g. a metric that is now constant
        os.unlink(os.path.join(out, stale))
    return written


def _step(xs: List[float]) -> float:
    """The smallest gap between x positions (1 for a single one), to shift run points by."""
    ordered = sorted(set(xs))
    gaps = [b - a for a, b in zip(ordered, ordered[1:])]
    return min(gaps) if gaps else 1.0


def _pyplot_loaded() -> bool:
    import sys

    return "matplotlib.pyplot" in sys.modules


def _is_text(series) -> bool:
    return any(isinstance(v, str) for v in series)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def counts(out: str) -> Dict[str, int]:
    """What the sweep folder holds, whoever ran it: {"total", "finished", "complete", "not_complete"}."""
    manifest = _manifest(out)
    frame = table(out)
    complete = int((frame["status"] == "complete").sum()) if not frame.empty else 0
    return {"total": len(manifest["seeds"]) * max(1, len(_configurations(manifest))), "finished": len(frame),
            "complete": complete, "not_complete": len(frame) - complete}


def write_reports(out: str) -> Dict[str, str]:
    """Write results.csv, the plots and summary.md (each atomically)."""
    frame = table(out)
    write_atomic(os.path.join(out, "results.csv"), frame.to_csv(index=False))
    write_plots(out)
    text = summary_markdown(out)
    write_atomic(os.path.join(out, "summary.md"), text)
    return {"results": os.path.join(out, "results.csv"), "summary": os.path.join(out, "summary.md")}


def main(out: str) -> Optional[str]:
    """The summary text of a sweep folder (for ``labkit results``)."""
    path = os.path.join(out, "summary.md")
    if os.path.isfile(path):
        with open(path) as f:
            return f.read()
    return summary_markdown(out)
