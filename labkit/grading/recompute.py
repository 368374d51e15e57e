"""Recompute a recorded run with trusted code, to catch records a notebook made up (docs/grading.md,
"Threat model"). Run by the grader in isolated mode, in a sandboxed folder of its own outside the
submission, as

    python -I -c '<trusted sys.path> ...' labkit.grading.recompute:from_evidence SUBMISSION [DENIED ...] < params.json

Evidence paths are kept inside SUBMISSION and nothing under a DENIED folder is opened
(:mod:`labkit.grading.sandbox.trusted`). The function returns ``{metric: value}``, or
``{"params": ..., "metrics": ...}`` when it can also tell which parameters really ran.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import import_module
from typing import Any, Dict, List, Optional, Sequence

from labkit.grading.sandbox import levels
from labkit.grading.sandbox.trusted import (absolute_params, confine_reads, python_command, record_refusal,
                                           trusted_path)

__all__ = ["run_sandboxed", "from_log", "from_evidence"]


def from_log(params: Dict[str, Any]) -> Dict[str, Any]:
    """Params and metrics of run ``params['log_run']`` (default: the last) in the log ``params['log']``
    (the notebook records it relative to its folder; the grader's process gets it absolute)."""
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


def run_sandboxed(function: str, params: List[Dict[str, Any]], root: str, prefix: List[str],
                  limits: Any, scratch: str, timeout: Optional[float] = None,
                  exclude: Sequence[str] = ()) -> List[Dict[str, Any]]:
    """``function(p)`` for each ``p`` behind the launch ``prefix`` (the run's sandbox), in one process.

    ``root``: the submission's folder, read by absolute path; ``scratch``: the process's own current
    folder and home, outside ``root``. Returns one ``{"ok": result}`` or ``{"error": text}`` per
    parameter set. ``timeout`` (seconds) replaces the per-cell limit, for functions that re-run notebooks.
    """
    paths = trusted_path(list(exclude) + [root])
    env = levels.kernel_environment(scratch, {"PYTHONPATH": os.pathsep.join(paths)})
    # Nothing under these is opened, whatever a file points to; never a folder that holds Python or labkit.
    needed = [os.path.realpath(p) + os.sep for p in paths + [sys.prefix, sys.base_prefix]]
    denied = [os.path.realpath(p) for p in exclude
              if not any(n.startswith(os.path.realpath(p).rstrip(os.sep) + os.sep) for n in needed)]
    cmd = list(prefix) + python_command("labkit.grading.recompute", [function, os.path.realpath(root)] + denied,
                                        list(exclude) + [root])
    proc = subprocess.run(cmd, input=json.dumps(params).encode(), capture_output=True, cwd=scratch, env=env,
                          timeout=timeout or limits.cell_s or None)
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

    root = os.path.realpath(argv[1]) if len(argv) > 1 else os.getcwd()
    confine_reads(root, [os.getcwd()], argv[2:])  # the current folder: its own (HOME and TMPDIR are in it)
    module_name, _, attr = argv[0].partition(":")
    function = getattr(import_module(module_name), attr)
    answers = []
    for params in json.loads(sys.stdin.read(4 << 20)):
        why = record_refusal(params, root)
        if why:
            answers.append({"error": "refused: " + why})
            continue
        try:
            answers.append({"ok": json_safe(dict(function(absolute_params(params, root))))})
        except Exception as exc:  # one bad record must not hide the others
            answers.append({"error": "{}: {}".format(type(exc).__name__, str(exc)[:200])})
    # Paths are shown to the student as the notebook named them: relative to the submission.
    sys.stdout.write(json.dumps(answers).replace(json.dumps(root + os.sep)[1:-1], ""))
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    sys.exit(main())
