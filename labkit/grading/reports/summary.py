"""What the class did, check by check: ``DIR/summary.md`` after every ``labkit grade``.

    from labkit.grading.reports.summary import class_summary, summary_markdown
    rows = class_summary(results, rubric.names)     # one row per check
    print(summary_markdown(rows, len(results)))

Reasons that differ only in their numbers count as one failure (docs/grading.md, "After grading").
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from html import escape
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

from labkit.grading.reports.gradebook import one_line

__all__ = ["class_summary", "summary_markdown"]

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _fmt(value: float) -> str:
    return "{:g}".format(round(value, 3))


def class_summary(results: Iterable[Mapping[str, Any]], check_names: Sequence[str]) -> List[Dict[str, Any]]:
    """One dict per check: name, points, graded, mean, full, partial, zero, distribution, commonest failure."""
    results = list(results)
    rows = []
    for name in check_names:
        scores: List[float] = []
        points = 0.0
        failures: Counter = Counter()
        example: Dict[str, str] = {}
        for result in results:
            check = next((c for c in result.get("checks", []) if c["name"] == name), None)
            if check is None or check.get("skipped"):
                continue
            points = float(check.get("points", 0))
            scores.append(float(check.get("score", 0)))
            if not check.get("passed"):
                reason = (check.get("reason") or "no reason given").strip()
                shape = _NUMBER.sub("#", reason)
                failures[shape] += 1
                example.setdefault(shape, reason)
        commonest, count = failures.most_common(1)[0] if failures else ("", 0)
        rows.append({
            "check": name, "points": points, "graded": len(scores),
            "mean": statistics.mean(scores) if scores else 0.0,
            "full": sum(1 for s in scores if points and s >= points - 1e-9),
            "partial": sum(1 for s in scores if 0 < s < points - 1e-9),
            "zero": sum(1 for s in scores if s <= 0),
            "distribution": dict(sorted(Counter(round(s, 3) for s in scores).items())),
            "commonest_failure": example.get(commonest, ""), "failure_count": count,
            "failed": sum(failures.values()),
        })
    return rows


def _cell(text: str) -> str:
    """A student's text inside summary.md: shown as text (no HTML a viewer would render), on one line."""
    return escape(one_line(text, 1000), quote=False).replace("|", "\\|").replace("`", "\\`")


def summary_markdown(rows: Sequence[Mapping[str, Any]], students: int, title: str = "Class summary",
                     duplicates: Sequence[Tuple[str, List[str]]] = ()) -> str:
    lines = ["# {} ({} students)".format(title, students), "",
             "| check | points | graded | mean | full / partial / none | points: students | commonest failure (students) |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        if not row["graded"]:
            lines.append("| {} | - | 0 | not graded this run | - | - | - |".format(row["check"]))
            continue
        dist = " ".join("{}: {}".format(_fmt(k), v) for k, v in row["distribution"].items())
        failure = "{} ({})".format(_cell(row["commonest_failure"][:160]), row["failure_count"]) \
            if row["failure_count"] else "-"
        lines.append("| {} | {} | {} | {} | {} / {} / {} | {} | {} |".format(
            row["check"], _fmt(row["points"]), row["graded"], _fmt(row["mean"]), row["full"], row["partial"],
            row["zero"], dist, failure))
    if duplicates:  # flagged for the instructor to look at; no points are taken
        lines += ["", "## Evidence handed in by more than one student ({})".format(len(duplicates)), ""]
        lines += ["- {}: {}".format(_cell(what), ", ".join(_cell(n) for n in names)) for what, names in duplicates]
    return "\n".join(lines) + "\n"
