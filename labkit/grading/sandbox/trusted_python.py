"""Start trusted Python (the grading worker, recomputation) so that no submission can shadow its imports.

    cmd = python_command("labkit.grading.recompute", ["spec", root])   # python -I -c '...' spec root

``python -I`` puts neither the current folder nor a script's folder on ``sys.path`` and ignores
every ``PYTHON*`` variable and the user's site-packages, so a ``labkit/``, ``json.py``,
``sitecustomize.py`` ... in a student's folder is never imported. Because ``-I`` also ignores
``PYTHONPATH``, the command puts back, explicitly, the folder holding the ``labkit`` package this
grader imported (an editable install, a wheel or a git worktree alike) and the grader's own
absolute ``PYTHONPATH`` entries (the instructor's, e.g. a rubric's recompute module), never one
inside a folder the caller excludes (the run's working folder, the submissions).
"""

from __future__ import annotations

import os
import sys
from typing import List, Sequence

import labkit

__all__ = ["TRUSTED_ROOT", "trusted_path", "python_command"]

#: The folder that holds the ``labkit`` package the grader itself runs.
TRUSTED_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(labkit.__file__)))

_BOOT = ("import sys, runpy; sys.path[:0] = {paths!r}; "
         "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def _inside(path: str, folder: str) -> bool:
    folder = os.path.realpath(folder).rstrip(os.sep) + os.sep
    return (os.path.realpath(path).rstrip(os.sep) + os.sep).startswith(folder)


def trusted_path(exclude: Sequence[str] = ()) -> List[str]:
    """The trusted root, then the grader's absolute PYTHONPATH entries (none under ``exclude``)."""
    paths = [TRUSTED_ROOT]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        # a relative entry ('' or '.') means "the current folder": never trusted
        if entry and os.path.isabs(entry) and entry not in paths and not any(_inside(entry, e) for e in exclude):
            paths.append(entry)
    return paths


def python_command(module: str, args: Sequence[str] = (), exclude: Sequence[str] = ()) -> List[str]:
    """``python -I -c BOOT args``: run ``module`` as ``__main__`` from the trusted path only."""
    return [sys.executable, "-I", "-c", _BOOT.format(paths=trusted_path(exclude), module=module)] + list(args)
