"""A sweep's plots: one PNG per numeric metric and varied parameter, written into the sweep folder.

    labkit.sweep.plots.write_plots("runs/NAME")   # plot_<metric>_vs_<parameter>.png
    labkit.sweep.plots.plot_files("runs/NAME")    # the names written
"""

from __future__ import annotations

import os
import re
import sys
from typing import List

from labkit.files import produce_atomic
from labkit.sweep.planning import same_grid_value
from labkit.sweep.tables import constant_metrics, contended_mask, isnan, read_manifest, summary_frame, table, with_unit

__all__ = ["write_plots", "plot_files"]


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
            filename = "plot_{}_vs_{}.png".format(_safe(metric), _safe(name))
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


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)
