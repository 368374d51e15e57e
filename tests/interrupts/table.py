"""The issue's table, notebook x phase: what each Ctrl-C kept, from LABKIT_INTERRUPT_TABLE's JSON lines.

    LABKIT_INTERRUPT_TABLE=kept.jsonl .venv/bin/python -m pytest tests/interrupts/test_every_moment.py
    .venv/bin/python -m tests.interrupts.table kept.jsonl          # a Markdown table
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Dict, List

__all__ = ["kept_text", "markdown"]


def kept_text(line: Dict[str, Any]) -> str:
    """One cell of the table: the record's status, phase and figures, or what the summary said."""
    if not line["runs"]:
        found = re.search(r"after [0-9.]+ s: (.*?)(?:\. The executed notebook|$)", line["summary"])
        said = found.group(1) if found else line["summary"]
        return "nothing recorded: {}".format(said[:200])
    run = line["runs"][0]
    if run.get("phase"):
        where = " in " + run["phase"]
    else:  # an older record names no phase, only where its loop stopped
        where = " (no phase named; stopped at {})".format(run["stopped_at"]) if run.get("stopped_at") else ""
    return "{}{}: {} figures ({})".format(run["status"], where, len(run["metrics"]),
                                         ", ".join(run["metrics"][:6]) + ("..." if len(run["metrics"]) > 6 else ""))


def markdown(lines: List[Dict[str, Any]]) -> str:
    rows = ["| notebook | Ctrl-C at (phase) | exit | stderr lines | traceback | kept |", "|---|---|---|---|---|---|"]
    for line in lines:
        rows.append("| {} | {} | {} | {} | {} | {} |".format(
            line["notebook"], line["phase"], line["exit"], line["stderr_lines"], "yes" if line["traceback"] else "no",
            kept_text(line).replace("|", "/")))
    return "\n".join(rows)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(markdown([json.loads(text) for text in f if text.strip()]))
