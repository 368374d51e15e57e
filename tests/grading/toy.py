"""A tiny deterministic exercise for the grading tests: fast, and recomputable by the grader.

``run(steps, rate)`` "trains" y <- y + rate * (1 - y) for ``steps`` steps and records the
final value as ``score`` (in %). ``recompute(params)`` is the trusted recomputation a rubric
names with ``recompute: tests.grading.toy:recompute``.
"""

from __future__ import annotations

from typing import Any, Dict

from labkit.results import Run

EXERCISE = "toy/converge"
DEFAULTS = {"steps": 10, "rate": 0.3}


def _score(steps: int, rate: float) -> float:
    y = 0.0
    for _ in range(int(steps)):
        y = y + rate * (1.0 - y)
    return round(100.0 * y, 6)


def run(steps: int = 10, rate: float = 0.3) -> Run:
    result = Run(EXERCISE, params={"steps": steps, "rate": rate})
    result.add_metric("score", _score(steps, rate), "%")
    return result


def recompute(params: Dict[str, Any]) -> Dict[str, Any]:
    return {"score": _score(params["steps"], params["rate"])}
