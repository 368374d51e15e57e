"""The speed-up plot: ideal line, local and reference on one axes, diverged runs hollow and named."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from labkit.testbeds.comparison import report as scaling_report, study as scaling


def test_speedup_plot_draws_local_and_reference_with_diverged_runs_hollow():
    local = pd.DataFrame({"platform": ["local cpu"] * 2, "model": ["representative"] * 2, "replicas": [1, 2],
                          "micro_batch": [10, 10], "throughput": [80.0, 150.0], "status": ["complete", "diverged"]})
    both = pd.concat([local, scaling.load_reference(scaling.PUBLISHED_REFERENCE)], ignore_index=True)
    fig = scaling_report.plot_speedup(both)
    try:
        ax, = fig.axes
        labels = ax.get_legend().get_texts()
        legend = [t.get_text() for t in labels]
        assert legend[0].startswith("ideal")
        assert "local cpu (representative model), micro-batch 10 — diverged at 2 replicas" in legend
        assert "Mk2-IPU, micro-batch 10 — diverged at 2, 4, 16 replicas" in legend
        assert "A100 GPU, micro-batch 512" in legend  # trained at 1 and 2 replicas: nothing to name
        assert any(text.startswith("hollow: diverged") for text in legend)
        ideal = ax.lines[0]
        assert list(ideal.get_xdata()) == [1, 16] and list(ideal.get_ydata()) == [1, 16]
        # a hollow marker (white face) sits exactly on every diverged point, and on no other
        hollow = set()
        for line in ax.lines:
            if line.get_linestyle() == "None" and line.get_markerfacecolor() == "white":
                hollow |= {(float(x), round(float(y), 4)) for x, y in zip(line.get_xdata(), line.get_ydata())}
        data = scaling_report.with_speedup(both)
        expected = {(float(r), round(float(s), 4)) for r, s, st in zip(data["replicas"], data["speedup"], data["status"])
                    if st == "diverged"}
        assert hollow == expected
        assert (16.0, round(21547 / 2954, 4)) in hollow
        styles = {line.get_label(): line.get_linestyle() for line in ax.lines}
        assert styles["local cpu (representative model), micro-batch 10 — diverged at 2 replicas"] == "-"
        assert styles["A100 GPU, micro-batch 512"] == "--"
        assert any("7.29× (46 %)" == t.get_text() for t in ax.texts)
    finally:
        plt.close(fig)
