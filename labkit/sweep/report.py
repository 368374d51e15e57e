"""A sweep's report: results.csv, summary.md and the plots (one PNG per numeric metric and varied
parameter, ``plot_<metric>_vs_<parameter>.png``), written together into the sweep folder.

    labkit results runs/NAME                      # prints summary.md again
    labkit.sweep.collect("runs/NAME")             # results.csv as a DataFrame, in a notebook

The numbers come from :mod:`labkit.sweep.tables`; docs/sweeps.md shows what summary.md holds.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Dict, List, Optional

from labkit.errors import LabkitError
from labkit.files import produce_atomic, write_atomic
from labkit.sweep.planning import RUNS, grid_points, same_grid_value
from labkit.sweep.task import cores
from labkit.sweep.tables import (ALPHA, constant_metrics, contended_mask, exercise_table, fmt, isnan,
                                 read_manifest, summary_frame, table, with_unit)

__all__ = ["summary_markdown", "write_reports", "write_plots", "plot_files", "counts", "primary_metrics", "main",
           "ReportNotWritten"]


class ReportNotWritten(LabkitError, OSError):
    """The disk refused a sweep's report (a full disk, a folder made read-only); its runs are kept."""


def primary_metrics(frame) -> List[str]:
    """The primary metrics in the exercise's table of metrics, when the sweep ran one exercise."""
    table = exercise_table(frame)
    return list(table.primary) if table is not None else []


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
            "threads while the others run), not the whole machine's speed".format(text, cores()))


def _contention_line(frame) -> Optional[str]:
    if frame.empty or "timing_contended" not in frame:
        return None
    hit = frame[contended_mask(frame)]
    loads = [v for v in list(frame.get("load_before", [])) + list(frame.get("load_after", []))
             if isinstance(v, (int, float)) and not isnan(v)]
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
                                                                  cores()))


def summary_markdown(out: str) -> str:
    manifest = read_manifest(out)
    frame = table(out)
    summary = summary_frame(out)
    units = frame.attrs.get("units", {})
    grid = list(manifest["grid"])
    varied = [n for n in grid if len(manifest["grid"][n]) > 1]
    fixed = {n: manifest["grid"][n][0] for n in grid if len(manifest["grid"][n]) == 1}
    tally = _tally(manifest, frame)
    lines = ["# Sweep of {}".format(os.path.basename(manifest["notebook"])), ""]
    lines.append("- notebook: `{}`".format(manifest["notebook"]))
    lines.append("- grid: {}; repeats: {} (seeds {})".format(
        ", ".join("{} = {}".format(k, ", ".join(map(str, manifest["grid"][k]))) for k in varied) or "(no parameter varied)",
        manifest["repeats"], ", ".join(map(str, manifest["seeds"]))))
    if fixed:
        lines.append("- same in every run: " + ", ".join("{} = {}".format(k, v) for k, v in fixed.items()))
    lines.append("- runs: {finished} of {total} finished, {complete} complete, {not_complete} not "
                 "complete".format(**tally))
    lines.extend("- " + problem for problem in frame.attrs.get("unreadable", []))
    base = {k: v for k, v in (manifest.get("baseline") or {}).items() if k in varied}
    lines.append("- baseline: {} ({})".format(", ".join("{} = {}".format(k, v) for k, v in base.items()) or "defaults",
                                              manifest.get("baseline_reason", "")))
    for extra in (_share_line(frame), _contention_line(frame)):
        if extra:
            lines.append(extra)
    constant = constant_metrics(frame, manifest)
    if constant:
        lines.append("- equal in every complete run: " + ", ".join(
            "{} = {}{}".format(m, fmt(v), " " + units[m] if units.get(m) else "") for m, v in constant.items()))
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
            title = with_unit(metric, units) + (" — primary" if metric in primary else "")
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
                ci = "–" if isnan(row["ci_low"]) else "[{}, {}]".format(fmt(row["ci_low"]), fmt(row["ci_high"]))
                cells = [fmt(row[n]) for n in varied] + [str(int(row["n"])), fmt(row["mean"]), fmt(row["std"]), ci,
                                                          fmt(row["diff"]), fmt(row["p"]), row["verdict"]]
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


def counts(out: str) -> Dict[str, int]:
    """What the sweep folder holds, whoever ran it: {"total", "finished", "complete", "not_complete"}."""
    return _tally(read_manifest(out), table(out))


def _tally(manifest, frame) -> Dict[str, int]:
    complete = int((frame["status"] == "complete").sum()) if not frame.empty else 0
    total = len(manifest["seeds"]) * max(1, len(grid_points(manifest["grid"])))
    return {"total": total, "finished": len(frame), "complete": complete, "not_complete": len(frame) - complete}


def write_reports(out: str) -> None:
    """Write results.csv, the plots and summary.md (each atomically, so a file is old or new, never
    half); :class:`ReportNotWritten` says which runs are kept when the disk refuses one."""
    try:
        write_atomic(os.path.join(out, "results.csv"), table(out).to_csv(index=False))
        write_plots(out)
        write_atomic(os.path.join(out, "summary.md"), summary_markdown(out))
    except OSError as exc:
        raise ReportNotWritten(
            "could not write the tables and plots into {} ({}); its {} finished runs are kept in {} (each run's "
            "notebook and row): once there is room, run the same command again, which writes them without "
            "running anything again".format(out, exc.strerror or exc, counts(out)["finished"], os.path.join(out, RUNS))
        ) from exc


def main(out: str) -> Optional[str]:
    """The summary text of a sweep folder (for ``labkit results``)."""
    path = os.path.join(out, "summary.md")
    if os.path.isfile(path):  # a FIFO is no summary: it would block the read; it is made afresh instead
        with open(path) as f:
            return f.read()
    return summary_markdown(out)


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

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    manifest = read_manifest(out)
    frame = table(out)
    summary = summary_frame(out)
    units = frame.attrs.get("units", {})
    varied = [n for n, v in manifest["grid"].items() if len(v) > 1]
    written: List[str] = []
    if summary.empty:
        return written
    complete = frame[frame["status"] == "complete"]
    constant = constant_metrics(frame, manifest)
    for metric, part in summary.groupby("metric", sort=False):
        if metric in constant:
            continue
        timing = bool(part["timing"].iloc[0])
        for name in varied:
            others = [n for n in varied if n != name]
            text = any(isinstance(v, str) for v in manifest["grid"][name])
            log = not text and _log_axis(manifest["grid"][name])
            positions = {v: i for i, v in enumerate(manifest["grid"][name])} if text else None
            fig, ax = plt.subplots(figsize=(5.5, 3.8))
            groups = part.groupby(others, sort=False) if others else [((), part)]
            for index, (key, group) in enumerate(groups):
                key = key if isinstance(key, tuple) else (key,)
                group = group.sort_values(name)
                label = ", ".join("{}={}".format(o, k) for o, k in zip(others, key))
                xs = [positions[v] if text else float(v) for v in group[name]]
                err = [(m - lo if not isnan(lo) else 0.0) for m, lo in zip(group["mean"], group["ci_low"])]
                line = ax.errorbar(xs, group["mean"], yerr=err, marker="o", markersize=7, capsize=4,
                                   label=("mean ± 95 % CI" + (", " + label if label else "")) if index == 0 or label else None)
                # every run beside its mean (shifted a little to the right so both stay visible)
                runs = complete
                for o, k in zip(others, key):
                    runs = runs[runs[o].map(lambda v, want=k: same_grid_value(v, want)).astype(bool)]
                shift = (lambda x: x * 1.08) if log else (lambda x: x + 0.06 * _step(xs))
                for flag in (False, True):
                    chosen = runs[contended_mask(runs) == flag] if timing else (runs if not flag else runs.iloc[0:0])
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
            ax.set_xlabel(with_unit(name, units) + (" (log scale)" if log else ""))
            ax.set_ylabel(with_unit(metric, units) + (", per worker share" if timing else ""))
            ax.set_title("{} vs {}".format(metric, name))
            ax.legend(fontsize="small")
            fig.tight_layout()
            filename = re.sub(r"[^A-Za-z0-9._-]", "_", "plot_{}_vs_{}".format(metric, name)) + ".png"
            produce_atomic(os.path.join(out, filename), fig.savefig)
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
