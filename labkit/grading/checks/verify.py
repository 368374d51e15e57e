"""Trusted recomputation: a check with ``recompute: module:function`` counts a record only when
trusted code, run on the record's parameters in a sandboxed process, agrees with it
(:mod:`labkit.grading.recompute` runs the function)."""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from labkit.grading.checks.evidence import Check, Evidence, fmt_value, select_runs
from labkit.results import Run, same_value

__all__ = ["prefetch_trusted", "verify_run"]


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
