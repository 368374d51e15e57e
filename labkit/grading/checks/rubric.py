"""The rubric: a YAML file of checks, validated when loaded, applied to a submission's evidence.

The format and each check type: docs/grading.md, "Rubric format". Checks read only the records of
the grader's own execution; the student's submitted outputs are read by ``reproduce`` alone. The
check types that read recorded runs are in :mod:`.records`; those that read the notebook itself,
``answer`` (written text under a heading, not the template's) and ``no_error``, are here.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

import yaml

from labkit.errors import LabkitError
from labkit.files import NotAFile, regular_file
from labkit.grading.checks.evidence import NUMBER, Check, CheckResult, Evidence
from labkit.grading.checks.records import (grade_record, grade_rerun, grade_reproduce, grade_runs,
                                           prefetch_trusted)
from labkit.grading.reports.gradebook import RESERVED

__all__ = ["Rubric", "RubricError", "load_rubric", "CHECK_TYPES", "EVIDENCE_KINDS", "COMMON", "answer_text"]


class RubricError(LabkitError, ValueError):
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


# -- the check types that read the notebook itself ------------------------------------------------

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
            if match and match.group(2).strip().lower().startswith(wanted):
                collecting = True
            elif collecting:
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


def grade_no_error(check: Check, evidence: Evidence) -> CheckResult:
    if evidence.status == "ok":
        return check.result(1, "every cell ran without an error")
    return check.result(0, evidence.reason or evidence.status)


# -- the rubric: its fields, its check types -------------------------------------------------------

COMMON = {"name": str, "type": str, "points": (int, float), "description": str, "hidden": bool}

# type -> (grader, required fields, optional fields with their types)
CHECK_TYPES: Dict[str, Tuple[Callable[[Check, Evidence], CheckResult], Dict[str, Any], Dict[str, Any]]] = {
    "record": (grade_record, {"metric": (str, list)},
               {"exercise": str, "where": dict, "min": NUMBER, "max": NUMBER, "partial": NUMBER,
                "recompute": str, "tolerance": NUMBER, "evidence": str, "portable_points": NUMBER}),
    "runs": (grade_runs, {"exercise": str, "parameter": (str, list)},
             {"at_least": int, "default": object, "where": dict, "recompute": str, "tolerance": NUMBER,
              "evidence": str, "portable_points": NUMBER}),
    "answer": (grade_answer, {"heading": str}, {"min_words": int, "template_text": str, "partial": bool}),
    "reproduce": (grade_reproduce, {}, {"exercise": str, "where": dict, "tolerance": NUMBER, "metrics": list}),
    "rerun": (grade_rerun, {}, {"exercise": (str, list), "where": dict, "max_seconds": NUMBER, "tolerance": NUMBER}),
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
        with suppress(Exception):  # each check reports its own recomputation problem
            prefetch_trusted(self.checks, evidence)
        out = []
        for check in self.checks:
            try:
                out.append(CHECK_TYPES[check.type][0](check, evidence))
            except Exception as exc:  # a grading bug costs this check, never the batch
                out.append(check.result(0, "the grader failed on this check: {}: {}".format(type(exc).__name__, exc)))
        return out


_TYPE_NAMES = {(str, list): "a name or a list of names", NUMBER: "a number", str: "text", bool: "true or false",
               int: "a whole number", dict: "a mapping", list: "a list", object: "any value"}


def load_rubric(path: str) -> Rubric:
    """Read and validate a rubric; :class:`RubricError` names the line of the first problem."""
    path = os.fspath(path)
    try:
        regular_file(path, "rubric")  # a FIFO would block the open below for ever
        with open(path, encoding="utf-8") as f:
            data = yaml.load(f, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise RubricError("{}: no such rubric file".format(path)) from None
    except NotAFile as exc:
        raise RubricError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise RubricError("{}: cannot read the rubric: {}".format(path, why)) from None
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
        why = _not_a_notebook(template_path)
        if why:
            raise fail(data.key_lines["template"], "template: '{}' {}".format(template, why))
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
            if not isinstance(value, allowed[key]) or (allowed[key] in (int, NUMBER) and isinstance(value, bool)):
                raise fail(key_line, "check '{}': field '{}' must be {}, not {!r}".format(
                    item["name"], key, _TYPE_NAMES[allowed[key]], value))
        name = item["name"]
        if not re.match(r"^[A-Za-z0-9_.-]+$", name):
            raise fail(item.key_lines["name"], "check name {!r}: use letters, digits, '_', '.' or '-' "
                                               "(it becomes a gradebook column)".format(name))
        if name in seen:
            raise fail(item.key_lines["name"], "check name '{}' is used twice (first at line {})".format(name, seen[name]))
        seen[name] = item.key_lines["name"]
        if name.lower() in (r.lower() for r in RESERVED):
            raise fail(item.key_lines["name"], "check name '{}' is a column the gradebook or the LMS file writes "
                                               "itself; reserved: {}".format(name, ", ".join(RESERVED)))
        for key, value in item.items():
            if allowed[key] == NUMBER and not math.isfinite(value):
                raise fail(item.key_lines[key], "check '{}': field '{}' must be a finite number, not {!r}".format(
                    name, key, value))
        if item["points"] < 0:
            raise fail(item.key_lines["points"], "check '{}': points must be >= 0".format(name))
        if "min" in item and "max" in item and item["min"] > item["max"]:
            raise fail(item.key_lines["min"], "check '{}': min ({}) is above max ({}); no value could pass".format(
                name, item["min"], item["max"]))
        for key in ("tolerance", "max_seconds", "min_words"):
            if key in item and item[key] < 0:
                raise fail(item.key_lines[key], "check '{}': field '{}' must be >= 0, not {!r}".format(
                    name, key, item[key]))
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


#: The largest template read (a course's notebook is well under it).
TEMPLATE_BYTES = 64 << 20


def _not_a_notebook(path: str) -> str:
    """Why ``path`` is no template notebook ('' when it is one). Never quotes the file: a rubric may name
    any file the grader can read (``/etc/shadow``), and the reason reaches the terminal."""
    try:
        regular_file(path, "the template")
        if os.path.getsize(path) > TEMPLATE_BYTES:
            return "is larger than {} MB: not a notebook".format(TEMPLATE_BYTES >> 20)
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
    except FileNotFoundError:
        return "not found (looked at {})".format(path)
    except NotAFile as exc:
        return "is not a notebook: {}".format(str(exc).split(": ", 1)[-1])
    except OSError as exc:
        return "cannot be read ({}): {}".format(exc.strerror or type(exc).__name__, path)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError, whose text would quote the file
        return "is not a notebook (not JSON): {}".format(path)
    cells = data.get("cells") if isinstance(data, dict) else None
    if not isinstance(cells, list) or not isinstance(data.get("nbformat"), int) or \
            not all(isinstance(c, dict) and isinstance(c.get("cell_type"), str) for c in cells):
        return "is not a notebook (JSON without 'nbformat' and a list of cells): {}".format(path)
    import nbformat

    try:
        with warnings.catch_warnings():  # a missing cell id is repaired when the template is read
            warnings.simplefilter("ignore")
            nbformat.validate(data)
    except Exception:  # nbformat's messages quote the file
        return "is not a notebook nbformat can read: {}".format(path)
    return ""
