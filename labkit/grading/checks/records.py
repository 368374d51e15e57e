"""The check types that read recorded runs: ``record`` (a metric in a range), ``runs`` (distinct
values of a parameter tried), ``reproduce`` (the submitted records against the grader's) and
``rerun`` (one portable run per exercise re-run with the lab book's notebook)."""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Tuple

from labkit.grading.checks.evidence import (NUMBER, Check, CheckResult, Evidence, describe_selection, fmt_value,
                                            run_label, select_runs, split_evidence, wheres_of)
from labkit.grading.sandbox.submission_reads import quoted
from labkit.grading.checks.verify import verify_run
from labkit.testbeds.homework.hardware import is_portable, where_it_ran
from labkit.results import Run, same_value

__all__ = ["grade_record", "grade_runs", "grade_reproduce", "grade_rerun", "RERUN_FUNCTION"]


def _first_of(names: Any, found: Dict[str, Any]) -> Optional[str]:
    """The first of ``names`` in ``found``: a check's ``metric`` or ``parameter`` may list alternatives
    (the GroqChip's accuracy and the CPU's, for testbed and portable runs)."""
    for name in ([names] if isinstance(names, str) else names):
        if name in found:
            return name
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
        return _in_range(run.metrics[metric_of[id(run)]], low, high)

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


def _in_range(value: Any, low: Any, high: Any) -> bool:
    return isinstance(value, NUMBER) and not isinstance(value, bool) and math.isfinite(float(value)) and \
        (low is None or value >= low) and (high is None or value <= high)


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
    return check.result(fraction, reason, where=wheres_of([r for _v, r in counted]))


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
        if differing or not _params_match(run.params, again.params):
            what = ", ".join("{}: submitted {} vs {}".format(str(m)[:80], fmt_value(run.metrics[m]), fmt_value(again.metrics.get(m)))
                             for m in differing[:3]) or "parameters differ"
            problems.append("record {} differs ({})".format(quoted(name), what))
        else:
            matched += 1
    reason = "{} of {} submitted record(s) reproduced within {:g}%".format(matched, len(submitted), tolerance * 100)
    if problems:
        reason += ": " + "; ".join(problems[:4])
    return check.result(matched / float(len(submitted)), reason)


def _params_match(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    return all(k in b and same_value(a[k], b[k]) for k in a)


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

