"""Cerebras: what the two courses' exercises share; the exercises are the sibling sub-packages
``bert_large`` (BERT-Large: ``cszoo fit`` on a CS-3, or the 2024 ``run.py CSX`` on a CS-2) and ``llama2_7b``
(``cszoo fit`` on a CS-3, 2025).

Here: where a modelzoo checkout may be, and a portable plan's time line. The shared modules (the log
reader, streaming and the log lines, YAML edits, ``cszoo fit``, the cluster's parameters, the release):
docs/cerebras.md, "Code".
"""

from __future__ import annotations

import os
from typing import Any, List, Optional

# 2024 hand-ins say `from labkit.testbeds import cerebras; cerebras.run_exercise(config)` (and their metadata
# names labkit.testbeds.cerebras:SPEC): those names still resolve, to bert_large, imported only when asked for.
_BERT_LARGE_NAMES = ("SPEC", "plan", "run_exercise", "show", "compare", "comparison_table", "format_table",
                     "plot_comparison")

__all__ = list(_BERT_LARGE_NAMES)

#: A CPU plan shows its measured time from this long up (a GPU's plan always shows it).
SHOWN_SECONDS = 600


def __getattr__(name: str) -> Any:
    if name in _BERT_LARGE_NAMES:
        from labkit.testbeds.cerebras import bert_large

        return getattr(bert_large, name)
    raise AttributeError("module {!r} has no attribute {!r}".format(__name__, name))


def candidate_modelzoos(modelzoo_dir: Optional[str]) -> List[str]:
    """Where a modelzoo checkout may be: ``modelzoo_dir``, else $LABKIT_MODELZOO, then ~/R_*/modelzoo (newest first)."""
    if modelzoo_dir:
        return [modelzoo_dir]
    found = []
    env = os.environ.get("LABKIT_MODELZOO")
    if env:
        found.append(env)
    home = os.path.expanduser("~")
    try:
        releases = sorted((d for d in os.listdir(home) if d.startswith("R_")), reverse=True)
    except OSError:
        releases = []
    found.extend(os.path.join(home, d, "modelzoo") for d in releases)
    return found


def in_words(seconds: float) -> str:
    """``seconds`` in the largest whole unit a plan's reader thinks in ("3 hours")."""
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= size:
            return "{:.0f} {}".format(seconds / size, unit)
    return "{:.0f} seconds".format(seconds)


def time_lines(device: Any, seconds: float, steps: int, measured: str) -> List[str]:
    """A portable plan's "Time:" line: on a GPU always, on a CPU from SHOWN_SECONDS up."""
    if device.type == "cpu" and seconds < SHOWN_SECONDS:
        return []
    return ["Time: about {} for {} step(s) (measured here: {})".format(in_words(seconds), steps, measured)]
