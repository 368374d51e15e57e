"""Export a gradebook for a learning-management system: ``--lms canvas`` writes ``DIR/canvas.csv``.

    from labkit.grading.reports.lms import canvas_csv
    text = canvas_csv(results, assignment="Homework: AI testbeds", points_possible=39)

Canvas's Gradebook > Import takes a CSV whose first five columns identify the student
(``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``) followed by one column per
assignment, with an optional ``Points Possible`` row under the header (as Canvas's own export
has). Students are matched here by login: ``SIS Login ID`` is the submission's name (the
student's folder or notebook name), the other identity columns are left empty for Canvas to
fill. An assignment column named like an existing assignment (``Name (12345)`` as exported)
updates it; a new name creates the assignment. Students whose submission could not be graded
get the points the grader gave them (0), never an empty cell, so nobody is silently skipped.
"""

from __future__ import annotations

import csv
import io
from typing import Any, Iterable, Mapping

__all__ = ["canvas_csv", "LMS_FORMATS"]

LMS_FORMATS = ("canvas",)
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")


def _score(value: Any) -> str:
    return "{:g}".format(round(float(value or 0), 3))


def canvas_csv(results: Iterable[Mapping[str, Any]], assignment: str, points_possible: float) -> str:
    """The CSV text: header, ``Points Possible`` row, one row per student sorted by login."""
    if not assignment.strip():
        raise ValueError("--assignment: the Canvas column needs a name (got an empty one)")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(list(IDENTITY) + [assignment])
    writer.writerow(["    Points Possible", "", "", "", "", _score(points_possible)])
    for result in sorted(results, key=lambda r: r["student"]):
        writer.writerow([result["student"], "", "", result["student"], "", _score(result.get("total", 0))])
    return out.getvalue()
