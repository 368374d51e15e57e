"""Start trusted Python (the grading worker, recomputation) so that no submission can shadow its imports.

    cmd = python_command("labkit.grading.recompute", ["spec", root])   # python -I -c '...' spec root

``python -I`` ignores the current folder, the script's folder, every ``PYTHON*`` variable and
the user's site-packages, so a ``labkit/`` or ``json.py`` in a student's folder is never
imported; the command puts back the folder holding this grader's ``labkit`` and the grader's
absolute ``PYTHONPATH`` entries, never one inside a folder the caller excludes.
"""

from __future__ import annotations

import os
import sys
from typing import List, Sequence

import labkit
from labkit.grading.sandbox.landlock import inside

__all__ = ["TRUSTED_ROOT", "trusted_path", "python_command"]

#: The folder that holds the ``labkit`` package the grader itself runs.
TRUSTED_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(labkit.__file__)))

_BOOT = ("import sys, runpy; sys.path[:0] = {paths!r}; "
         "runpy.run_module({module!r}, run_name='__main__', alter_sys=True)")


def trusted_path(exclude: Sequence[str] = ()) -> List[str]:
    """The trusted root, then the grader's absolute PYTHONPATH entries (none under ``exclude``)."""
    paths = [TRUSTED_ROOT]
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        outside = not any(inside(os.path.realpath(entry), os.path.realpath(e)) for e in exclude)
        # a relative entry ('' or '.') means "the current folder": never trusted
        if entry and os.path.isabs(entry) and entry not in paths and outside:
            paths.append(entry)
    return paths


def python_command(module: str, args: Sequence[str] = (), exclude: Sequence[str] = ()) -> List[str]:
    """``python -I -c BOOT args``: run ``module`` as ``__main__`` from the trusted path only."""
    return [sys.executable, "-I", "-c", _BOOT.format(paths=trusted_path(exclude), module=module)] + list(args)
