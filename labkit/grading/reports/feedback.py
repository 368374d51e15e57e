"""Per-student feedback pages: ``DIR/feedback/<student>.html``.

    from labkit.grading.reports.feedback import feedback_html
    html = feedback_html(result)     # result: one entry of the grader's state

A check the rubric marks ``hidden: true`` shows only its name, points and pass/fail, so feedback
does not give the hidden tests away; portable runs are marked as models of the exercise.
"""

from __future__ import annotations

from html import escape
from typing import Any, Dict

__all__ = ["feedback_html", "HIDDEN_REASON"]

HIDDEN_REASON = "hidden check: details are withheld"

_STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse;width:100%}"
          "td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}"
          ".pass{color:#185c18}.fail{color:#9b1c1c}.skip{color:#666}.portable{background:#fff6d6}")


def _runs_table(result: Dict[str, Any]) -> str:
    runs = result.get("runs") or []
    if not runs:
        return "<p>Runs graded: none was recorded when the grader ran your notebook.</p>"
    rows = "".join("<tr{}><td>{}</td><td>{}</td><td><b>{}</b>{}</td></tr>".format(
        " class='portable'" if r["where"].startswith("portable") else "", escape(r["name"]), escape(r["exercise"]),
        escape(r["where"]), " (a model of the exercise, not a measurement of the testbed)"
        if r["where"].startswith("portable") else "") for r in runs)
    return ("<h2>Runs graded</h2><table><tr><th>Record</th><th>Exercise</th><th>Where it ran</th></tr>{}</table>"
            .format(rows))


def feedback_html(result: Dict[str, Any], title: str = "Homework feedback") -> str:
    rows = []
    for check in result.get("checks", []):
        if check.get("skipped"):
            state, css = "not graded", "skip"
        elif check.get("passed"):
            state, css = "passed", "pass"
        else:
            state, css = ("partial" if check.get("score", 0) > 0 else "failed"), "fail"
        if check.get("hidden"):
            why, what = HIDDEN_REASON, ""
        else:
            why, what = check.get("reason", ""), check.get("description", "")
        where = "" if check.get("hidden") else check.get("where", "")
        rows.append("<tr class='{}'><td>{}</td><td>{}</td><td>{:g} / {:g}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            css, escape(check["name"]), escape(what), check.get("score", 0), check.get("points", 0), state,
            escape(where), escape(why)))
    run = "Execution: {}".format(escape(result.get("status", "")))
    if result.get("reason"):
        run += " ({})".format(escape(result["reason"]))
    if result.get("duplicates"):  # flagged for a person to look at; the points above are unchanged
        run += ("</p><p class='fail'>Handed in by another student too (not penalised; your instructor will look): "
                + "; ".join(escape(d) for d in result["duplicates"]))  # what, never who else
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}: {student}</title><style>{style}</style>"
        "</head><body><h1>{title}</h1><p>Student: <b>{student}</b></p><p>Total: <b>{total:g} / {max:g}</b></p>"
        "<p>{run}</p><p>Sandbox: {iso}</p><table><tr><th>Check</th><th>What</th><th>Points</th><th>Result</th>"
        "<th>Where it ran</th><th>Why</th></tr>{rows}</table>{runs}<p>Only results recorded when the grader re-ran your notebook count; "
        "outputs saved in the file you handed in are not graded.</p></body></html>\n"
    ).format(title=escape(title), student=escape(result["student"]), style=_STYLE, total=result.get("total", 0),
             max=result.get("max_total", 0), run=run, iso=escape(result.get("isolation", "")), rows="".join(rows),
             runs=_runs_table(result))
