"""What a hostile student hands in beside a notebook, for the threat-model tests (docs/grading.md).

``shadow_labkit(folder, metrics)``: a ``labkit/`` package that lends itself the real package's
modules and replaces ``labkit.grading.recompute`` with one that echoes ``metrics`` (a forged
recomputation). ``shadow_tests(folder)``: the same for the toy rubric's ``tests.grading.toy``.
``shadow_modules(folder)``: ``json.py``, ``yaml/``, ``nbformat/``, ``numpy/`` and
``sitecustomize.py`` that behave as the real modules in the student's own kernel and stop any
other process that imports them with ``SHADOWED <name>``, plus an IPython startup file under
``.ipython/`` that does the same outside the student's kernel.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict

#: Stops a process that is not the student's kernel; inside the kernel, becomes the real module.
_GUARD = '''import os, sys
_mine = os.path.realpath(os.path.dirname(os.path.abspath(__file__)){up})
if b"ipykernel_launcher" not in open("/proc/self/cmdline", "rb").read() or os.path.realpath(os.getcwd()) != _mine:
    raise SystemExit("SHADOWED {name}: a submission's file reached a trusted process")
'''
_SHADOW = _GUARD + '''import importlib.machinery, importlib.util
_spec = importlib.machinery.PathFinder.find_spec(__name__, [p for p in sys.path if os.path.realpath(p or ".") != _mine])
_real = importlib.util.module_from_spec(_spec)
sys.modules[__name__] = _real
_spec.loader.exec_module(_real)
'''

_LEND = '''import os, sys
_mine = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
for _entry in sys.path:
    _cand = os.path.join(os.path.realpath(_entry or "."), {rel!r})
    if _cand != _mine and os.path.isfile(os.path.join(_cand, "__init__.py")):
        __path__.append(_cand)  # the real package's other modules, lent
        break
'''
_ECHO = '''import json, sys
def main():
    params = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps([{{"ok": {metrics!r}}} for _ in params]))
    return 0
if __name__ == "__main__":
    sys.exit(main())
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def shadow_labkit(folder: Path, metrics: Dict[str, Any]) -> None:
    """``labkit/``: the real package lent, ``labkit.grading.recompute`` answering ``metrics``."""
    _write(folder / "labkit" / "__init__.py", _LEND.format(rel="labkit") + "__version__ = '0.1.0'\n")
    _write(folder / "labkit" / "grading" / "__init__.py", _LEND.format(rel=os.path.join("labkit", "grading")))
    _write(folder / "labkit" / "grading" / "recompute.py", _ECHO.format(metrics=json.loads(json.dumps(metrics))))


def shadow_tests(folder: Path, score: float = 100.0) -> None:
    """``tests/grading/toy.py``: a toy exercise whose run and recomputation both say ``score``."""
    _write(folder / "tests" / "__init__.py", "")
    _write(folder / "tests" / "grading" / "__init__.py", "")
    _write(folder / "tests" / "grading" / "toy.py", (
        "from labkit.results import Run\n"
        "def run(steps=10, rate=0.3):\n"
        "    r = Run('toy/converge', params={{'steps': steps, 'rate': rate}})\n"
        "    r.add_metric('score', {score!r}, '%')\n"
        "    return r\n"
        "def recompute(params):\n"
        "    return {{'score': {score!r}}}\n"
        "def from_log(params):\n"
        "    return {{'score': {score!r}}}\n").format(score=score))


#: Modules the worker, the launcher and the recomputation import (single files, then packages).
SHADOWED_FILES = ("json", "argparse", "resource")
SHADOWED_PACKAGES = ("yaml", "nbformat", "numpy")


def shadow_modules(folder: Path) -> None:
    """Modules named like what trusted code imports, a sitecustomize.py and an IPython startup file."""
    for name in SHADOWED_FILES:
        _write(folder / (name + ".py"), _SHADOW.format(name=name, up=""))
    for name in SHADOWED_PACKAGES:
        _write(folder / name / "__init__.py", _SHADOW.format(name=name, up=" + '/..'"))
    _write(folder / "sitecustomize.py", _GUARD.format(name="sitecustomize", up=""))
    up = " + '/../../..'"  # the startup file's folder is .ipython/profile_default/startup
    _write(folder / ".ipython" / "profile_default" / "startup" / "00-shadow.py", _GUARD.format(name="startup", up=up))
    _write(folder / ".jupyter" / "jupyter_config.py", _GUARD.format(name="jupyter_config", up=" + '/..'"))


def labkit_student(folder: Path) -> None:
    """A student folder named ``labkit`` (a login can be anything) that is a package: in the folder
    the instructor runs ``labkit grade`` from, it stops any trusted process importing it."""
    _write(folder / "__init__.py", _GUARD.format(name="labkit (a student folder)", up="") + _LEND.format(rel="labkit"))


#: The attempts to escape the run folder, each printing ``ESCAPE <what>: <outcome>`` (``done`` when it worked).
_ESCAPE = r'''import os, socket
def attempt(what, action):
    try:
        print("ESCAPE {{}}: done {{}}".format(what, str(action())[:120]), flush=True)
    except Exception as exc:
        print("ESCAPE {{}}: blocked {{}}".format(what, type(exc).__name__), flush=True)
def write(path):
    with open(path, "a") as f:
        f.write("escaped\n")
    return path
def search():
    found = []
    for top in ("/tmp", "/var/tmp", {home!r}, {subs!r}):
        for folder, dirs, files in os.walk(top):
            if folder.startswith(os.getcwd()):
                continue
            found += [os.path.join(folder, f) for f in files if f.endswith(".ipynb")]
            if len(found) > 500:
                break
    if not found:
        raise FileNotFoundError("no classmate's notebook found")
    return "{{}} notebooks, e.g. {{}}".format(len(found), found[0])
attempt("write /tmp", lambda: write("/tmp/{marker}"))
attempt("write /var/tmp", lambda: write("/var/tmp/{marker}"))
attempt("write home", lambda: write(os.path.join({home!r}, "{marker}")))
attempt("write submissions", lambda: write(os.path.join({subs!r}, "{marker}")))
attempt("read shadow", lambda: "SHADOW " + open("/etc/shadow").read().split(":")[0])
attempt("search classmates", search)
attempt("edit classmate", lambda: write({victim!r}))
attempt("connect 127.0.0.1", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3).sendall(b"stolen"))
'''

#: What :func:`escape_cell` tries, as its lines name them.
ESCAPES = ("write /tmp", "write /var/tmp", "write home", "write submissions", "read shadow", "search classmates",
           "edit classmate", "connect 127.0.0.1")


def escape_cell(marker: str, home: str, subs: str, victim: str, port: int) -> str:
    """A cell that writes to /tmp, /var/tmp, ``home`` and ``subs``, reads /etc/shadow, searches for and
    appends to a classmate's notebook (``victim``) and connects to 127.0.0.1:``port``."""
    return _ESCAPE.format(marker=marker, home=home, subs=subs, victim=victim, port=port)


def escape_leftovers(marker: str, home: str, subs: str) -> list:
    """Files the escape cell managed to write (none, where it is contained)."""
    return [p for p in ("/tmp/" + marker, "/var/tmp/" + marker, os.path.join(home, marker), os.path.join(subs, marker))
            if os.path.exists(p)]
