"""What every student of a graded class measured, as one long table, with the points far from the class.

The runs are those the grader's own execution recorded; each exercise shows its headline figures
against the parameter its homework varies (:data:`FIGURES`), one run per endpoint, never pooled.
The rule for "far" is :data:`RULE`; the misreadings named beside a point are listed in
docs/grading.md, "After grading".
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from labkit import results
from labkit.errors import LabkitError
from labkit.testbeds.homework.hardware import where_it_ran

__all__ = ["COLUMNS", "FIGURES", "RULE", "MIN_GROUP", "THRESHOLD", "ClassData", "Outlier", "read_class",
           "class_data", "run_rows", "student_runs", "find_outliers", "long_csv", "place_kind",
           "ClassDataError"]

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


def place_kind(where: str, run: Mapping[str, Any]) -> str:
    """The colour a point gets: testbed log, testbed run, saved response, portable: CPU, portable: GPU."""
    if where.startswith("portable"):
        return where
    if (run.get("params") or {}).get("response_kind"):
        return "saved response"
    return "testbed log" if run.get("source") == "log" else "testbed run"


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


def _flags(run: Mapping[str, Any]) -> List[str]:
    notes = " ".join(str(n) for n in (run.get("notes") or [])[:50])
    return list(dict.fromkeys(name for text, name in _NOTE_MISREADINGS if text in notes))


def run_rows(student: str, name: str, run: Mapping[str, Any], where: str) -> List[Dict[str, Any]]:
    """The points of one recorded run (its dict): its headline figures, one row each (per endpoint if several)."""
    exercise = str(run.get("exercise", ""))
    if exercise not in FIGURES:
        return []
    names, metrics, prefixes = FIGURES[exercise]
    from labkit import exercises
    table = exercises.metric_table(exercise)
    units = {m.name: m.unit for m in table}
    kind = place_kind(where, run)
    flags = "; ".join(_flags(run))
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


def _state(out_dir: str) -> Dict[str, Dict[str, Any]]:
    path = os.path.join(out_dir, ".labkit-grade", "state.json")
    if not os.path.isfile(path):
        raise ClassDataError("DIR: {} holds no grading state ({} is missing): run `labkit grade ... --out {}` "
                             "first".format(out_dir, path, out_dir))
    try:
        with open(path, encoding="utf-8") as f:
            return dict(json.load(f).get("results") or {})
    except (ValueError, AttributeError) as exc:
        raise ClassDataError("DIR: {} is not a grading state labkit can read ({})".format(path, exc)) from None


def _rubric(out_dir: str, results_: List[Dict[str, Any]]) -> Tuple[str, List[str]]:
    path = os.path.join(out_dir, ".labkit-grade", "rubric.json")
    if os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        return str(data.get("title", "")), [str(n) for n in data.get("checks", [])]
    names: List[str] = []
    for result in results_:
        names += [c["name"] for c in result.get("checks", []) if c.get("name") not in names]
    return "", names


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
        key = _group_key(dict(row, kind=kind))
        centre = centres.get(key)
        if centre is not None and _z(row["value"], centre) <= THRESHOLD:
            return ["a portable run labelled as a testbed's (its figure sits with the class's {} runs, median "
                    "{:.3g})".format(kind, 10 ** centre[0])]
    return []


def read_class(out_dir: str, cache: Optional[Dict[Tuple[str, str], Any]] = None) -> ClassData:
    """What `labkit grade` wrote in ``out_dir``, as the page and the long table need it."""
    results_ = [r for r in _state(out_dir).values() if isinstance(r, dict) and r.get("student")]
    return class_data(out_dir, results_, {} if cache is None else cache)


def class_data(out_dir: str, results_: List[Dict[str, Any]], cache: Dict[Tuple[str, str], Any]) -> ClassData:
    """Every student's points and the outliers; ``cache``: each student's recorded runs by (student, key)."""
    results_ = sorted(results_, key=lambda r: str(r.get("student")))
    title, checks = _rubric(out_dir, results_)
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
