"""Showing a figure or a table in the notebook: one rule for every exercise.

    return show(fig)          # in a kernel: shown now, once; returns None. Elsewhere: returns fig.

A figure shown this way is closed, so the inline backend does not show it a second time, and
nothing is returned that Jupyter would render again as the cell's value; scripts and tests get the
object back. A show step that shows several things keeps the rule through :func:`shown`.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

__all__ = ["show", "in_kernel", "shown", "three_digits", "cell_text", "sorted_rows"]


def in_kernel() -> bool:
    """True inside an IPython kernel (JupyterLab, papermill, nbval)."""
    from IPython import get_ipython  # labkit requires ipykernel, and so IPython

    return get_ipython() is not None


def show(obj: Any) -> Any:
    """In a kernel, display ``obj`` now (closing it if it is a matplotlib figure) and return None;
    elsewhere return ``obj`` unchanged."""
    if not in_kernel():
        return obj
    from IPython.display import display

    display(obj)
    if type(obj).__name__ == "Figure" and type(obj).__module__.startswith("matplotlib"):
        import matplotlib.pyplot as plt

        plt.close(obj)
    return None


def shown(objects: Sequence[Any]) -> Optional[List[Any]]:
    """What a show step returns after showing ``objects`` with :func:`show`: None in a kernel
    (they are on the screen already), elsewhere the objects themselves (Nones left out)."""
    if in_kernel():
        return None
    return [obj for obj in objects if obj is not None]


def three_digits(value: float, unit: str) -> str:
    """``value`` with three significant digits and its unit ("6.12 ms", "812 ms", "1234 ms"); rounded
    first, so 9.996 is "10.0" and never "10.00". Callers pick the unit, and say what zero is."""
    decimals = max(0, 2 - math.floor(math.log10(abs(float("{:.3g}".format(value))))))
    return "{:.{}f} {}".format(value, decimals, unit)


def cell_text(value: Any, unit: str, float_format: str, int_format: str = "{}", count: bool = False) -> str:
    """A table cell: ``value`` beside its unit ("19.91 samples/s"), a float by ``float_format``, an int by
    ``int_format``, anything else as str; "" for None or NaN. ``count``: a whole float is shown as an int
    (a pandas column of counts with a gap holds floats)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if count and isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
    else:
        text = (int_format if isinstance(value, int) else float_format).format(value)
    return text + (" " + unit if unit and text else "")


def sorted_rows(rows: Sequence[Dict[str, Any]], by: Sequence[str]):
    """``rows`` as a pandas DataFrame sorted (stably) by the columns ``by`` and numbered from 0."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    if len(frame):
        frame = frame.sort_values(list(by), kind="stable").reset_index(drop=True)
    return frame
