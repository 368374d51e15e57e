"""The check types that read recorded runs (picked by exercise and parameters, values compared by
:func:`labkit.results.same_value`): ``record`` (a metric in a range), ``runs`` (distinct
values of a parameter tried), ``reproduce`` (the submitted records against the grader's) and
``rerun`` (one portable run per exercise re-run with the lab book's notebook); and trusted
recomputation: a check with ``recompute: module:function`` counts a record only when trusted code,
run on the record's parameters in a sandboxed process, agrees with it (:mod:`labkit.grading.recompute`)."""

from __future__ import annotations

import fnmatch
import json
import math
from typing import Any, Dict, List, Optional, Tuple

from labkit.grading.checks.evidence import NUMBER, Check, CheckResult, Evidence, runs_in
from labkit.grading.sandbox.trusted import quoted
from labkit.testbeds.homework.hardware import is_portable, where_it_ran
from labkit.results import Run, same_value

__all__ = ["grade_record", "grade_runs", "grade_reproduce", "grade_rerun", "prefetch_trusted"]


def split_evidence(check: Check, runs: List[Tuple[str, Run]]) -> Tuple[List[Tuple[str, Run]], str]:
    """The runs the check may count, testbed runs first, and a sentence about the portable runs it refuses."""
    testbed = [(n, r) for n, r in runs if not is_portable(r)]
    portable = [(n, r) for n, r in runs if is_portable(r)]
    if check.testbed_only and portable:
        names = ", ".join("'{}' ({})".format(n, where_it_ran(r)) for n, r in portable[:3])
        return testbed, ("{} portable run(s) not counted ({}): this check asks for testbed evidence "
                         "(evidence: testbed); a portable run models the exercise, it does not measure the "
                         "testbed. Hand in a testbed log, or a lab-book notebook run on the testbed".format(
                             len(portable), names))
    return testbed + portable, ""


def run_label(name: str, run: Run) -> str:
    return "record {} ({})".format(quoted(name), where_it_ran(run))


def select_runs(check: Check, evidence: Evidence, records: Optional[Dict[str, Any]] = None) -> List[Tuple[str, Run]]:
    runs = runs_in(records) if records is not None else evidence.fresh_runs()
    pattern = check.options.get("exercise")
    where = check.options.get("where") or {}
    patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
    return [(name, run) for name, run in runs
            if (not patterns or any(fnmatch.fnmatch(run.exercise, p) for p in patterns))
            and all(same_value(run.params.get(k), v) for k, v in where.items())]


def describe_selection(check: Check) -> str:
    pattern = check.options.get("exercise")
    text = (pattern if isinstance(pattern, str) else ", ".join(pattern)) if pattern else "any exercise"
    where = check.options.get("where")
    if where:
        text += " with " + ", ".join("{}={}".format(k, v) for k, v in where.items())
    return text


def fmt_value(value: Any) -> str:
    return "{:.6g}".format(value) if isinstance(value, float) else quoted(value)


def _first_of(names: Any, found: Dict[str, Any]) -> Optional[str]:
    """The first of ``names`` in ``found``: a check's ``metric`` or ``parameter`` may list alternatives
    (the GroqChip's accuracy and the CPU's, for testbed and portable runs)."""
    for name in ([names] if isinstance(names, str) else names):
        if name in found:
            return name
    return None


def _key(params: Dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def prefetch_trusted(checks: List["Check"], evidence: Evidence) -> None:
    """Recompute, in one sandboxed process per function, every run a recompute check may look at."""
    wanted: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for check in checks:
        function = check.options.get("recompute")
        if function:
            for _name, run in select_runs(check, evidence):
                wanted.setdefault(function, {})[_key(run.params)] = dict(run.params)
    for function, by_key in wanted.items():
        todo = [k for k in by_key if (function, k) not in evidence.trusted]
        if not todo:
            continue
        if evidence.recompute is None:
            answers: List[Dict[str, Any]] = [{"error": "the grader cannot recompute records here"}] * len(todo)
        else:
            try:
                answers = evidence.recompute(function, [by_key[k] for k in todo])
            except Exception as exc:
                answers = [{"error": "recomputation failed: {}".format(str(exc)[:200])}] * len(todo)
        for k, answer in zip(todo, answers):
            evidence.trusted[(function, k)] = answer


def verify_run(check: Check, evidence: Evidence, run: Run, metrics: Optional[List[str]] = None) -> Optional[str]:
    """None when trusted code, given the run's recorded parameters, agrees with the record (metrics, and
    params where it returns them); checks without ``recompute`` trust the record."""
    function = check.options.get("recompute")
    if not function:
        return None
    prefetch_trusted([check], evidence)
    answer = evidence.trusted.get((function, _key(run.params)), {"error": "not recomputed"})
    if "error" in answer:
        return "the grader could not recompute it from its parameters ({})".format(answer["error"])
    trusted = answer.get("ok", {})
    t_metrics = trusted.get("metrics", trusted) if isinstance(trusted.get("metrics"), dict) else trusted
    t_params = trusted.get("params", {}) if isinstance(trusted.get("params"), dict) else {}
    tolerance = float(check.options.get("tolerance", 1e-6))
    for name, value in t_params.items():
        if name in run.params and not same_value(run.params[name], value):
            return "recorded {} = {} but the grader read {}".format(name, fmt_value(run.params[name]), fmt_value(value))
    for metric in (metrics if metrics is not None else [m for m in run.metrics if m in t_metrics]):
        if metric not in t_metrics:
            return "the grader's recomputation gives no '{}'".format(metric)
        if not same_value(run.metrics[metric], t_metrics[metric], rtol=tolerance):
            return "recorded {} = {} but the grader recomputed {} from the recorded parameters".format(
                metric, fmt_value(run.metrics[metric]), fmt_value(t_metrics[metric]))
    return None


def grade_record(check: Check, evidence: Evidence) -> CheckResult:
    low, high = check.options.get("min"), check.options.get("max")
    wanted = check.options["metric"]
    shown_metric = wanted if isinstance(wanted, str) else " or ".join(wanted)
    recorded = [(n, r) for n, r in select_runs(check, evidence) if _first_of(wanted, r.metrics)]
    runs, refused = split_evidence(check, recorded)
    if not runs:
        return check.result(0, refused or "no run of {} recorded the metric '{}' when the grader ran the notebook".format(
            describe_selection(check), shown_metric))
    metric_of = {id(r): _first_of(wanted, r.metrics) for _n, r in runs}

    def in_range(run: Run) -> bool:
        value = run.metrics[metric_of[id(run)]]
        return isinstance(value, NUMBER) and not isinstance(value, bool) and math.isfinite(float(value)) and \
            (low is None or value >= low) and (high is None or value <= high)

    problems = [refused] if refused else []
    # the first run the grader can confirm scores: full credit in range, else partial credit
    for name, run in sorted(runs, key=lambda named: not in_range(named[1])):
        metric = metric_of[id(run)]
        problem = verify_run(check, evidence, run, [metric])
        if problem is not None:
            problems.append("{}: {}".format(run_label(name, run), problem))
            continue
        shown = "{}: {} = {}".format(run_label(name, run), metric, fmt_value(run.metrics[metric]))
        if in_range(run):
            reason = "{} is within {}".format(shown, _range(low, high))
            fraction = 1.0
            if is_portable(run) and check.portable_cap() < 1.0:
                fraction = check.portable_cap()
                reason += "; a portable run earns {:g} of the {:g} points (portable_points)".format(
                    check.options.get("portable_points", 0), check.points)
            return check.result(fraction, "; ".join([reason] + problems), where=where_it_ran(run))
        problems.append("{} is outside {}".format(shown, _range(low, high)))
        fraction = float(check.options.get("partial", 0))
        if is_portable(run):
            fraction = min(fraction, check.portable_cap())
        return check.result(fraction, "; ".join(problems[-3:]), where=where_it_ran(run))
    return check.result(0, "; ".join(problems[:3]))


def _range(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return "[{}, {}]".format(low, high)
    if low is not None:
        return ">= {}".format(low)
    if high is not None:
        return "<= {}".format(high)
    return "any value"


def grade_runs(check: Check, evidence: Evidence) -> CheckResult:
    parameter = check.options["parameter"]
    needed = int(check.options.get("at_least", 2))
    runs, refused = split_evidence(check, select_runs(check, evidence))
    counted: List[Tuple[Any, Run]] = []  # (value, run), testbed runs first
    rejected: List[str] = []
    for name, run in runs:
        key = _first_of(parameter, run.params)
        if key is None:
            continue
        value = run.params[key] if isinstance(parameter, str) else "{}={}".format(key, run.params[key])
        if any(same_value(value, v) for v, _r in counted):
            continue
        problem = verify_run(check, evidence, run)
        if problem:
            rejected.append("{} not counted: {}".format(run_label(name, run), problem))
            continue
        counted.append((value, run))

    def fraction_of(values: List[Any]) -> float:
        fraction = min(len(values), needed) / float(needed)
        if "default" in check.options and not any(same_value(check.options["default"], v) for v in values):
            fraction = min(fraction, (needed - 1) / float(needed))
        return fraction

    values = [v for v, _r in counted]
    testbed_values = [v for v, r in counted if not is_portable(r)]
    fraction = max(fraction_of(testbed_values), min(fraction_of(values), check.portable_cap()))
    shown = ", ".join("{} ({})".format(fmt_value(v) if isinstance(parameter, str) else v, where_it_ran(r))
                      for v, r in counted) or "none"
    what = parameter if isinstance(parameter, str) else " or ".join(parameter)
    reason = "{} distinct value(s) of {} tried in runs of {}: {}; {} needed".format(
        len(values), what, describe_selection(check), shown, needed)
    if "default" in check.options and not any(same_value(check.options["default"], v) for v in values):
        reason += "; the default {} is not among them".format(fmt_value(check.options["default"]))
    if fraction < fraction_of(values):
        reason += "; portable runs earn at most {:g} of the {:g} points (portable_points)".format(
            check.options.get("portable_points", 0), check.points)
    if refused:
        reason += "; " + refused
    if rejected:
        reason += "; " + "; ".join(rejected[:3])
    wheres = ", ".join(dict.fromkeys(where_it_ran(r) for _v, r in counted))
    return check.result(fraction, reason, where=wheres)


def grade_reproduce(check: Check, evidence: Evidence) -> CheckResult:
    if not evidence.reproduce:
        return check.result(0, "not checked (run `labkit grade --reproduce` to compare with the submitted outputs)",
                            skipped=True)
    tolerance = float(check.options.get("tolerance", 0.05))
    only = check.options.get("metrics")
    submitted = select_runs(check, evidence, evidence.submitted_records)
    if not submitted:
        return check.result(0, "the submitted notebook holds no recorded results of {} to compare "
                               "(run every cell before handing it in)".format(describe_selection(check)))
    fresh = dict(evidence.fresh_runs())
    matched, problems = 0, []
    for name, run in submitted:
        again = fresh.get(name)
        if again is None:
            problems.append("record {} was not produced again".format(quoted(name)))
            continue
        names = [m for m in run.metrics if only is None or m in only]
        differing = [m for m in names if m not in again.metrics or not same_value(run.metrics[m], again.metrics[m], rtol=tolerance)]
        same_params = all(k in again.params and same_value(v, again.params[k]) for k, v in run.params.items())
        if differing or not same_params:
            what = ", ".join("{}: submitted {} vs {}".format(str(m)[:80], fmt_value(run.metrics[m]), fmt_value(again.metrics.get(m)))
                             for m in differing[:3]) or "parameters differ"
            problems.append("record {} differs ({})".format(quoted(name), what))
        else:
            matched += 1
    reason = "{} of {} submitted record(s) reproduced within {:g}%".format(matched, len(submitted), tolerance * 100)
    if problems:
        reason += ": " + "; ".join(problems[:4])
    return check.result(matched / float(len(submitted)), reason)


RERUN_FUNCTION = "labkit.testbeds.homework.evidence:rerun_smallest"


def grade_rerun(check: Check, evidence: Evidence) -> CheckResult:
    """Re-run one portable CPU run per exercise with the lab book's notebook; compare the records."""
    if not evidence.reproduce:
        return check.result(0, "not checked (run `labkit grade --reproduce` to re-run one portable run per exercise)",
                            skipped=True)
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for _name, run in select_runs(check, evidence):
        if is_portable(run) and isinstance(run.params.get("evidence"), str):
            groups.setdefault(run.exercise, []).append(dict(run.params))
    if not groups:
        return check.result(0, "no portable run of {} handed in: nothing to re-run (testbed logs and notebooks are "
                               "read again instead)".format(describe_selection(check)), skipped=True)
    max_seconds = float(check.options.get("max_seconds", 300))
    asks = [{"candidates": c, "max_seconds": max_seconds, "tolerance": float(check.options.get("tolerance", 1e-6))}
            for c in groups.values()]
    if evidence.recompute is None:
        return check.result(0, "the grader cannot re-run notebooks here")
    try:
        answers = evidence.recompute(RERUN_FUNCTION, asks, timeout=max_seconds * len(asks) + 120)
    except Exception as exc:
        return check.result(0, "the re-run failed: {}".format(str(exc)[:300]))
    good, lines = 0, []
    for exercise, answer in zip(groups, answers):
        if "error" in answer:
            lines.append("{}: not re-run ({})".format(exercise, answer["error"]))
            continue
        done = answer.get("ok", {})
        problems = done.get("problems") or []
        if problems:
            lines.append("{}: re-running {} gave a different record: {}".format(
                exercise, done.get("notebook"), "; ".join(problems[:3])))
        else:
            good += 1
            lines.append("{}: {} re-run in {} s with the lab book's notebook agrees (timings skipped)".format(
                exercise, done.get("notebook"), done.get("seconds")))
    return check.result(good / float(len(groups)), "; ".join(lines), where="portable: CPU")

