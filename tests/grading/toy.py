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


def from_log(params: Dict[str, Any]) -> Dict[str, Any]:
    """A trusted recomputation that reads a file: the score written in ``params['log']``."""
    with open(params["log"]) as f:
        return {"score": float(f.read(100))}


def environment(params: Dict[str, Any]) -> Dict[str, Any]:
    """What a trusted process sees of its surroundings (tests/grading/test_threats.py, the re-run row)."""
    import json
    import os
    import sys

    import IPython.paths
    import jupyter_client.kernelspec

    return {"cwd": os.getcwd(), "home": os.environ.get("HOME", ""), "ipython_dir": IPython.paths.get_ipython_dir(),
            "kernel": jupyter_client.kernelspec.KernelSpecManager().get_kernel_spec("python3").resource_dir,
            "path": list(sys.path), "json": json.__file__, "argv": list(sys.argv), "flags_isolated": sys.flags.isolated,
            "log": params.get("log", "")}


def read_named(params: Dict[str, Any]) -> Dict[str, Any]:
    """Trusted code led by a file's content to open ``params['points_to']`` (a key no check knows)."""
    with open(params["points_to"], "rb") as f:
        return {"score": float(len(f.read(100)))}
