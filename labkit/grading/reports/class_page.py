"""The class at a glance: ``DIR/class.html``, one self-contained page after every ``labkit grade``.

What every student measured, as one long table: each exercise's headline figures against the parameter
its homework varies (:data:`FIGURES`), with the points far from the class (:data:`RULE`); what the page
shows: docs/grading.md, "After grading". The figures are SVG inside the page (no script, nothing fetched),
so it opens from a file offline and a class of 200 stays well under 2 MB; this module works out what the page
shows, and templates/class.html.j2 and figure.html.j2 (through :mod:`labkit.grading.reports.render`) draw it.
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
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from labkit import results, stats
from labkit.errors import LabkitError
from labkit.grading.checks.duplicates import groups as duplicate_groups
from labkit.grading.reports.gradebook import class_summary
from labkit.grading.reports.render import macro, render
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
_W, _H, _LEFT, _BOTTOM, _TOP = 480, 230, 64, 44, 12


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


class _Point(NamedTuple):
    """One run's point: its pixels, its text (escaped by the template) and whether it is far from the class."""

    x: float
    y: float
    far: bool
    kind: int  # its colour: the index of where it ran in COLOURS (len(COLOURS): grey)
    student: str
    run: str
    value: float
    where: str


class _Box(NamedTuple):
    """The middle half of a place's runs at one parameter value, and its quartiles."""

    x: float
    y: float
    width: float
    height: float
    q1: float
    q3: float


class _Place(NamedTuple):
    """The testbed's runs, or the portable ones, at one parameter value: their median line and box."""

    name: str
    box: Optional[_Box]
    x1: float
    x2: float
    y: float
    median: float


class _Category(NamedTuple):
    x: float
    label: str
    places: List[_Place]


class _Tick(NamedTuple):
    y: float
    label: str


class _Figure(NamedTuple):
    """One figure as templates/figure.html.j2 draws it: its pixels, and the class's text to be escaped there.

    Named tuples, not dicts: the template reads each point's fields, and a class of 200 draws about 6,000 points.
    """

    id: str
    title: str
    unit: str
    parameter: str
    log: bool
    width: int
    height: int
    left: int
    top: int
    bottom: int
    right: int
    middle: float
    axis_x: float
    ticks: List[_Tick]
    categories: List[_Category]
    points: List[_Point]
    legend: List[Tuple[str, str]]
    far: str  # the far points' colour in the legend, or "" when the figure has none
    students: int


def _figure_data(rows: List[Dict[str, Any]], far: set, title: str, unit: str, parameter: str,
                 ident: str) -> _Figure:
    cats = sorted({r["parameter_value"] for r in rows}, key=_order)
    y, ticks, log = _scale([r["value"] for r in rows])
    step = (_W - _LEFT - 10) / len(cats)
    x0 = {c: _LEFT + step * (i + 0.5) for i, c in enumerate(cats)}
    categories = []
    for c in cats:
        places: Dict[str, List[float]] = {}  # the testbed's runs and the portable ones have medians of their own
        for r in rows:
            if r["parameter_value"] == c:
                places.setdefault(r["kind"] if r["kind"].startswith("portable") else "testbed", []).append(r["value"])
        drawn = []
        for place, values in sorted(places.items()):
            values.sort()
            box = None
            if len(values) >= 2:
                q1, q3 = stats.percentile(values, 25), stats.percentile(values, 75)
                box = _Box(x0[c] - step * 0.35, y(q3), step * 0.7, max(y(q1) - y(q3), 1), q1, q3)
            median = statistics.median(values)
            drawn.append(_Place(place, box, x0[c] - step * 0.38, x0[c] + step * 0.38, y(median), median))
        categories.append(_Category(x0[c], c, drawn))
    points = [_Point(x0[r["parameter_value"]] + _jitter(r) * step * 0.6, y(r["value"]), id(r) in far,
                     _KIND_INDEX.get(r["kind"], len(COLOURS)), r["student"], r["run"], r["value"], r["where"])
              for r in sorted(rows, key=lambda row: id(row) in far)]  # the far points last: drawn on top
    return _Figure(id=ident, title=title, unit=unit, parameter=parameter, log=log, width=_W, height=_H, left=_LEFT,
                   top=_TOP, bottom=_H - _BOTTOM, right=_W - 10, middle=(_H - _BOTTOM + _TOP) / 2,
                   axis_x=(_LEFT + _W) / 2, ticks=[_Tick(y(t) + 3, _fmt(t)) for t in ticks], categories=categories,
                   points=points, legend=[(k, COLOURS[k]) for k in COLOURS if any(r["kind"] == k for r in rows)],
                   far=_FAR if far & set(id(r) for r in rows) else "", students=len({r["student"] for r in rows}))


def _figure(rows: List[Dict[str, Any]], far: set, title: str, unit: str, parameter: str, ident: str) -> str:
    """One figure's markup (``<figure>``, its SVG inside), as the page draws it."""
    return macro("figure.html.j2", "figure", _figure_data(rows, far, title, unit, parameter, ident))


def _measurements(data: ClassData) -> List[Tuple[str, List[_Figure]]]:
    """``[(offering, [figure])]``: each exercise's figures, by the homework that asks for it."""
    far = set(id(o.row) for o in data.outliers)
    figures: Dict[Tuple[str, str, str], List[Dict[str, Any]]] = {}
    for row in data.rows:
        figures.setdefault((row["exercise"], row["metric"], row["endpoint"]), []).append(row)
    by_offering: Dict[str, List[_Figure]] = {}
    for exercise, metric, endpoint in sorted(figures):
        rows = figures[(exercise, metric, endpoint)]
        title = "{}: {}{}".format(exercise, metric, " ({})".format(endpoint) if endpoint else "")
        by_offering.setdefault(_offering(exercise), []).append(_figure_data(
            rows, far, title, rows[0]["unit"], rows[0]["parameter"], figure_id(exercise, metric, endpoint)))
    return list(by_offering.items())


def _flagged(data: ClassData) -> List[Mapping[str, Any]]:
    """The rows of runs whose misreadings labkit detects though they are not far from the class, one per run."""
    far = set(id(o.row) for o in data.outliers)
    seen, rows = set(), []
    for row in data.rows:
        if row["flags"] and id(row) not in far and (row["student"], row["record"]) not in seen:
            seen.add((row["student"], row["record"]))
            rows.append(row)
    return rows


def _dots(scores: Dict[float, List[str]]) -> Dict[str, Any]:
    """A dot plot of one check's points as the page draws it: a row per score, one dot per student."""
    per_line, gap = 60, 8
    lines = {s: max(1, math.ceil(len(n) / per_line)) for s, n in scores.items()}
    rows, top = [], 4
    for score in sorted(scores, reverse=True):
        names = scores[score]
        rows.append({"score": score, "y": top + 9, "names": names,
                     "dots": [(name, 90 + (i % per_line) * gap, top + 5 + (i // per_line) * 12)
                              for i, name in enumerate(names)]})
        top += lines[score] * 12
    return {"width": 90 + per_line * gap, "height": sum(lines.values()) * 12 + 6, "rows": rows}


def class_html(data: ClassData) -> str:
    """The page (text), from :func:`read_class`'s data: templates/class.html.j2."""
    return render("class.html.j2", data=data, runs=len({(r["student"], r["record"]) for r in data.rows}),
                  colours=list(COLOURS.items()), far=_FAR, measurements=_measurements(data), rule=RULE,
                  flagged=_flagged(data),
                  checks=[dict(row, dots=_dots(row["students"])) for row in class_summary(data.results, data.checks)],
                  duplicates=duplicate_groups(data.results))
