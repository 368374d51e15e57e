"""How the grader's trusted code (the worker, recomputation) keeps clear of a submission: it imports only
the grader's own code, and reads of a submission only its evidence (docs/grading.md, "Threat model").
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence

import labkit
from labkit.grading.sandbox.landlock import inside

__all__ = ["TRUSTED_ROOT", "trusted_path", "python_command", "PATH_KEYS", "path_refusal", "record_refusal",
           "absolute_params", "drop_escapes", "quoted", "confine_reads"]

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


#: The record parameters that name a file of the submission.
PATH_KEYS = ("log", "evidence")


def quoted(value: Any, width: int = 80) -> str:
    """``repr(value)`` cut to ``width`` characters: what a reason may quote of a student's value."""
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def path_refusal(path: Any, root: str) -> Optional[str]:
    """Why ``path`` (relative to the submission ``root``) may not be read, or None when it may."""
    if not isinstance(path, str) or not path or "\0" in path or len(path) > 4096:
        return "{} is not a file name".format(quoted(path))
    if os.path.isabs(path):
        return "{} is an absolute path; evidence must be a file of the submission".format(quoted(path))
    real_root = os.path.realpath(root)
    if not inside(os.path.normpath(os.path.join(real_root, path)), real_root):
        return "{} leaves the submission's folder".format(quoted(path))
    full = os.path.join(real_root, path)
    real = os.path.realpath(full)
    if not inside(real, real_root):
        return "{} is a link that leads out of the submission's folder".format(quoted(path))
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return "{} is not a file of the submission".format(quoted(path))
    if not stat.S_ISREG(mode):
        return "{} is not a regular file (a folder, a FIFO or a device)".format(quoted(path))
    return None


def _candidates(params: Mapping[str, Any]) -> List[Any]:
    found = params.get("candidates")
    return list(found) if isinstance(found, list) else []


def record_refusal(params: Any, root: str) -> Optional[str]:
    """Why a record's parameters may not be recomputed from ``root`` (None: they may); a re-run request
    (``params['candidates']``) is refused only when every candidate is."""
    if not isinstance(params, dict):
        return "the record's parameters are not a mapping"
    for key in PATH_KEYS:
        if key in params:
            why = path_refusal(params[key], root)
            if why:
                return "params['{}'] = {}".format(key, why)
    candidates = _candidates(params)
    if candidates:
        reasons = [record_refusal(c, root) for c in candidates]
        if all(reasons):
            return reasons[0]
    return None


def absolute_params(params: Dict[str, Any], root: str) -> Dict[str, Any]:
    """``params`` with its file names made absolute under ``root``; refused candidates left out."""
    real_root = os.path.realpath(root)
    done = dict(params)
    for key in PATH_KEYS:
        if isinstance(done.get(key), str):
            done[key] = os.path.join(real_root, done[key])
    if _candidates(params):
        done["candidates"] = [absolute_params(c, root) for c in _candidates(params) if not record_refusal(c, root)]
    return done


def drop_escapes(root: str) -> List[str]:
    """Remove, under ``root``, every link that leads out of it and every FIFO, socket and device: run once the
    student's processes are gone, so a file trusted code finds beside the evidence is the student's own."""
    real_root = os.path.realpath(root)
    removed = []
    for folder, dirs, files in os.walk(real_root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            escapes = stat.S_ISLNK(mode) and not inside(os.path.realpath(path), real_root)
            special = not (stat.S_ISLNK(mode) or stat.S_ISREG(mode) or stat.S_ISDIR(mode))
            if escapes or special:
                os.unlink(path)
                removed.append(os.path.relpath(path, real_root))
    return removed


_DEVICES_ALLOWED = ("/dev/null", "/dev/urandom", "/dev/random", "/dev/tty")


def confine_reads(root: str, allowed: Sequence[str], denied: Sequence[str]) -> None:
    """From now on this process opens nothing under ``denied`` (unless under ``root`` or ``allowed``)
    and no FIFO or device but ``/dev/null`` and the random sources: ``PermissionError`` instead.

    An audit hook cannot be removed; it guards trusted code led by a file's content, not code
    that means harm (which never runs here).
    """
    ok = [os.path.realpath(p) for p in [root] + list(allowed) if p]
    no = [os.path.realpath(p) for p in denied if p]

    def hook(event: str, args: Any) -> None:
        if event != "open" or not args or not isinstance(args[0], (str, bytes)):
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if any(inside(path, p) for p in ok):
            return
        if any(inside(path, p) for p in no):
            raise PermissionError("labkit grade: {} is outside this submission; not read".format(quoted(path)))
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)) and path not in _DEVICES_ALLOWED:
            raise PermissionError("labkit grade: {} is a FIFO or a device; not read".format(quoted(path)))

    sys.addaudithook(hook)
