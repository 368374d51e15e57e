"""Rubrics: what a homework is graded on, read from YAML and checked when loaded.

    from labkit.grading.rubric import load_rubric
    rubric = load_rubric("notebooks/homework/ai_testbeds.rubric.yml")   # RubricError names the line
    results = rubric.grade(evidence)                                   # one CheckResult per check

The format is documented in docs/grading.md. Every check has ``name``, ``type`` and
``points`` and may have ``description`` (shown to students) and ``hidden: true`` (feedback
then says only whether it passed). Check types: ``record``, ``runs``, ``answer``,
``reproduce``, ``no_error``. Checks read only the records of the grader's own execution
(``Evidence.fresh``); the student's submitted outputs are read by ``reproduce`` alone.
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

__all__ = ["Rubric", "Check", "CheckResult", "Evidence", "RubricError", "load_rubric", "answer_text", "CHECK_TYPES"]


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
    recompute: Optional[Callable[[str, List[Dict[str, Any]]], List[Dict[str, Any]]]] = None
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

    def result(self, fraction: float, reason: str, skipped: bool = False) -> CheckResult:
        fraction = min(1.0, max(0.0, fraction))
        return CheckResult(self.name, self.points, round(self.points * fraction, 3), fraction >= 1.0, reason,
                           self.description, self.hidden, skipped)


def _select(check: Check, evidence: Evidence, records: Optional[Dict[str, Any]] = None) -> List[Tuple[str, Run]]:
    runs = _runs(records) if records is not None else evidence.fresh_runs()
    pattern = check.options.get("exercise")
    where = check.options.get("where") or {}
    chosen = []
    for name, run in runs:
        if pattern and not fnmatch.fnmatch(run.exercise, pattern):
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
    text = check.options.get("exercise") or "any exercise"
    where = check.options.get("where")
    if where:
        text += " with " + ", ".join("{}={}".format(k, v) for k, v in where.items())
    return text


def grade_record(check: Check, evidence: Evidence) -> CheckResult:
    metric = check.options["metric"]
    low, high = check.options.get("min"), check.options.get("max")
    runs = [(n, r) for n, r in _select(check, evidence) if metric in r.metrics]
    if not runs:
        return check.result(0, "no run of {} recorded the metric '{}' when the grader ran the notebook".format(_what(check), metric))
    inside = [(n, r) for n, r in runs if _in_range(r.metrics[metric], low, high)]
    outside = [(n, r) for n, r in runs if not _in_range(r.metrics[metric], low, high)]
    problems = []
    for name, run in inside:  # full credit: the first run in range that the grader can confirm
        problem = _verify(check, evidence, run, [metric])
        if problem is None:
            return check.result(1, "record '{}': {} = {} is within {}".format(name, metric, _fmt(run.metrics[metric]), _range(low, high)))
        problems.append("record '{}': {}".format(name, problem))
    for name, run in outside:  # partial credit: present, confirmed, but outside the range
        problem = _verify(check, evidence, run, [metric])
        if problem is None:
            problems.append("record '{}': {} = {} is outside {}".format(name, metric, _fmt(run.metrics[metric]), _range(low, high)))
            return check.result(float(check.options.get("partial", 0)), "; ".join(problems[-3:]))
        problems.append("record '{}': {}".format(name, problem))
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


def grade_runs(check: Check, evidence: Evidence) -> CheckResult:
    parameter = check.options["parameter"]
    needed = int(check.options.get("at_least", 2))
    values: List[Any] = []
    rejected: List[str] = []
    for name, run in _select(check, evidence):
        if parameter in run.params and not any(_same(run.params[parameter], v) for v in values):
            problem = _verify(check, evidence, run)
            if problem:
                rejected.append("record '{}' not counted: {}".format(name, problem))
                continue
            values.append(run.params[parameter])
    shown = ", ".join(_fmt(v) for v in values) or "none"
    reason = "{} distinct value(s) of {} tried in runs of {} ({}); {} needed".format(
        len(values), parameter, _what(check), shown, needed)
    fraction = min(len(values), needed) / float(needed)
    if "default" in check.options:
        default = check.options["default"]
        if not any(_same(default, v) for v in values):
            fraction = min(fraction, (needed - 1) / float(needed))
            reason += "; the default {} is not among them".format(_fmt(default))
    if rejected:
        reason += "; " + "; ".join(rejected[:3])
    return check.result(fraction, reason)


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


def grade_no_error(check: Check, evidence: Evidence) -> CheckResult:
    if evidence.status == "ok":
        return check.result(1, "every cell ran without an error")
    return check.result(0, evidence.reason or evidence.status)


# type -> (grader, required fields, optional fields with their types)
CHECK_TYPES: Dict[str, Tuple[Callable[[Check, Evidence], CheckResult], Dict[str, Any], Dict[str, Any]]] = {
    "record": (grade_record, {"metric": str},
               {"exercise": str, "where": dict, "min": _NUMBER, "max": _NUMBER, "partial": _NUMBER,
                "recompute": str, "tolerance": _NUMBER}),
    "runs": (grade_runs, {"exercise": str, "parameter": str},
             {"at_least": int, "default": object, "where": dict, "recompute": str, "tolerance": _NUMBER}),
    "answer": (grade_answer, {"heading": str}, {"min_words": int, "template_text": str, "partial": bool}),
    "reproduce": (grade_reproduce, {}, {"exercise": str, "where": dict, "tolerance": _NUMBER, "metrics": list}),
    "no_error": (grade_no_error, {}, {}),
}

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
        if "recompute" in item and ":" not in item["recompute"]:
            raise fail(item.key_lines["recompute"], "check '{}': recompute is 'module:function'".format(name))
        options = {k: (dict(v) if isinstance(v, dict) else v) for k, v in item.items() if k not in COMMON}
        checks.append(Check(name, kind, float(item["points"]), str(item.get("description", "")),
                            bool(item.get("hidden", False)), options, line))
    return Rubric(path, str(data.get("title", os.path.basename(path))), checks, template_path)
