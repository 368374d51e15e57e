"""The class at a glance: ``DIR/class.html``, one self-contained page after every ``labkit grade``.

What every student measured, as one long table: each exercise's headline figures against the parameter
its homework varies (:data:`FIGURES`), with the points far from the class (:data:`RULE`); what the page
shows: docs/grading.md, "After grading". The figures are hand-written SVG inside the page (no script,
nothing fetched), so it opens from a file offline and a class of 200 stays well under 2 MB.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from html import escape
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit import results, stats
from labkit.errors import LabkitError
from labkit.grading.checks.duplicates import groups as duplicate_groups
from labkit.grading.reports.gradebook import class_summary
from labkit.testbeds.homework.hardware import where_it_ran
from labkit.testbeds.homework.homeworks import HOMEWORKS

__all__ = ["COLUMNS", "FIGURES", "RULE", "ClassData", "read_class", "class_data", "run_rows", "long_csv",
           "ClassDataError", "class_html", "figure_id"]

COLUMNS = ("student", "exercise", "run", "endpoint", "parameter", "parameter_value", "metric", "value", "unit",
           "where", "kind", "flags")

#: exercise -> (the parameters it varies, first found wins; headline metrics; series prefixes -> metric)
FIGURES: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...], Tuple[Tuple[str, str], ...]]] = {
    "cerebras/llama2_7b": (("batch_size",), ("global_rate", "tokens_per_s"), ()),
    "cerebras/bert_large": (("batch_size",), ("global_rate", "samples_per_sec"), ()),
    "sambanova/bert_large": (("ntasks",), ("training_sequences_per_second",), ()),
    "graphcore/mnist": (("learning_rate", "epochs"), ("test_accuracy", "train_throughput", "mean_epoch_time"), ()),
    "groq/bert_tiny": (("max_seq_length",), ("groq_e2e_latency_ms", "cpu_e2e_latency_ms",
                                             "onnxruntime_e2e_latency_ms", "cuda_e2e_latency_ms"), ()),
    "sambanova/inference": (("concurrency",), ("ttft_median", "tpot_median", "e2el_median", "output_throughput"),
                            (("ttft_median_time", "ttft_median"), ("tpot_median_time", "tpot_median"),
                             ("e2el_median_latency", "e2el_median"), ("output_throughput", "output_throughput"))),
    "comparison/ipu_vs_gpu": (("replicas",), (), (("throughput_speedup_mb", "speedup"),)),
}

THRESHOLD = 3.5
MIN_GROUP = 5
# The least MAD, in decades: identical honest figures (everyone read the same log) must not make every
# other point far; a portable run's times depend on the student's machine (a 2x spread is honest).
_MAD_FLOOR = {"testbed": 0.05, "portable": 0.1}
RULE = ("A point is far from the class when its modified z-score 0.6745 x |log10(value) - median| / MAD exceeds {} "
        "(Iglewicz and Hoaglin), the median and the median absolute deviation (MAD) of log10(value) taken over the "
        "runs of the same figure, parameter value and kind of place (testbed, portable CPU, portable GPU), in "
        "groups of at least {} runs; the MAD is taken as at least {} decades for testbed runs and {} for portable "
        "ones (whose times depend on the student's machine): a testbed figure is far beyond about {:.1f} times the "
        "median or below 1/{:.1f} of it, a portable one beyond about {:.1f} times.").format(
            THRESHOLD, MIN_GROUP, _MAD_FLOOR["testbed"], _MAD_FLOOR["portable"],
            10 ** (THRESHOLD * _MAD_FLOOR["testbed"] / 0.6745), 10 ** (THRESHOLD * _MAD_FLOOR["testbed"] / 0.6745),
            10 ** (THRESHOLD * _MAD_FLOOR["portable"] / 0.6745))

_MAX_RUNS = 200  # per student: a page stays light whatever a notebook recorded
_MAX_POINTS = 64  # per series
_MAX_VARIANTS = 8  # endpoints (or micro-batches) per figure of a run
_NOTE_MISREADINGS = (("counts prompt tokens as output", "prompt tokens counted as output tokens"),
                     ("(prompt + completion tokens) / latency", "prompt tokens counted as output tokens"),
                     ("so no concurrency was measured", "one request stream's throughput, not the endpoint's "
                                                         "under load"))
_TRAINING_TIME = ("mean_epoch_time", "epoch_time", "train_seconds", "total_train_time", "e2e_train_time")
_GPU = ("cuda", "gpu", "mps", "rocm", "xpu")


class ClassDataError(LabkitError, ValueError):
    """An output folder that `labkit grade` did not write (or not yet)."""


@dataclass
class Outlier:
    row: Dict[str, Any]
    median: float
    z: float
    misreadings: List[str] = field(default_factory=list)


@dataclass
class ClassData:
    """What the page shows: the long table, the outliers, the graded results and the rubric's checks."""

    rows: List[Dict[str, Any]]
    outliers: List[Outlier]
    results: List[Dict[str, Any]]
    checks: List[str]
    title: str


def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _parameter(run: Mapping[str, Any], names: Sequence[str]) -> Tuple[str, str]:
    params = run.get("params") or {}
    for name in names:
        value = params.get(name)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        if _number(value) is not None or (isinstance(value, str) and value):
            return name, "{:g}".format(value) if _number(value) is not None else str(value)[:40]
    return names[0] if names else "", ""


def run_rows(student: str, name: str, run: Mapping[str, Any], where: str) -> List[Dict[str, Any]]:
    """The points of one recorded run (its dict): its headline figures, one row each (per endpoint if several)."""
    exercise = str(run.get("exercise", ""))
    if exercise not in FIGURES:
        return []
    names, metrics, prefixes = FIGURES[exercise]
    from labkit import exercises
    units = {m.name: m.unit for m in exercises.metric_table(exercise)}
    if where.startswith("portable"):
        kind = where
    elif (run.get("params") or {}).get("response_kind"):
        kind = "saved response"
    else:
        kind = "testbed log" if run.get("source") == "log" else "testbed run"
    notes = " ".join(str(n) for n in (run.get("notes") or [])[:50])
    flags = "; ".join(dict.fromkeys(name for text, name in _NOTE_MISREADINGS if text in notes))
    base = {"student": student, "exercise": exercise, "where": where, "kind": kind, "flags": flags, "record": name}
    rows: List[Dict[str, Any]] = []
    series = run.get("series") or {}
    for prefix, metric in prefixes:
        for key in sorted(k for k in series if isinstance(k, str) and k.startswith(prefix))[:_MAX_VARIANTS]:
            variant = key[len(prefix):].lstrip(":")[:40]
            data = series[key] if isinstance(series[key], dict) else {}
            xs, ys = data.get("x"), data.get("y")
            if not isinstance(xs, list) or not isinstance(ys, list):
                continue
            for x, y in list(zip(xs, ys))[:_MAX_POINTS]:
                if _number(y) is None or _number(x) is None:
                    continue
                rows.append(dict(base, run="{}:{}".format(name, variant) if variant else name, endpoint=variant,
                                 parameter=names[0], parameter_value="{:g}".format(x), metric=metric,
                                 value=float(y), unit=units.get(metric, "")))
    if rows:  # the run's figures per endpoint (or per micro-batch): its headline metrics are one of them
        return rows
    parameter, value_of = _parameter(run, names)
    endpoints = (run.get("params") or {}).get("endpoint_names") or []
    endpoint = str(endpoints[0]) if isinstance(endpoints, list) and len(endpoints) == 1 else ""
    for metric in metrics:
        value = _number((run.get("metrics") or {}).get(metric))
        if value is not None:
            rows.append(dict(base, run=name, endpoint=endpoint, parameter=parameter, parameter_value=value_of,
                             metric=metric, value=value, unit=units.get(metric, "")))
    return rows


def student_runs(out_dir: str, result: Mapping[str, Any]) -> List[Tuple[str, Dict[str, Any], str]]:
    """``[(record name, record, where)]``: the runs the grader recorded for this student, as its state lists them."""
    graded = {r.get("name"): r.get("where", "") for r in result.get("runs") or []}
    path = os.path.join(out_dir, "executed", str(result.get("student", "")) + ".ipynb")
    if not graded or not os.path.isfile(path):
        return []
    try:
        records = results.read(path).records
    except (OSError, ValueError):
        return []
    found = [(name, data, graded[name] or where_it_ran(data)) for name, data in records.items()
             if name in graded and isinstance(data, dict) and isinstance(data.get("metrics"), dict)]
    return found[:_MAX_RUNS]


def _group_key(row: Mapping[str, Any]) -> Tuple[Any, ...]:
    # a saved response measures the same service as a run made through it: one group, the testbed's
    kind = row["kind"] if row["kind"].startswith("portable") else "testbed"
    return row["exercise"], row["metric"], row["endpoint"], row["parameter_value"], kind


def _centre(values: List[float], floor: float) -> Optional[Tuple[float, float]]:
    logs = [math.log10(v) for v in values if v > 0]
    if len(logs) < MIN_GROUP:
        return None
    median = statistics.median(logs)
    return median, max(statistics.median(abs(v - median) for v in logs), floor)


def _z(value: float, centre: Tuple[float, float]) -> float:
    return 0.6745 * abs(math.log10(value) - centre[0]) / centre[1] if value > 0 else 0.0


def find_outliers(rows: List[Dict[str, Any]], records: Mapping[Tuple[str, str], Mapping[str, Any]]) -> List[Outlier]:
    """The points far from their group (:data:`RULE`), each with the misreadings that explain it; also flags rows."""
    groups: Dict[Tuple[Any, ...], List[float]] = {}
    for row in rows:
        groups.setdefault(_group_key(row), []).append(row["value"])
    centres = {key: _centre(values, _MAD_FLOOR["portable" if key[-1].startswith("portable") else "testbed"])
               for key, values in groups.items()}
    found = []
    for row in rows:
        centre = centres[_group_key(row)]
        if centre is None or _z(row["value"], centre) <= THRESHOLD:
            continue
        record = records.get((row["student"], row["record"])) or {}
        extra = _compile_counted(row, record, centre) + _portable_as_testbed(row, record, centres)
        found_flags = [f for f in row["flags"].split("; ") if f] + extra
        row["flags"] = "; ".join(["far from the class"] + found_flags)
        found.append(Outlier(row, 10 ** centre[0], round(_z(row["value"], centre), 1), found_flags))
    return found


def _compile_counted(row: Mapping[str, Any], record: Mapping[str, Any], centre: Tuple[float, float]) -> List[str]:
    """A training time that comes back to the class once the run's own compile time is taken off."""
    if row["metric"] not in _TRAINING_TIME:
        return []
    metrics = record.get("metrics") or {}
    compiles = [v for k, v in metrics.items() if "compile" in k and "latency" not in k and _number(v)]
    for seconds in compiles:
        rest = row["value"] - float(seconds)
        if seconds > 0 and rest > 0 and _z(rest, centre) <= THRESHOLD:
            return ["compile time read as training time ({} less its compile time {:.3g} s is {:.3g} s, with the "
                    "class)".format(row["metric"], seconds, rest)]
    return []


def _portable_as_testbed(row: Mapping[str, Any], record: Mapping[str, Any],
                         centres: Mapping[Tuple[Any, ...], Optional[Tuple[float, float]]]) -> List[str]:
    """A run labelled a testbed's whose device is a CPU or GPU, or whose figure sits with the portable runs."""
    if row["kind"].startswith("portable"):
        return []
    device = str((record.get("environment") or {}).get("device") or (record.get("params") or {}).get("device") or "")
    if device.lower().startswith(("cpu",) + _GPU):
        return ["a portable run labelled as a testbed's (its device is {})".format(device[:20])]
    for kind in ("portable: CPU", "portable: GPU"):
        centre = centres.get(_group_key(dict(row, kind=kind)))
        if centre is not None and _z(row["value"], centre) <= THRESHOLD:
            return ["a portable run labelled as a testbed's (its figure sits with the class's {} runs, median "
                    "{:.3g})".format(kind, 10 ** centre[0])]
    return []


def read_class(out_dir: str, cache: Optional[Dict[Tuple[str, str], Any]] = None) -> ClassData:
    """What `labkit grade` wrote in ``out_dir``, as the page and the long table need it."""
    path = os.path.join(out_dir, ".labkit-grade", "state.json")
    if not os.path.lexists(path):
        raise ClassDataError("DIR: {} holds no grading state ({} is missing): run `labkit grade ... --out {}` "
                             "first".format(out_dir, path, out_dir))
    try:
        state = _read_json(path).get("results") or {}
        if not isinstance(state, dict):
            raise ValueError("its results are not a mapping of students")
    except (OSError, ValueError, AttributeError) as exc:
        raise ClassDataError("DIR: {} is not a grading state labkit can read ({})".format(path, exc)) from None
    results_ = [r for r in state.values() if isinstance(r, dict) and r.get("student")]
    for result in results_:
        checks = result.get("checks", [])
        if not isinstance(checks, list) or not all(isinstance(c, dict) and "name" in c for c in checks):
            raise ClassDataError("DIR: {} is not a grading state labkit can read (the checks of {!r} are not a list "
                                 "of checks)".format(path, str(result["student"])[:80]))
    return class_data(out_dir, results_, {} if cache is None else cache)


def _read_json(path: str) -> Any:
    """The JSON in ``path``, a regular file: never a FIFO or a link, whose open might block or lead elsewhere."""
    if os.path.islink(path) or not os.path.isfile(path):
        raise ValueError("not a regular file")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def class_data(out_dir: str, results_: List[Dict[str, Any]], cache: Dict[Tuple[str, str], Any]) -> ClassData:
    """Every student's points and the outliers; ``cache``: each student's recorded runs by (student, key)."""
    results_ = sorted(results_, key=lambda r: str(r.get("student")))
    path = os.path.join(out_dir, ".labkit-grade", "rubric.json")
    title, checks = "", []
    if os.path.lexists(path):
        try:
            rubric = _read_json(path)
            title, checks = str(rubric.get("title", "")), [str(n) for n in rubric.get("checks", [])]
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            raise ClassDataError("DIR: {} is not the rubric's summary labkit wrote ({}); `labkit grade` writes it "
                                 "again".format(path, exc)) from None
    else:
        for result in results_:
            checks += [c["name"] for c in result.get("checks", []) if c.get("name") not in checks]
    rows: List[Dict[str, Any]] = []
    records: Dict[Tuple[str, str], Mapping[str, Any]] = {}
    for result in results_:
        student = str(result.get("student"))
        key = (student, str(result.get("key", "")) + str(result.get("seconds", "")))
        if key not in cache:
            cache[key] = student_runs(out_dir, result)
        for name, data, where in cache[key]:
            records[(student, name)] = data
            rows.extend(run_rows(student, name, data, where))
    return ClassData(rows, find_outliers(rows, records), results_, checks, title or "Class")


def long_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """The long table as CSV text (:data:`COLUMNS`), one row per point."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([repr(row[c]) if c == "value" else row.get(c, "") for c in COLUMNS])
    return out.getvalue()


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
                q1, q3 = stats.percentile(values, 25), stats.percentile(values, 75)
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


def _dots(scores: Dict[float, List[str]]) -> str:
    """A dot plot of one check's points: a row per score, one dot per student (their name on hover)."""
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
                                                                row["points"], row["mean"], _dots(row["students"]),
                                                                failure))
    return "".join(out)


def _duplicates(data: ClassData) -> str:
    found = duplicate_groups(data.results)
    if not found:
        return "<p>No evidence was handed in by more than one student.</p>"
    return "<p>Flagged for you to look at; no points are taken.</p><ul>{}</ul>".format("".join(
        "<li>{}: {}</li>".format(escape(what), escape(", ".join(names))) for what, names in found))


def class_html(data: ClassData) -> str:
    """The page (text), from :func:`read_class`'s data."""
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
