"""Export a gradebook for a learning-management system: ``--lms canvas`` writes ``DIR/canvas.csv``.

    from labkit.grading.reports.lms import canvas_csv
    text = canvas_csv(results, assignment="Homework: AI testbeds", points_possible=39)

The columns of Canvas's own Gradebook export, students matched by ``SIS Login ID`` (the
submission's name); an ungraded submission gets its 0, never an empty cell (docs/grading.md,
"After grading").
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Mapping

from labkit.grading.reports.gradebook import score

__all__ = ["canvas_csv", "LMS_FORMATS"]

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
