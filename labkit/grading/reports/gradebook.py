"""The gradebook and what is drawn from it: ``DIR/gradebook.csv`` (one row per student, one column per
check, a total), ``DIR/canvas.csv`` (``--lms canvas``), each student's feedback page
(``DIR/feedback/<student>.html``) and ``DIR/summary.md``; what each holds: docs/grading.md, "Gradebook"
and "After grading".
"""

from __future__ import annotations

import csv
import io
import re
import statistics
from collections import Counter
from html import escape
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

from labkit.files import write_atomic
from labkit.grading.reports.render import render

__all__ = ["write_gradebook", "read_gradebook", "one_line", "score", "canvas_csv", "LMS_FORMATS",
           "feedback_html", "HIDDEN_REASON", "class_summary", "summary_markdown", "RESERVED"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: Any, width: int = 300) -> str:
    """A student's text as one plain line: control characters (newlines, terminal escapes) as spaces."""
    return _CONTROL.sub(" ", str(text or ""))[:width]

TRAILING = ("total", "max", "status", "where", "isolation", "reason")
#: Flags for the instructor, after the grading columns (labkit.grading.checks.duplicates).
FLAGS = ("duplicate_evidence",)


def score(value: Any) -> str:
    """Points as the gradebook writes them (at most 3 decimals); '' for none."""
    if value is None or value == "":
        return ""
    return "{:g}".format(round(float(value), 3))


def write_gradebook(path: str, check_names: Sequence[str], results: Iterable[Dict[str, Any]]) -> None:
    """One row per result (sorted by student), written atomically."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["student"] + list(check_names) + list(TRAILING) + list(FLAGS))
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


#: Column names the gradebook and the LMS files write themselves: no check may take one (an LMS import
#: matches names without regard to case, so neither may ``Student`` nor ``STATUS``).
RESERVED = ("student",) + TRAILING + FLAGS + IDENTITY


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


HIDDEN_REASON = "hidden check: details are withheld"

def _check_row(check: Mapping[str, Any]) -> Dict[str, Any]:
    """One check as its feedback row shows it; a hidden check's reason, description and place are withheld."""
    if check.get("skipped"):
        state, css = "not graded", "skip"
    elif check.get("passed"):
        state, css = "passed", "pass"
    else:
        state, css = ("partial" if check.get("score", 0) > 0 else "failed"), "fail"
    if check.get("hidden"):  # so feedback does not give the hidden tests away
        why, what, where = HIDDEN_REASON, "", ""
    else:
        why, what, where = check.get("reason", ""), check.get("description", ""), check.get("where", "")
    return {"name": check["name"], "what": what, "score": check.get("score", 0), "points": check.get("points", 0),
            "state": state, "css": css, "where": where, "why": why}


def feedback_html(result: Dict[str, Any], title: str = "Homework feedback") -> str:
    """One student's feedback page (text): templates/feedback.html.j2."""
    return render("feedback.html.j2", title=title, student=result["student"], total=result.get("total", 0),
                  max_total=result.get("max_total", 0), status=result.get("status", ""), reason=result.get("reason"),
                  duplicates=result.get("duplicates") or [], isolation=result.get("isolation", ""),
                  checks=[_check_row(c) for c in result.get("checks", [])], runs=result.get("runs") or [])


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")


def class_summary(results: Iterable[Mapping[str, Any]], check_names: Sequence[str]) -> List[Dict[str, Any]]:
    """One dict per check: name, points, graded, mean, full, partial, zero, distribution, the students per
    score, commonest failure."""
    results = list(results)
    rows = []
    for name in check_names:
        scores: List[float] = []
        points = 0.0
        students: Dict[float, List[str]] = {}
        failures: Counter = Counter()
        example: Dict[str, str] = {}
        for result in results:
            check = next((c for c in result.get("checks", []) if c["name"] == name), None)
            if check is None or check.get("skipped"):
                continue
            points = float(check.get("points", 0))
            scores.append(float(check.get("score", 0)))
            students.setdefault(round(scores[-1], 3), []).append(str(result["student"]))
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
            "distribution": {s: len(names) for s, names in sorted(students.items())}, "students": students,
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
        dist = " ".join("{}: {}".format(score(k), v) for k, v in row["distribution"].items())
        failure = "{} ({})".format(_cell(row["commonest_failure"][:160]), row["failure_count"]) \
            if row["failure_count"] else "-"
        lines.append("| {} | {} | {} | {} | {} / {} / {} | {} | {} |".format(
            row["check"], score(row["points"]), row["graded"], score(row["mean"]), row["full"], row["partial"],
            row["zero"], dist, failure))
    if duplicates:  # flagged for the instructor to look at; no points are taken
        lines += ["", "## Evidence handed in by more than one student ({})".format(len(duplicates)), ""]
        lines += ["- {}: {}".format(_cell(what), ", ".join(_cell(n) for n in names)) for what, names in duplicates]
    return "\n".join(lines) + "\n"
