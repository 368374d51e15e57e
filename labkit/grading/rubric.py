"""Rubrics: what a homework is graded on, read from YAML and checked when loaded.

    from labkit.grading.rubric import load_rubric
    rubric = load_rubric("notebooks/homework/ai_testbeds.rubric.yml")   # RubricError names the line
    results = rubric.grade(evidence)                                   # one CheckResult per check

The format is documented in docs/grading.md. Every check has ``name``, ``type`` and
``points`` and may have ``description`` (shown to students) and ``hidden: true`` (feedback
then says only whether it passed). Check types: ``record``, ``runs``, ``answer``,
``reproduce``, ``rerun``, ``no_error``. Checks read only the records of the grader's own execution
(``Evidence.fresh``); the student's submitted outputs are read by ``reproduce`` alone.

``record`` and ``runs`` checks say what evidence counts: ``evidence: any`` (default) takes
testbed and portable runs alike, ``evidence: testbed`` refuses portable runs with a reason
that says so, and ``portable_points`` caps what portable runs alone can earn. Every reason
names where each run it cites ran (:func:`labkit.testbeds.homework.where.where_it_ran`).
"""

from __future__ import annotations

import fnmatch
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from labkit.results import Run
from labkit.testbeds.homework.where import is_portable, where_it_ran

__all__ = ["Rubric", "Check", "CheckResult", "Evidence", "RubricError", "load_rubric", "answer_text", "CHECK_TYPES",
           "EVIDENCE_KINDS"]


class RubricError(ValueError):
    """The rubric file is wrong; the message names the file, the line and what is allowed."""


# -- reading YAML with line numbers -----------------------------------------------------------

class _Mapping(dict):
    line = 0
    key_lines: Dict[str, int] = {}


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings remember the line of themselves and of each key."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> _Mapping:
    mapping = _Mapping(loader.construct_mapping(node, deep=True))
    mapping.line = node.start_mark.line + 1
    mapping.key_lines = {str(k.value): k.start_mark.line + 1 for k, _v in node.value}
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


# -- evidence and results -------------------------------------------------------------------------

@dataclass
class Evidence:
    """What a submission gave the grader.

    ``submitted``: the notebook as handed in (for written answers); ``submitted_records``:
    records in its outputs (only the reproduce check reads them); ``fresh``: records of the
    grader's execution; ``status``: ok, error, timeout, kernel died, failed, unreadable.
    ``recompute(function, [params, ...])`` runs a trusted recompute function on each set of
    recorded parameters in one sandboxed process; the answers land in ``trusted``.
    """

    submitted: Any
    submitted_records: Dict[str, Any]
    fresh: Dict[str, Any]
    status: str
    reason: str = ""
    error: Optional[str] = None
    reproduce: bool = False
    recompute: Optional[Callable[..., List[Dict[str, Any]]]] = None  # (function, params, timeout=None)
    template: Any = None
    trusted: Dict[Tuple[str, str], Dict[str, Any]] = field(default_factory=dict)

    def fresh_runs(self) -> List[Tuple[str, Run]]:
        return _runs(self.fresh)


def _runs(records: Dict[str, Any]) -> List[Tuple[str, Run]]:
    found = []
    for name, data in records.items():
        if isinstance(data, dict) and "exercise" in data and isinstance(data.get("metrics"), dict):
            try:
                found.append((name, Run.from_dict(data)))
            except (TypeError, ValueError):
                continue
    return found


@dataclass
class CheckResult:
    name: str
    points: float
    score: float
    passed: bool
    reason: str
    description: str = ""
    hidden: bool = False
    skipped: bool = False
    where: str = ""  # where the runs that earned the score ran, e.g. "IPU" or "portable: CPU"

    def to_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__)


# -- checks -----------------------------------------------------------------------------------------

COMMON = {"name": str, "type": str, "points": (int, float), "description": str, "hidden": bool}
_NUMBER = (int, float)


@dataclass
class Check:
    """One rubric check; ``options`` holds the type's own fields (already validated)."""

    name: str
    type: str
    points: float
    description: str = ""
    hidden: bool = False
    options: Dict[str, Any] = field(default_factory=dict)
    line: int = 0

    def result(self, fraction: float, reason: str, skipped: bool = False, where: str = "") -> CheckResult:
        fraction = min(1.0, max(0.0, fraction))
        return CheckResult(self.name, self.points, round(self.points * fraction, 3), fraction >= 1.0, reason,
                           self.description, self.hidden, skipped, where)

    @property
    def testbed_only(self) -> bool:
        return self.options.get("evidence", "any") == "testbed"

    def portable_cap(self) -> float:
        """The fraction of the points that portable runs alone can earn."""
        if self.testbed_only:
            return 0.0
        cap = self.options.get("portable_points")
        return 1.0 if cap is None or self.points <= 0 else min(1.0, float(cap) / self.points)


def _split_evidence(check: Check, runs: List[Tuple[str, Run]]) -> Tuple[List[Tuple[str, Run]], str]:
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


def _label(name: str, run: Run) -> str:
    return "record '{}' ({})".format(name, where_it_ran(run))


def _wheres(runs: List[Run]) -> str:
    seen: List[str] = []
    for run in runs:
        if where_it_ran(run) not in seen:
            seen.append(where_it_ran(run))
    return ", ".join(seen)


def _select(check: Check, evidence: Evidence, records: Optional[Dict[str, Any]] = None) -> List[Tuple[str, Run]]:
    runs = _runs(records) if records is not None else evidence.fresh_runs()
    pattern = check.options.get("exercise")
    where = check.options.get("where") or {}
    chosen = []
    patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
    for name, run in runs:
        if patterns and not any(fnmatch.fnmatch(run.exercise, p) for p in patterns):
            continue
        if any(not _same(run.params.get(k), v) for k, v in where.items()):
            continue
        chosen.append((name, run))
    return chosen


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def _close(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, _NUMBER) and isinstance(b, _NUMBER):
        a, b = float(a), float(b)
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= tolerance * max(abs(a), abs(b)) + 1e-12
    return a == b


def _what(check: Check) -> str:
    pattern = check.options.get("exercise")
    text = (pattern if isinstance(pattern, str) else ", ".join(pattern)) if pattern else "any exercise"
    where = check.options.get("where")
    if where:
        text += " with " + ", ".join("{}={}".format(k, v) for k, v in where.items())
    return text


def _metric_of(check: Check, run: Run) -> Optional[str]:
    """The first of the check's metrics this run recorded (``metric`` may list alternatives, e.g.
    the GroqChip's accuracy and the CPU's, for testbed and portable runs)."""
    names = check.options["metric"]
    for name in ([names] if isinstance(names, str) else names):
        if name in run.metrics:
            return name
    return None


def grade_record(check: Check, evidence: Evidence) -> CheckResult:
    low, high = check.options.get("min"), check.options.get("max")
    shown_metric = check.options["metric"] if isinstance(check.options["metric"], str) else \
        " or ".join(check.options["metric"])
    runs, refused = _split_evidence(check, [(n, r) for n, r in _select(check, evidence) if _metric_of(check, r)])
    if not runs:
        return check.result(0, refused or "no run of {} recorded the metric '{}' when the grader ran the notebook".format(
            _what(check), shown_metric))
    metric_of = {id(r): _metric_of(check, r) for _n, r in runs}
    inside = [(n, r) for n, r in runs if _in_range(r.metrics[metric_of[id(r)]], low, high)]
    outside = [(n, r) for n, r in runs if not _in_range(r.metrics[metric_of[id(r)]], low, high)]
    problems = [refused] if refused else []
    for name, run in inside:  # full credit: the first run in range that the grader can confirm
        metric = metric_of[id(run)]
        problem = _verify(check, evidence, run, [metric])
        if problem is None:
            reason = "{}: {} = {} is within {}".format(_label(name, run), metric, _fmt(run.metrics[metric]), _range(low, high))
            fraction = 1.0
            if is_portable(run) and check.portable_cap() < 1.0:
                fraction = check.portable_cap()
                reason += "; a portable run earns {:g} of the {:g} points (portable_points)".format(
                    check.options.get("portable_points", 0), check.points)
            return check.result(fraction, "; ".join([reason] + problems), where=where_it_ran(run))
        problems.append("{}: {}".format(_label(name, run), problem))
    for name, run in outside:  # partial credit: present, confirmed, but outside the range
        metric = metric_of[id(run)]
        problem = _verify(check, evidence, run, [metric])
        if problem is None:
            problems.append("{}: {} = {} is outside {}".format(_label(name, run), metric, _fmt(run.metrics[metric]), _range(low, high)))
            fraction = float(check.options.get("partial", 0))
            if is_portable(run):
                fraction = min(fraction, check.portable_cap())
            return check.result(fraction, "; ".join(problems[-3:]), where=where_it_ran(run))
        problems.append("{}: {}".format(_label(name, run), problem))
    return check.result(0, "; ".join(problems[:3]))


def _in_range(value: Any, low: Any, high: Any) -> bool:
    return isinstance(value, _NUMBER) and not isinstance(value, bool) and math.isfinite(float(value)) and \
        (low is None or value >= low) and (high is None or value <= high)


def _key(params: Dict[str, Any]) -> str:
    import json

    return json.dumps(params, sort_keys=True, default=str)


def prefetch_trusted(checks: List["Check"], evidence: Evidence) -> None:
    """Recompute, in one sandboxed process per function, every run a recompute check may look at."""
    wanted: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for check in checks:
        function = check.options.get("recompute")
        if function:
            for _name, run in _select(check, evidence):
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


def _verify(check: Check, evidence: Evidence, run: Run, metrics: Optional[List[str]] = None) -> Optional[str]:
    """None when trusted code, given the run's recorded parameters, agrees with the record.

    Checks without ``recompute`` trust the record. The recompute function returns metrics,
    or ``{"params": ..., "metrics": ...}`` whose params must match the record's too.
    """
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
        if name in run.params and not _same(run.params[name], value):
            return "recorded {} = {} but the grader read {}".format(name, _fmt(run.params[name]), _fmt(value))
    for metric in (metrics if metrics is not None else [m for m in run.metrics if m in t_metrics]):
        if metric not in t_metrics:
            return "the grader's recomputation gives no '{}'".format(metric)
        if not _close(run.metrics[metric], t_metrics[metric], tolerance):
            return "recorded {} = {} but the grader recomputed {} from the recorded parameters".format(
                metric, _fmt(run.metrics[metric]), _fmt(t_metrics[metric]))
    return None


def _fmt(value: Any) -> str:
    return "{:.6g}".format(value) if isinstance(value, float) else repr(value)


def _range(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return "[{}, {}]".format(low, high)
    if low is not None:
        return ">= {}".format(low)
    if high is not None:
        return "<= {}".format(high)
    return "any value"


def _parameter_of(check: Check, run: Run) -> Optional[str]:
    """The first of the check's parameters this run has (``parameter`` may list alternatives)."""
    names = check.options["parameter"]
    for name in ([names] if isinstance(names, str) else names):
        if name in run.params:
            return name
    return None


def grade_runs(check: Check, evidence: Evidence) -> CheckResult:
    parameter = check.options["parameter"]
    needed = int(check.options.get("at_least", 2))
    runs, refused = _split_evidence(check, _select(check, evidence))
    counted: List[Tuple[Any, Run]] = []  # (value, run), testbed runs first
    rejected: List[str] = []
    for name, run in runs:
        key = _parameter_of(check, run)
        if key is None:
            continue
        value = run.params[key] if isinstance(parameter, str) else "{}={}".format(key, run.params[key])
        if any(_same(value, v) for v, _r in counted):
            continue
        problem = _verify(check, evidence, run)
        if problem:
            rejected.append("{} not counted: {}".format(_label(name, run), problem))
            continue
        counted.append((value, run))

    def fraction_of(values: List[Any]) -> float:
        fraction = min(len(values), needed) / float(needed)
        if "default" in check.options and not any(_same(check.options["default"], v) for v in values):
            fraction = min(fraction, (needed - 1) / float(needed))
        return fraction

    values = [v for v, _r in counted]
    testbed_values = [v for v, r in counted if not is_portable(r)]
    fraction = max(fraction_of(testbed_values), min(fraction_of(values), check.portable_cap()))
    shown = ", ".join("{} ({})".format(_fmt(v) if isinstance(parameter, str) else v, where_it_ran(r))
                      for v, r in counted) or "none"
    what = parameter if isinstance(parameter, str) else " or ".join(parameter)
    reason = "{} distinct value(s) of {} tried in runs of {}: {}; {} needed".format(
        len(values), what, _what(check), shown, needed)
    if "default" in check.options and not any(_same(check.options["default"], v) for v in values):
        reason += "; the default {} is not among them".format(_fmt(check.options["default"]))
    if fraction < fraction_of(values):
        reason += "; portable runs earn at most {:g} of the {:g} points (portable_points)".format(
            check.options.get("portable_points", 0), check.points)
    if refused:
        reason += "; " + refused
    if rejected:
        reason += "; " + "; ".join(rejected[:3])
    return check.result(fraction, reason, where=_wheres([r for _v, r in counted]))


_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’.,%-]*")


def answer_text(nb: Any, heading: str) -> Optional[str]:
    """The markdown written under ``heading`` (until the next heading or code cell), or None."""
    wanted = heading.strip().lstrip("#").strip().lower()
    collecting = False
    parts: List[str] = []
    for cell in getattr(nb, "cells", []) or []:
        if cell.get("cell_type") != "markdown":
            if collecting:
                break
            continue
        for line in str(cell.get("source", "")).splitlines():
            match = _HEADING.match(line)
            if match and collecting:  # any heading ends the answer
                return "\n".join(parts).strip()
            if match and not collecting and match.group(2).strip().lower().startswith(wanted):
                collecting = True
                continue
            if collecting and not match:
                parts.append(line)
    return "\n".join(parts).strip() if collecting else None


def _words(text: str) -> List[str]:
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)  # template instructions in comments
    return _WORD.findall(text)


def grade_answer(check: Check, evidence: Evidence) -> CheckResult:
    heading = check.options["heading"]
    if evidence.submitted is None:
        return check.result(0, "the notebook could not be read")
    text = answer_text(evidence.submitted, heading)
    if text is None:
        return check.result(0, "no heading '{}' in the notebook (was it deleted or renamed?)".format(heading))
    words = _words(text)
    template = check.options.get("template_text")
    if template is None and evidence.template is not None:
        template = answer_text(evidence.template, heading)
    if template is not None:
        template_words = _words(template)
        if [w.lower() for w in words] == [w.lower() for w in template_words]:
            return check.result(0, "the answer under '{}' is still the template's text".format(heading))
        if template_words and " ".join(template_words).lower() in " ".join(words).lower():
            words = words[len(template_words):] if len(words) > len(template_words) else []
    needed = int(check.options.get("min_words", 20))
    if not words:
        return check.result(0, "the answer under '{}' is empty".format(heading))
    if len(words) >= needed:
        return check.result(1, "answered ({} words)".format(len(words)))
    partial = bool(check.options.get("partial", True))
    return check.result(len(words) / float(needed) if partial else 0,
                        "the answer has {} words; at least {} are expected".format(len(words), needed))


def grade_reproduce(check: Check, evidence: Evidence) -> CheckResult:
    if not evidence.reproduce:
        return check.result(0, "not checked (run `labkit grade --reproduce` to compare with the submitted outputs)",
                            skipped=True)
    tolerance = float(check.options.get("tolerance", 0.05))
    only = check.options.get("metrics")
    submitted = _select(check, evidence, evidence.submitted_records)
    if not submitted:
        return check.result(0, "the submitted notebook holds no recorded results of {} to compare "
                               "(run every cell before handing it in)".format(_what(check)))
    fresh = dict(evidence.fresh_runs())
    matched, problems = 0, []
    for name, run in submitted:
        again = fresh.get(name)
        if again is None:
            problems.append("record '{}' was not produced again".format(name))
            continue
        names = [m for m in run.metrics if only is None or m in only]
        differing = [m for m in names if m not in again.metrics or not _close(run.metrics[m], again.metrics[m], tolerance)]
        if differing or not _params_match(run.params, again.params):
            shown = ", ".join("{}: submitted {} vs {}".format(m, _fmt(run.metrics[m]), _fmt(again.metrics.get(m)))
                              for m in differing[:3]) or "parameters differ"
            problems.append("record '{}' differs ({})".format(name, shown))
        else:
            matched += 1
    reason = "{} of {} submitted record(s) reproduced within {:g}%".format(matched, len(submitted), tolerance * 100)
    if problems:
        reason += ": " + "; ".join(problems[:4])
    return check.result(matched / float(len(submitted)), reason)


def _params_match(a: Dict[str, Any], b: Dict[str, Any]) -> bool:
    return all(k in b and _same(a[k], b[k]) for k in a)


RERUN_FUNCTION = "labkit.testbeds.homework.evidence:rerun_smallest"


def grade_rerun(check: Check, evidence: Evidence) -> CheckResult:
    """Re-run one portable CPU run per exercise with the lab book's notebook; compare the records."""
    if not evidence.reproduce:
        return check.result(0, "not checked (run `labkit grade --reproduce` to re-run one portable run per exercise)",
                            skipped=True)
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for _name, run in _select(check, evidence):
        if is_portable(run) and isinstance(run.params.get("evidence"), str):
            groups.setdefault(run.exercise, []).append(dict(run.params))
    if not groups:
        return check.result(0, "no portable run of {} handed in: nothing to re-run (testbed logs and notebooks are "
                               "read again instead)".format(_what(check)), skipped=True)
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


def grade_no_error(check: Check, evidence: Evidence) -> CheckResult:
    if evidence.status == "ok":
        return check.result(1, "every cell ran without an error")
    return check.result(0, evidence.reason or evidence.status)


# type -> (grader, required fields, optional fields with their types)
CHECK_TYPES: Dict[str, Tuple[Callable[[Check, Evidence], CheckResult], Dict[str, Any], Dict[str, Any]]] = {
    "record": (grade_record, {"metric": (str, list)},
               {"exercise": str, "where": dict, "min": _NUMBER, "max": _NUMBER, "partial": _NUMBER,
                "recompute": str, "tolerance": _NUMBER, "evidence": str, "portable_points": _NUMBER}),
    "runs": (grade_runs, {"exercise": str, "parameter": (str, list)},
             {"at_least": int, "default": object, "where": dict, "recompute": str, "tolerance": _NUMBER,
              "evidence": str, "portable_points": _NUMBER}),
    "answer": (grade_answer, {"heading": str}, {"min_words": int, "template_text": str, "partial": bool}),
    "reproduce": (grade_reproduce, {}, {"exercise": str, "where": dict, "tolerance": _NUMBER, "metrics": list}),
    "rerun": (grade_rerun, {}, {"exercise": (str, list), "where": dict, "max_seconds": _NUMBER, "tolerance": _NUMBER}),
    "no_error": (grade_no_error, {}, {}),
}
EVIDENCE_KINDS = ("any", "testbed")

_TOP = {"title": str, "template": str, "checks": list, "description": str}


@dataclass
class Rubric:
    path: str
    title: str
    checks: List[Check]
    template_path: Optional[str] = None

    @property
    def names(self) -> List[str]:
        return [c.name for c in self.checks]

    def grade(self, evidence: Evidence) -> List[CheckResult]:
        if evidence.template is None and self.template_path:
            import nbformat

            evidence.template = nbformat.read(self.template_path, as_version=4)
        try:
            prefetch_trusted(self.checks, evidence)
        except Exception:  # noqa: S110 - each check reports its own recomputation problem
            pass
        out = []
        for check in self.checks:
            try:
                out.append(CHECK_TYPES[check.type][0](check, evidence))
            except Exception as exc:  # a grading bug costs this check, never the batch
                out.append(check.result(0, "the grader failed on this check: {}: {}".format(type(exc).__name__, exc)))
        return out


def _type_name(kind: Any) -> str:
    if kind == (str, list):
        return "a name or a list of names"
    if isinstance(kind, tuple):
        return "a number"
    return {str: "text", bool: "true or false", int: "a whole number", dict: "a mapping", list: "a list",
            object: "any value"}.get(kind, str(kind))


def _is(value: Any, kind: Any) -> bool:
    if kind is object:
        return True
    if kind in (int, _NUMBER) and isinstance(value, bool):
        return False
    return isinstance(value, kind)


def load_rubric(path: str) -> Rubric:
    """Read and validate a rubric; :class:`RubricError` names the line of the first problem."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            data = yaml.load(f, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise RubricError("{}: no such rubric file".format(path)) from None
    except yaml.YAMLError as exc:
        raise RubricError("{}: not valid YAML: {}".format(path, exc)) from None

    def fail(line: int, text: str) -> RubricError:
        return RubricError("{}, line {}: {}".format(path, line, text))

    if not isinstance(data, _Mapping):
        raise fail(1, "a rubric is a mapping with 'title' and 'checks'")
    for key in data:
        if key not in _TOP:
            raise fail(data.key_lines.get(key, data.line), "unknown key '{}'; allowed: {}".format(key, ", ".join(_TOP)))
    checks_data = data.get("checks")
    if not isinstance(checks_data, list) or not checks_data:
        raise fail(data.key_lines.get("checks", data.line), "'checks' must be a non-empty list of checks")
    template = data.get("template")
    template_path = None
    if template is not None:
        template_path = os.path.join(os.path.dirname(os.path.abspath(path)), str(template))
        if not os.path.exists(template_path):
            raise fail(data.key_lines["template"], "template notebook '{}' not found (looked at {})".format(template, template_path))
    checks: List[Check] = []
    seen: Dict[str, int] = {}
    for item in checks_data:
        if not isinstance(item, _Mapping):
            raise fail(data.key_lines["checks"], "each check is a mapping with name, type and points")
        line = item.line
        for key in ("name", "type", "points"):
            if key not in item:
                raise fail(line, "check{}: missing field '{}' (every check needs name, type, points)".format(
                    " '{}'".format(item["name"]) if "name" in item else "", key))
        kind = item["type"]
        if kind not in CHECK_TYPES:
            raise fail(item.key_lines["type"], "check '{}': unknown check type {!r}; allowed: {}".format(
                item["name"], kind, ", ".join(CHECK_TYPES)))
        _grader, required, optional = CHECK_TYPES[kind]
        for key in required:
            if key not in item:
                raise fail(line, "check '{}' ({}): missing field '{}'; a {} check needs: {}".format(
                    item["name"], kind, key, kind, ", ".join(required)))
        allowed = dict(COMMON, **required, **optional)
        for key, value in item.items():
            key_line = item.key_lines.get(key, line)
            if key not in allowed:
                raise fail(key_line, "check '{}' ({}): unknown field '{}'; allowed: {}".format(
                    item["name"], kind, key, ", ".join(allowed)))
            if not _is(value, allowed[key]):
                raise fail(key_line, "check '{}': field '{}' must be {}, not {!r}".format(
                    item["name"], key, _type_name(allowed[key]), value))
        name = item["name"]
        if not re.match(r"^[A-Za-z0-9_.-]+$", name):
            raise fail(item.key_lines["name"], "check name {!r}: use letters, digits, '_', '.' or '-' "
                                               "(it becomes a gradebook column)".format(name))
        if name in seen:
            raise fail(item.key_lines["name"], "check name '{}' is used twice (first at line {})".format(name, seen[name]))
        seen[name] = item.key_lines["name"]
        if item["points"] < 0:
            raise fail(item.key_lines["points"], "check '{}': points must be >= 0".format(name))
        if "partial" in item and kind == "record" and not 0 <= item["partial"] <= 1:
            raise fail(item.key_lines["partial"], "check '{}': partial is a fraction of the points, in [0, 1]".format(name))
        if "at_least" in item and item["at_least"] < 1:
            raise fail(item.key_lines["at_least"], "check '{}': at_least must be >= 1".format(name))
        if "evidence" in item and item["evidence"] not in EVIDENCE_KINDS:
            raise fail(item.key_lines["evidence"], "check '{}': evidence {!r}: allowed: {} (any: testbed and portable "
                                                   "runs; testbed: testbed runs only)".format(
                                                       name, item["evidence"], ", ".join(EVIDENCE_KINDS)))
        if "portable_points" in item and not 0 <= item["portable_points"] <= item["points"]:
            raise fail(item.key_lines["portable_points"], "check '{}': portable_points must be between 0 and the "
                                                          "check's points ({})".format(name, item["points"]))
        if "portable_points" in item and item.get("evidence") == "testbed":
            raise fail(item.key_lines["portable_points"], "check '{}': portable_points has no effect with evidence: "
                                                          "testbed (portable runs earn nothing)".format(name))
        for key in ("parameter", "metric", "exercise"):
            if isinstance(item.get(key), list) and (not item[key] or not all(isinstance(p, str) for p in item[key])):
                raise fail(item.key_lines[key], "check '{}': {} is a name or a non-empty list of names".format(name, key))
        if "recompute" in item and ":" not in item["recompute"]:
            raise fail(item.key_lines["recompute"], "check '{}': recompute is 'module:function'".format(name))
        options = {k: (dict(v) if isinstance(v, dict) else v) for k, v in item.items() if k not in COMMON}
        checks.append(Check(name, kind, float(item["points"]), str(item.get("description", "")),
                            bool(item.get("hidden", False)), options, line))
    return Rubric(path, str(data.get("title", os.path.basename(path))), checks, template_path)
