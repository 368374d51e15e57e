"""What the scaling notebook shows: the configurations measured here (its show step), and like
compared with like: speed-up and scaling efficiency (docs/sweeps.md defines them), as a table and a
plot. Absolute images/s of a laptop CPU and of an IPU-POD16 say little about each other; how each
grows with replicas does.
"""

from __future__ import annotations

import math
from typing import Any, List, Optional

from labkit.interrupts import show_step
from labkit import display
from labkit.results import Run

__all__ = ["show", "with_speedup", "speedup_table", "plot_speedup", "duration", "REFERENCE_MODEL"]

#: The columns :func:`show` gives of each configuration measured.
SHOWN_COLUMNS = ["platform", "model", "replicas", "micro_batch", "images_per_epoch", "status", "note"]
#: What the ``model`` column says for reference rows, which carry none.
REFERENCE_MODEL = "the study's"


@show_step
def show(run: Run) -> Optional[List[Any]]:
    """The configurations measured here, with their status (the rule of :func:`labkit.display.shown`)."""
    local = getattr(run, "details", None)
    if local is None:
        print("This run holds no measurements of its own configurations to show.")
        return display.shown([])
    return display.shown([display.show(local[[c for c in SHOWN_COLUMNS if c in local.columns]])])


def _series_key(frame):
    """platform + model: a local study of the small model does not share a baseline with the representative."""
    model = frame["model"].fillna(REFERENCE_MODEL).astype(str) if "model" in frame.columns else REFERENCE_MODEL
    return frame["platform"].astype(str) + " | " + model


def with_speedup(frame):
    """A copy of ``frame`` with ``speedup`` and ``efficiency`` columns (NaN without a 1-replica baseline)."""
    import pandas as pd

    out = frame.copy().reset_index(drop=True)
    key = _series_key(out)
    base = out[out["replicas"] == 1].assign(_key=key[out["replicas"] == 1])
    baseline = base.groupby(["_key", "micro_batch"])["throughput"].first()
    index = pd.MultiIndex.from_arrays([key, out["micro_batch"]])
    out["speedup"] = out["throughput"].to_numpy() / baseline.reindex(index).to_numpy()
    out["efficiency"] = out["speedup"] / out["replicas"]
    return out


def speedup_table(frame):
    """One row per configuration, local and reference side by side: time, throughput, speed-up,
    efficiency, status and note, formatted for reading (``7.29×``, ``46 % of ideal``)."""
    import pandas as pd

    data = with_speedup(frame)
    for column, default in (("model", REFERENCE_MODEL), ("epoch_s", float("nan")), ("note", ""),
                            ("status", "complete")):
        data[column] = data[column].fillna(default) if column in data.columns else default
    order = {platform: i for i, platform in enumerate(pd.unique(data["platform"]))}
    data = data.assign(_order=data["platform"].map(order)).sort_values(
        ["_order", "model", "micro_batch", "replicas"], kind="stable")

    def number(value: float, text: str) -> str:
        return "" if value != value else text.format(value)

    table = pd.DataFrame({
        "platform": data["platform"], "model": data["model"], "replicas": data["replicas"],
        "micro-batch": data["micro_batch"],
        "timed epoch": [duration(v) for v in data["epoch_s"]],
        "throughput": [number(v, "{:.0f} images/s") for v in data["throughput"]],
        "speed-up": [number(v, "{:.2f}×") for v in data["speedup"]],
        "efficiency": [number(100 * v, "{:.0f} % of ideal") for v in data["efficiency"]],
        "status": data["status"], "note": data["note"],
    })
    return table.reset_index(drop=True)


def duration(seconds: float) -> str:
    """Seconds with three significant digits, in ms below one second: "6.12 ms", "812 ms", "2.40 s",
    "259 s"; "" for none. A GPU's few-millisecond epoch never shows as "0.0 s"."""
    if seconds != seconds:
        return ""
    value, unit = (seconds * 1e3, "ms") if seconds < 1 else (seconds, "s")
    if value <= 0:
        return "0 {}".format(unit)
    return display.three_digits(value, unit)


def plot_speedup(frame, title: str = "Speed-up over 1 replica (same platform, same micro-batch)"):
    """Speed-up against replicas, log-log, with the ideal line; local lines solid, reference dashed;
    diverged points hollow and named in the legend; the largest replica count labelled with its
    speed-up and efficiency."""
    import matplotlib.pyplot as plt

    data = with_speedup(frame)
    data = data[data["speedup"] == data["speedup"]]
    if "status" not in data.columns:
        data = data.assign(status="complete")
    fig, ax = plt.subplots(figsize=(8, 5.2))
    top = max([2] + [int(r) for r in data["replicas"]])
    ax.plot([1, top], [1, top], color="0.6", linewidth=1, label="ideal: speed-up = replicas")
    labelled: List[tuple] = []  # (replicas, speed-up) already labelled: no two labels on top of each other
    markers = iter("osD^vP*Xh<>p" * 4)
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"] * 4)
    for (key, micro_batch), group in data.groupby([_series_key(data), "micro_batch"], sort=False):
        group = group.sort_values("replicas")
        platform, model = key.split(" | ", 1)
        local = platform.startswith("local")
        color, marker = next(colors), next(markers)
        label = "{}{}, micro-batch {}".format(platform, " ({} model)".format(model) if local else "", micro_batch)
        bad = [int(r) for r in group.loc[group["status"] == "diverged", "replicas"]]
        if bad:
            label += " — diverged at {} replica{}".format(", ".join(str(b) for b in bad), "" if bad == [1] else "s")
        trained = [i for i, status in enumerate(group["status"]) if status != "diverged"]
        # the line and its legend entry: filled markers where the run trained (all hollow if none did)
        ax.plot(group["replicas"], group["speedup"], "-" if local else "--", color=color, linewidth=1.5 if local else 1,
                label=label, marker=marker, markersize=7, markeredgecolor=color, markeredgewidth=1.5,
                markerfacecolor=color if trained else "white", markevery=trained or None)
        hollow = group[group["status"] == "diverged"]
        ax.plot(hollow["replicas"], hollow["speedup"], linestyle="none", marker=marker, markersize=7,
                markerfacecolor="white", markeredgecolor=color, markeredgewidth=1.5)
        last = group.iloc[-1]
        close = any(x == last["replicas"] and abs(math.log2(y / last["speedup"])) < 0.1 for x, y in labelled)
        if last["replicas"] > 1 and not close:
            labelled.append((last["replicas"], last["speedup"]))
            ax.annotate("{:.2f}× ({:.0f} %)".format(last["speedup"], 100 * last["efficiency"]),
                        (last["replicas"], last["speedup"]), textcoords="offset points", xytext=(6, -3),
                        fontsize="x-small", color=color)
    ax.plot([], [], linestyle="none", marker="o", markerfacecolor="white", markeredgecolor="0.3",
            label="hollow: diverged (loss NaN or exploded)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    ticks = [2 ** i for i in range(0, top.bit_length() + (0 if top & (top - 1) == 0 else 1))]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    lowest = min([1.0] + [float(s) for s in data["speedup"] if s > 0])  # a slower-than-1-replica point
    yticks = [2.0 ** i for i in range(math.floor(math.log2(lowest)), len(ticks))]
    ax.set_yticks(yticks, ["{:g}×".format(t) for t in yticks])
    ax.set_xlabel("replicas")
    ax.set_ylabel("speed-up over 1 replica")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="x-small", loc="upper left", framealpha=0.9)
    fig.tight_layout()

    return display.show(fig)  # in a notebook: shown exactly once; elsewhere: the figure
