"""Recompute a recorded run with trusted code, to catch records a notebook made up.

A student's code runs in the same process as labkit, so it can call
``labkit.results.record`` with any numbers, or monkeypatch labkit to do so. The grader's
answer: a ``record`` check with ``recompute: module:function`` calls ``function(params)``
(trusted code named by the instructor's rubric) on the parameters the record claims, in a
fresh sandboxed process the notebook never touched, and the record counts only if the
metric agrees. Run by the grader as

    python -m labkit.grading.recompute labkit.grading.recompute:from_evidence < params.json

``from_evidence`` reads again whatever the record came from: a testbed log (``params['log']``,
``from_log``) or an executed lab-book notebook, alone or in a sweep folder
(``params['evidence']``, :func:`labkit.testbeds.homework.evidence.trusted_record`).

The function gets the recorded parameters (untrusted data) and returns ``{metric: value}``,
or ``{"params": ..., "metrics": ...}`` when it can also tell which parameters really ran
(then a record's parameters must match too).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from typing import Any, Callable, Dict, List, Optional

__all__ = ["resolve", "run_sandboxed", "from_log", "from_evidence"]


def resolve(spec: str) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    module_name, _, attr = spec.partition(":")
    return getattr(import_module(module_name), attr)


def from_log(params: Dict[str, Any]) -> Dict[str, Any]:
    """Metrics of run ``params['log_run']`` (default: the last) in the log ``params['log']``.

    The path is relative to the notebook's folder, as the notebook recorded it.
    """
    import labkit.logs

    path = params.get("log")
    if not isinstance(path, str):
        raise ValueError("the record names no log file (params['log'])")
    runs = labkit.logs.read(path).runs
    index = params.get("log_run", -1)
    if not runs or not isinstance(index, int) or not -len(runs) <= index < len(runs):
        raise ValueError("{} holds no run number {}".format(os.path.basename(path), index))
    return {"params": dict(runs[index].params), "metrics": dict(runs[index].metrics)}


def from_evidence(params: Dict[str, Any]) -> Dict[str, Any]:
    """The trusted params and metrics of a record read from a log, a notebook or a sweep run."""
    if "log" in params:
        return from_log(params)
    from labkit.testbeds.homework.evidence import trusted_record

    if "evidence" in params:
        return trusted_record(params)
    raise ValueError("the record names neither a log (params['log']) nor a notebook (params['evidence'])")


def run_sandboxed(function: str, params: List[Dict[str, Any]], workdir: str, prefix: List[str],
                  limits: Any, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
    """``function(p)`` for each ``p`` behind the kernel's launch ``prefix`` (same sandbox), in one process.

    Returns one ``{"ok": result}`` or ``{"error": text}`` per parameter set. ``timeout``
    (seconds) replaces the per-cell limit, for functions that re-run notebooks.
    """
    from labkit.grading import sandbox

    cmd = list(prefix) + [sys.executable, "-m", "labkit.grading.recompute", function]
    proc = subprocess.run(cmd, input=json.dumps(params).encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=workdir, env=sandbox.kernel_environment(workdir), timeout=timeout or limits.cell_s or None)
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["exit status {}".format(proc.returncode)]
        raise RuntimeError(tail[0][:300])
    answers = json.loads(proc.stdout.decode()[-(4 << 20):])
    if not isinstance(answers, list) or len(answers) != len(params):
        raise RuntimeError("the recompute process gave {} answers for {} records".format(len(answers), len(params)))
    return answers


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from labkit.results import json_safe

    function = resolve(argv[0])
    answers = []
    for params in json.loads(sys.stdin.read(4 << 20)):
        try:
            answers.append({"ok": json_safe(dict(function(params)))})
        except Exception as exc:  # one bad record must not hide the others
            answers.append({"error": "{}: {}".format(type(exc).__name__, str(exc)[:200])})
    sys.stdout.write(json.dumps(answers))
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
