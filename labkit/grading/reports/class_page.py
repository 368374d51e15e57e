"""The class at a glance: ``DIR/class.html``, one self-contained page after every ``labkit grade``.

What the page shows: docs/grading.md, "After grading". The figures are hand-written SVG inside
the page (no script, nothing fetched), so it opens from a file offline and a class of 200 stays
well under 2 MB.
"""

from __future__ import annotations

import hashlib
import math
import statistics
from html import escape
from typing import Any, Dict, List, Mapping, Sequence, Tuple

from labkit.grading.reports.class_data import RULE, ClassData, Outlier
from labkit.grading.checks.duplicates import groups as duplicate_groups
from labkit.grading.reports.gradebook import class_summary
from labkit.testbeds.homework.homeworks import HOMEWORKS

__all__ = ["class_html", "COLOURS", "figure_id"]

#: Where a point's run ran -> its colour (the legend's order).
COLOURS = {"testbed log": "#1f77b4", "testbed run": "#17becf", "saved response": "#9467bd",
           "portable: CPU": "#ff7f0e", "portable: GPU": "#2ca02c"}
_FAR = "#d62728"
_KIND_INDEX = {kind: i for i, kind in enumerate(COLOURS)}
_POINT_STYLE = "".join("circle.k{}{{fill:{};fill-opacity:.75}}".format(i, c) for i, c in enumerate(COLOURS.values())) + \
    "circle.k{}{{fill:#777}}circle.far{{stroke:{};stroke-width:2;fill-opacity:1}}".format(len(COLOURS), _FAR)
_W, _H, _LEFT, _BOTTOM, _TOP = 480, 230, 64, 44, 12
_STYLE = ("body{font-family:sans-serif;max-width:64em;margin:1.5em auto;color:#222}h2{margin-top:2em}"
          "figure{display:inline-block;margin:.5em 1em .5em 0;vertical-align:top;content-visibility:auto;"
          "contain-intrinsic-size:480px 290px}figcaption{font-weight:bold}"
          "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:left;"
          "vertical-align:top}.legend span{margin-right:1.2em;white-space:nowrap}.dot{display:inline-block;width:.8em;"
          "height:.8em;border-radius:50%;margin-right:.3em;vertical-align:middle}.small{color:#555;font-size:90%}") + \
    _POINT_STYLE


def figure_id(exercise: str, metric: str, endpoint: str) -> str:
    """The id of a figure's element on the page (tests and links find it by this)."""
    return "fig-" + "-".join(p for p in (exercise.replace("/", "-"), metric, endpoint) if p).replace(" ", "_")


def _fmt(value: float) -> str:
    return "{:.3g}".format(value)


def _offering(exercise: str) -> str:
    names = ["{} homework ({})".format(h.year, t) for h in sorted(HOMEWORKS.values(), key=lambda h: h.year)
             for t, s in h.testbeds.items() if s.exercise == exercise]
    return ", ".join(names) or "other exercises"


def _order(value: str) -> Tuple[int, float, str]:
    try:
        return (0, float(value), value)
    except ValueError:
        return (1 if value else 2, 0.0, value)


def _jitter(row: Mapping[str, Any]) -> float:
    digest = hashlib.sha1("{}|{}".format(row["student"], row["run"]).encode()).digest()
    return digest[0] / 255.0 - 0.5


def _scale(values: List[float]) -> Tuple[Any, List[float], bool]:
    """A value -> y pixel function, its ticks, and whether it is logarithmic."""
    low, high = min(values), max(values)
    log = low > 0 and high / low >= 10
    f = math.log10 if log else (lambda v: v)
    a, b = f(low), f(high)
    if a == b:
        a, b = a - (0.5 if log else abs(a) * 0.1 + 1), b + (0.5 if log else abs(b) * 0.1 + 1)
    pad = (b - a) * 0.06
    a, b = a - pad, b + pad
    span = _H - _TOP - _BOTTOM

    def y(v: float) -> float:
        return _TOP + span * (1 - (f(v) - a) / (b - a))
    ticks = [10 ** (a + (b - a) * i / 4) if log else a + (b - a) * i / 4 for i in range(5)]
    return y, ticks, log


def _figure(rows: List[Dict[str, Any]], far: set, title: str, unit: str, parameter: str, ident: str) -> str:
    cats = sorted({r["parameter_value"] for r in rows}, key=_order)
    y, ticks, log = _scale([r["value"] for r in rows])
    step = (_W - _LEFT - 10) / len(cats)
    x0 = {c: _LEFT + step * (i + 0.5) for i, c in enumerate(cats)}
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" role="img" aria-label="{}">'.format(
        _W, _H, escape(title))]
    parts.append('<line x1="{0}" y1="{1}" x2="{0}" y2="{2}" stroke="#888"/><line x1="{0}" y1="{2}" x2="{3}" '
                 'y2="{2}" stroke="#888"/>'.format(_LEFT, _TOP, _H - _BOTTOM, _W - 10))
    for t in ticks:
        parts.append('<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>'.format(
            _LEFT - 4, y(t) + 3, _fmt(t)))
    parts.append('<text x="12" y="{}" font-size="11" transform="rotate(-90 12 {})" text-anchor="middle">{}{}'
                 '</text>'.format((_H - _BOTTOM + _TOP) / 2, (_H - _BOTTOM + _TOP) / 2, escape(unit or "value"),
                                  " (log)" if log else ""))
    for c in cats:
        parts.append('<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{}</text>'.format(
            x0[c], _H - _BOTTOM + 14, escape(c or "not given")))
        places: Dict[str, List[float]] = {}  # the testbed's runs and the portable ones have medians of their own
        for r in rows:
            if r["parameter_value"] == c:
                places.setdefault(r["kind"] if r["kind"].startswith("portable") else "testbed", []).append(r["value"])
        for place, values in sorted(places.items()):
            values.sort()
            if len(values) >= 2:
                q1, q3 = (values[0], values[-1]) if len(values) < 4 else tuple(statistics.quantiles(values, n=4)[::2])
                parts.append('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#eee" stroke="#ccc">'
                             '<title>middle half of the class ({}): {} to {}</title></rect>'.format(
                                 x0[c] - step * 0.35, y(q3), step * 0.7, max(y(q1) - y(q3), 1), escape(place),
                                 _fmt(q1), _fmt(q3)))
            median = statistics.median(values)
            parts.append('<line x1="{:.1f}" x2="{:.1f}" y1="{:.1f}" y2="{:.1f}" stroke="#000" stroke-width="2">'
                         '<title>class median ({}): {} {}</title></line>'.format(
                             x0[c] - step * 0.38, x0[c] + step * 0.38, y(median), y(median), escape(place),
                             _fmt(median), escape(unit)))
    parts.append('<text x="{}" y="{}" font-size="11" text-anchor="middle">{}</text>'.format(
        (_LEFT + _W) / 2, _H - 8, escape(parameter or "parameter")))
    for r in sorted(rows, key=lambda row: id(row) in far):  # the far points last: drawn on top
        outlier = id(r) in far
        # colours by class (the page's style), not per point: a class of 200 draws about 6,000 points
        parts.append('<circle cx="{:.1f}" cy="{:.1f}" r="{}" class="k{}{}"><title>{} · {} · {} {} · {}{}</title>'
                     '</circle>'.format(x0[r["parameter_value"]] + _jitter(r) * step * 0.6, y(r["value"]),
                                        4.5 if outlier else 3, _KIND_INDEX.get(r["kind"], len(COLOURS)),
                                        " far" if outlier else "", escape(r["student"]), escape(r["run"]),
                                        _fmt(r["value"]), escape(unit), escape(r["where"]),
                                        " · far from the class" if outlier else ""))
    parts.append("</svg>")
    kinds = [k for k in COLOURS if any(r["kind"] == k for r in rows)]
    legend = "".join('<span><i class="dot" style="background:{}"></i>{}</span>'.format(COLOURS[k], escape(k))
                     for k in kinds)
    if far & set(id(r) for r in rows):
        legend += '<span><i class="dot" style="border:2px solid {}"></i>far from the class</span>'.format(_FAR)
    return ('<figure id="{}"><figcaption>{}</figcaption>{}<div class="legend small">{}</div>'
            '<div class="small">{} points, {} students</div></figure>').format(
        escape(ident), escape(title), "".join(parts), legend, len(rows), len({r["student"] for r in rows}))


def _measurements(data: ClassData) -> str:
    far = set(id(o.row) for o in data.outliers)
    figures: Dict[Tuple[str, str, str], List[Dict[str, Any]]] = {}
    for row in data.rows:
        figures.setdefault((row["exercise"], row["metric"], row["endpoint"]), []).append(row)
    if not figures:
        return "<p>No run of an exercise the page knows was recorded by the grader's execution.</p>"
    out: List[str] = []
    by_offering: Dict[str, List[Tuple[str, str, str]]] = {}
    for key in sorted(figures):
        by_offering.setdefault(_offering(key[0]), []).append(key)
    for offering, keys in by_offering.items():
        out.append("<h3>{}</h3>".format(escape(offering)))
        for exercise, metric, endpoint in keys:
            rows = figures[(exercise, metric, endpoint)]
            title = "{}: {}{}".format(exercise, metric, " ({})".format(endpoint) if endpoint else "")
            out.append(_figure(rows, far, title, rows[0]["unit"], rows[0]["parameter"],
                               figure_id(exercise, metric, endpoint)))
    return "".join(out)


def _outlier_rows(outliers: Sequence[Outlier]) -> str:
    if not outliers:
        return "<p>No point is far from the class by this rule.</p>"
    cells = "".join("<tr class='outlier'><td>{}</td><td>{}</td><td>{}</td><td>{} = {}</td><td>{} {}</td><td>{}</td>"
                    "<td>{}</td><td>{}</td><td>{}</td></tr>".format(
                        escape(o.row["student"]), escape(o.row["exercise"]), escape(o.row["run"]),
                        escape(o.row["parameter"]), escape(o.row["parameter_value"] or "not given"),
                        escape(o.row["metric"]), _fmt(o.row["value"]) + " " + escape(o.row["unit"]), _fmt(o.median),
                        o.z, escape(o.row["where"]),
                        escape("; ".join(o.misreadings)) if o.misreadings else "none that labkit detects")
                    for o in outliers)
    return ("<table><tr><th>student</th><th>exercise</th><th>run</th><th>at</th><th>figure</th><th>class median</th>"
            "<th>z</th><th>where it ran</th><th>misreading</th></tr>{}</table>".format(cells))


def _flagged(data: ClassData) -> str:
    far = set(id(o.row) for o in data.outliers)
    seen, rows = set(), []
    for row in data.rows:
        if row["flags"] and id(row) not in far and (row["student"], row["record"]) not in seen:
            seen.add((row["student"], row["record"]))
            rows.append("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                escape(row["student"]), escape(row["exercise"]), escape(row["record"]), escape(row["flags"])))
    if not rows:
        return ""
    return ("<h3>Misreadings in runs that are not far from the class</h3><table><tr><th>student</th><th>exercise"
            "</th><th>run</th><th>misreading</th></tr>{}</table>".format("".join(rows)))


def _dots(check: str, data: ClassData) -> str:
    """A dot plot of one check's points: a row per score, one dot per student (their name on hover)."""
    scores: Dict[float, List[str]] = {}
    for result in data.results:
        found = next((c for c in result.get("checks", []) if c.get("name") == check), None)
        if found is not None and not found.get("skipped"):
            scores.setdefault(round(float(found.get("score", 0)), 3), []).append(str(result["student"]))
    if not scores:
        return "<p class='small'>not graded in this run</p>"
    per_line, gap = 60, 8
    lines = {s: max(1, math.ceil(len(n) / per_line)) for s, n in scores.items()}
    height = sum(lines.values()) * 12 + 6
    parts = ['<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" class="dots">'.format(
        90 + per_line * gap, height)]
    top = 4
    for score in sorted(scores, reverse=True):
        names = scores[score]
        parts.append('<text x="0" y="{}" font-size="10">{:g} pts ({})</text>'.format(top + 9, score, len(names)))
        for i, name in enumerate(names):
            parts.append('<circle cx="{}" cy="{}" r="3.2" fill="#444"><title>{}: {:g}</title></circle>'.format(
                90 + (i % per_line) * gap, top + 5 + (i // per_line) * 12, escape(name), score))
        top += lines[score] * 12
    parts.append("</svg>")
    who = "".join("<li>{:g}: {}</li>".format(s, escape(", ".join(scores[s]))) for s in sorted(scores, reverse=True))
    return "".join(parts) + "<details><summary class='small'>who got what</summary><ul>{}</ul></details>".format(who)


def _checks(data: ClassData) -> str:
    out = []
    for row in class_summary(data.results, data.checks):
        failure = "{} ({} students)".format(escape(row["commonest_failure"][:300]), row["failure_count"]) \
            if row["failure_count"] else "none"
        out.append("<section class='check' id='check-{}'><h3>{} ({:g} points; mean {:.3g})</h3>{}<p class='small'>"
                   "Commonest failure: {}</p></section>".format(escape(row["check"]), escape(row["check"]),
                                                                row["points"], row["mean"], _dots(row["check"], data),
                                                                failure))
    return "".join(out)


def _duplicates(data: ClassData) -> str:
    found = duplicate_groups(data.results)
    if not found:
        return "<p>No evidence was handed in by more than one student.</p>"
    return "<p>Flagged for you to look at; no points are taken.</p><ul>{}</ul>".format("".join(
        "<li>{}: {}</li>".format(escape(what), escape(", ".join(names))) for what, names in found))


def class_html(data: ClassData) -> str:
    """The page (text), from :func:`labkit.grading.reports.class_data.read_class`'s data."""
    kinds = "".join('<span><i class="dot" style="background:{}"></i>{}</span>'.format(c, escape(k))
                    for k, c in COLOURS.items())
    return (
        "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{title}: the class</title><style>{style}</style>"
        "</head><body><h1>{title}: the class at a glance</h1><p>{n} students, {points} measured points in {runs} "
        "runs the grader's own execution recorded. Each point is one run (an inference run per endpoint); the "
        "black line is the class median at that value, the grey box the middle half of the class (the testbed's "
        "runs and the portable runs apart). Hover a point for the student and the run.</p><p class='legend'>"
        "{kinds}<span><i class='dot' style='border:2px solid {far}'></i>far from the class</span></p>"
        "<h2 id='measurements'>What the class measured</h2>{figures}"
        "<h2 id='outliers'>Far from the class ({nfar})</h2><p class='small' id='rule'>{rule}</p>{outliers}{flagged}"
        "<h2 id='checks'>Points per check</h2>{checks}<h2 id='duplicates'>Evidence handed in by more than one "
        "student</h2>{duplicates}</body></html>\n"
    ).format(title=escape(data.title), style=_STYLE, n=len(data.results), points=len(data.rows),
             runs=len({(r["student"], r["record"]) for r in data.rows}), kinds=kinds, far=_FAR,
             figures=_measurements(data), nfar=len(data.outliers), rule=escape(RULE),
             outliers=_outlier_rows(data.outliers), flagged=_flagged(data), checks=_checks(data),
             duplicates=_duplicates(data))
