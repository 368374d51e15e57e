"""A sweep's tables and plots: results.csv, summary.md and one PNG per metric and parameter.

    labkit results runs/NAME                      # prints summary.md again
    labkit.results.collect("runs/NAME")           # results.csv as a DataFrame, in a notebook
    labkit.sweep_report.summary_frame("runs/NAME")  # one row per configuration and metric

The rows come from ``runs/*.json``, each written once its run ended, so the tables are
rebuilt from what is actually done (also after an interrupted sweep).

Statistics (see :mod:`labkit.stats`): per configuration the mean, the sample standard
deviation and a 95 % confidence interval of the mean (Student t with n-1 degrees of
freedom). A configuration's difference from the baseline is "within noise" when Welch's
two-sided t-test (unequal variances) gives p >= 0.05. Only runs with status ``complete``
enter the statistics; the others are listed with their cause.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Optional

from labkit import stats
from labkit.sweep import MANIFEST, RUNS, write_atomic

__all__ = ["table", "summary_frame", "summary_markdown", "write_reports", "plot_files"]

ALPHA = 0.05
_FIXED_COLUMNS = ("run", "status", "error", "duration", "notebook", "gpu")


def _manifest(out: str) -> Dict[str, Any]:
    with open(os.path.join(out, MANIFEST)) as f:
        return json.load(f)


def table(out: str):
    """results.csv as a DataFrame: one row per finished run, in the sweep's order."""
    import pandas as pd

    from labkit.results import _json_restore

    manifest = _manifest(out)
    rows = []
    folder = os.path.join(out, RUNS)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    for name in names:
        with open(os.path.join(folder, name)) as f:
            rows.append(_json_restore(json.load(f)))
    parameters = list(manifest["grid"]) + ["seed"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=parameters + ["status", "error", "duration"])
    metrics = [c for c in frame.columns if c not in parameters and c not in _FIXED_COLUMNS]
    order = parameters + metrics + [c for c in ("status", "error", "duration", "notebook", "gpu", "run") if c in frame]
    frame = frame[order].sort_values(parameters, kind="stable").reset_index(drop=True)
    return frame


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
    for metric in numeric_metrics(frame, manifest):
        base_values = _values(complete, grid, baseline, metric)
        for config in _configurations(manifest):
            values = _values(complete, grid, config, metric)
            mean, std, low, high = stats.mean_ci(values)
            row: Dict[str, Any] = dict(config)
            row.update({"metric": metric, "n": len(values), "mean": mean, "std": std, "ci_low": low, "ci_high": high})
            if config == baseline:
                row.update({"diff": 0.0, "p": float("nan"), "verdict": "baseline"})
            else:
                _t, _df, p = stats.welch(values, base_values)
                diff = mean - (sum(base_values) / len(base_values)) if base_values and values else float("nan")
                if p is None:
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
    mask = frame.index == frame.index  # all True
    for name in grid:
        mask = mask & frame[name].map(lambda v, want=config[name]: _same(v, want))
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


def summary_markdown(out: str) -> str:
    manifest = _manifest(out)
    frame = table(out)
    summary = summary_frame(out)
    grid = list(manifest["grid"])
    total = len(manifest["seeds"]) * max(1, len(_configurations(manifest)))
    complete = int((frame["status"] == "complete").sum()) if not frame.empty else 0
    lines = ["# Sweep of {}".format(os.path.basename(manifest["notebook"])), ""]
    lines.append("- notebook: `{}`".format(manifest["notebook"]))
    lines.append("- grid: {}; repeats: {} (seeds {})".format(
        ", ".join("{} = {}".format(k, ", ".join(map(str, v))) for k, v in manifest["grid"].items()) or "(defaults only)",
        manifest["repeats"], ", ".join(map(str, manifest["seeds"]))))
    lines.append("- runs: {} of {} finished, {} complete, {} not complete".format(
        len(frame), total, complete, len(frame) - complete))
    base = manifest.get("baseline") or {}
    lines.append("- baseline: {} ({})".format(", ".join("{} = {}".format(k, v) for k, v in base.items()) or "defaults",
                                              manifest.get("baseline_reason", "")))
    lines.append("- statistics: mean and sample standard deviation over the complete runs of each configuration; "
                 "95 % CI = mean ± t(0.975, n−1)·std/√n. \"within noise\": Welch's two-sided t-test "
                 "(unequal variances) against the baseline gives p ≥ {}; \"real difference\": p < {}.".format(ALPHA, ALPHA))
    lines.append("")
    if not summary.empty:
        for metric, part in summary.groupby("metric", sort=False):
            lines.append("## {}".format(metric))
            lines.append("")
            head = grid + ["n", "mean", "std", "95 % CI", "diff vs baseline", "p", "verdict"]
            lines.append("| " + " | ".join(head) + " |")
            lines.append("|" + "---|" * len(head))
            for _, row in part.iterrows():
                ci = "–" if _isnan(row["ci_low"]) else "[{}, {}]".format(_fmt(row["ci_low"]), _fmt(row["ci_high"]))
                cells = [_fmt(row[n]) for n in grid] + [str(int(row["n"])), _fmt(row["mean"]), _fmt(row["std"]), ci,
                                                        _fmt(row["diff"]), _fmt(row["p"]), row["verdict"]]
                lines.append("| " + " | ".join(cells) + " |")
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


def write_plots(out: str) -> List[str]:
    """One PNG per numeric metric and varied parameter: mean with 95 % CI error bars."""
    import matplotlib

    matplotlib.use("Agg", force=False) if not _pyplot_loaded() else None
    import matplotlib.pyplot as plt

    manifest = _manifest(out)
    summary = summary_frame(out)
    varied = [n for n, v in manifest["grid"].items() if len(v) > 1]
    written = []
    if summary.empty:
        return written
    for metric, part in summary.groupby("metric", sort=False):
        for name in varied:
            others = [n for n in varied if n != name]
            fig, ax = plt.subplots(figsize=(5, 3.5))
            groups = part.groupby(others, sort=False) if others else [((), part)]
            for key, group in groups:
                group = group.sort_values(name)
                err = [(m - lo if not _isnan(lo) else 0.0) for m, lo in zip(group["mean"], group["ci_low"])]
                label = ", ".join("{}={}".format(o, k) for o, k in zip(others, key if isinstance(key, tuple) else (key,)))
                ax.errorbar(group[name].astype(str) if _is_text(group[name]) else group[name], group["mean"],
                            yerr=err, marker="o", capsize=4, label=label or None)
            ax.set_xlabel(name)
            ax.set_ylabel(metric)
            ax.set_title("{} vs {} (mean, 95 % CI)".format(metric, name))
            if others:
                ax.legend(fontsize="small")
            fig.tight_layout()
            filename = "plot_{}_vs_{}.png".format(_safe(metric), _safe(name))
            fig.savefig(os.path.join(out, ".tmp-" + filename))
            os.replace(os.path.join(out, ".tmp-" + filename), os.path.join(out, filename))
            plt.close(fig)
            written.append(filename)
    return written


def _pyplot_loaded() -> bool:
    import sys

    return "matplotlib.pyplot" in sys.modules


def _is_text(series) -> bool:
    return any(isinstance(v, str) for v in series)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


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
