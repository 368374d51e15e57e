"""What the rubric's checks share: the evidence a submission gave, a check, its result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from labkit.results import Run

__all__ = ["Evidence", "CheckResult", "Check", "NUMBER", "runs_in"]

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
