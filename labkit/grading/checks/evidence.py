"""What the rubric's checks share: the evidence a submission gave, a check, its result, and
picking the runs a check looks at (values compare by :func:`labkit.results.same_value`).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from labkit.grading.sandbox.trusted import quoted
from labkit.testbeds.homework.hardware import is_portable, where_it_ran
from labkit.results import Run, same_value

__all__ = ["Evidence", "CheckResult", "Check", "NUMBER", "split_evidence", "run_label",
           "select_runs", "describe_selection", "fmt_value"]

NUMBER = (int, float)


@dataclass
class Evidence:
    """What a submission gave the grader: the notebook as handed in, the records in its outputs (read by
    ``reproduce`` alone), the records of the grader's execution (``fresh``) and how it went (``status``).
    ``recompute(function, [params, ...])`` runs trusted code on recorded parameters (answers: ``trusted``).
    """

    submitted: Any
    submitted_records: Dict[str, Any]
    fresh: Dict[str, Any]
    status: str
    reason: str = ""
    reproduce: bool = False
    recompute: Optional[Callable[..., List[Dict[str, Any]]]] = None  # (function, params, timeout=None)
    template: Any = None
    trusted: Dict[Tuple[str, str], Dict[str, Any]] = field(default_factory=dict)

    def fresh_runs(self) -> List[Tuple[str, Run]]:
        return runs_in(self.fresh)


def runs_in(records: Dict[str, Any]) -> List[Tuple[str, Run]]:
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
    chosen = []
    patterns = [pattern] if isinstance(pattern, str) else list(pattern or [])
    for name, run in runs:
        if patterns and not any(fnmatch.fnmatch(run.exercise, p) for p in patterns):
            continue
        if any(not same_value(run.params.get(k), v) for k, v in where.items()):
            continue
        chosen.append((name, run))
    return chosen


def describe_selection(check: Check) -> str:
    pattern = check.options.get("exercise")
    text = (pattern if isinstance(pattern, str) else ", ".join(pattern)) if pattern else "any exercise"
    where = check.options.get("where")
    if where:
        text += " with " + ", ".join("{}={}".format(k, v) for k, v in where.items())
    return text


def fmt_value(value: Any) -> str:
    return "{:.6g}".format(value) if isinstance(value, float) else quoted(value)
