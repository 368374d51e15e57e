"""Tables the MNIST notebook shows besides a run's own metrics: the tutorial's network, layer by layer.

    from labkit.testbeds import graphcore
    graphcore.model_summary()      # pandas DataFrame, one row per layer, the total last
"""

from __future__ import annotations

__all__ = ["model_summary"]


def model_summary():
    """The tutorial's network, layer by layer, as a table (the total is the last row)."""
    import pandas as pd

    from labkit.testbeds.graphcore.model import Network, summary

    rows = summary(Network())
    rows.append({"layer": "total", "type": "", "output shape": "", "parameters": sum(r["parameters"] for r in rows)})
    return pd.DataFrame(rows).set_index("layer")
