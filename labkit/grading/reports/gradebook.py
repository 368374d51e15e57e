"""The gradebook: ``DIR/gradebook.csv``, one row per student, one column per check, a total; and
its export for a learning-management system (``--lms canvas``: ``DIR/canvas.csv``).

    from labkit.grading.reports.gradebook import write_gradebook, read_gradebook
    write_gradebook("out/gradebook.csv", rubric.names, results)   # atomic: never half-written
    text = canvas_csv(results, assignment="Homework: AI testbeds", points_possible=39)

The columns: docs/grading.md, "Gradebook". Canvas's columns are those of its own Gradebook export,
students matched by ``SIS Login ID`` (the submission's name); an ungraded submission gets its 0,
never an empty cell (docs/grading.md, "After grading").
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Dict, Iterable, List, Mapping, Sequence

from labkit.files import write_atomic

__all__ = ["write_gradebook", "read_gradebook", "columns", "one_line", "score", "canvas_csv", "LMS_FORMATS"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: Any, width: int = 300) -> str:
    """A student's text as one plain line: control characters (newlines, terminal escapes) as spaces."""
    return _CONTROL.sub(" ", str(text or ""))[:width]

TRAILING = ("total", "max", "status", "where", "isolation", "reason")
#: Flags for the instructor, after the grading columns (labkit.grading.checks.duplicates).
FLAGS = ("duplicate_evidence",)


def columns(check_names: Sequence[str]) -> List[str]:
    return ["student"] + list(check_names) + list(TRAILING) + list(FLAGS)


def score(value: Any) -> str:
    """Points as the gradebook writes them (at most 3 decimals); '' for none."""
    if value is None or value == "":
        return ""
    return "{:g}".format(round(float(value), 3))


def write_gradebook(path: str, check_names: Sequence[str], results: Iterable[Dict[str, Any]]) -> None:
    """One row per result (sorted by student), written atomically."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns(check_names))
    for result in sorted(results, key=lambda r: r["student"]):
        by_name = {c["name"]: c for c in result.get("checks", [])}
        row = [result["student"]]
        for name in check_names:
            check = by_name.get(name)
            row.append("" if check is None or check.get("skipped") else score(check["score"]))
        row += [score(result.get("total", 0)), score(result.get("max_total", 0)), result.get("status", ""),
                one_line(result.get("where")), result.get("isolation", ""), one_line(result.get("reason")),
                one_line(result.get("duplicate_note"))]
        writer.writerow(row)
    write_atomic(path, out.getvalue())


def read_gradebook(path: str) -> List[Dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


LMS_FORMATS = ("canvas",)
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def canvas_csv(results: Iterable[Mapping[str, Any]], assignment: str, points_possible: float) -> str:
    """The CSV text: header, ``Points Possible`` row, one row per student sorted by login."""
    if not assignment.strip():
        raise ValueError("--assignment: the Canvas column needs a name (got an empty one)")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(IDENTITY) + [assignment])
    writer.writerow(["    Points Possible", "", "", "", "", score(points_possible or 0)])
    for result in sorted(results, key=lambda r: r["student"]):
        writer.writerow([result["student"], "", "", result["student"], "", score(result.get("total") or 0)])
    return out.getvalue()
