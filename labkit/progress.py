"""Progress bars that render in JupyterLab and as plain text under papermill.

``tqdm.auto`` picks the widget bar in any kernel, which papermill stores as an unreadable
``HBox(...)``. labkit picks the widget only when a person is watching (a kernel whose
frontend is not papermill or nbclient), and text otherwise. ``LABKIT_PROGRESS=text|widget|off``
overrides the choice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Iterable, List, Optional

__all__ = ["bar", "style"]

_HEADLESS_PARENTS = ("papermill", "nbclient", "nbconvert", "pytest", "labkit")


def _in_kernel() -> bool:
    from IPython import get_ipython

    shell = get_ipython()
    return shell is not None and "ipykernel" in type(shell).__module__


def _parent_command() -> str:
    """Command line of the process that started this kernel (papermill, jupyter-lab, ...)."""
    ppid = os.getppid()
    try:
        with open("/proc/{}/cmdline".format(ppid), "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        try:  # macOS has no /proc
            return subprocess.run(["ps", "-o", "command=", "-p", str(ppid)], capture_output=True,
                                  text=True, timeout=2).stdout
        except (OSError, subprocess.SubprocessError):
            return ""


def _programs(command: str) -> List[str]:
    """The names of what a command line runs: its executable and, for an interpreter or the
    ``jupyter`` launcher, the script, ``-m`` module or subcommand after it.

    Only these count, not every word: a notebook folder under ``/tmp/pytest-of-me/`` or a
    checkout called ``labkit`` must not make JupyterLab's kernel look like papermill's.
    """
    words = command.split()
    names = []
    for i, word in enumerate(words):
        if i and word.startswith("-") and word != "-m":
            continue  # an interpreter option such as -X, -u
        name = os.path.basename(word)
        for suffix in (".py", ".exe"):
            name = name[:-len(suffix)] if name.endswith(suffix) else name
        if word != "-m":
            names.append(name.split(".")[0].replace("jupyter-", ""))
        if not (name.startswith("python") or name == "jupyter" or word == "-m"):
            break
    return names


def style() -> str:
    """'widget', 'text' or 'off'."""
    chosen = os.environ.get("LABKIT_PROGRESS", "").strip().lower()
    if chosen in ("text", "off"):
        return chosen
    if chosen != "widget":
        if not _in_kernel():
            return "text"
        if any(name in _HEADLESS_PARENTS for name in _programs(_parent_command())):
            return "text"
    try:
        import ipywidgets  # noqa: F401  (the widget bar needs it)
    except ImportError:
        return "text"
    return "widget"


def bar(iterable: Optional[Iterable[Any]] = None, total: Optional[int] = None, desc: str = "",
        leave: bool = True, unit: str = "it", **kwargs: Any):
    """A tqdm bar in the right style for where the code runs."""
    chosen = style()
    # One redraw a second: each widget redraw costs the kernel a few ms of messages, and the browser
    # (often on the same cores as the kernel) a re-layout, where tqdm's 0.1 s made both 10x busier;
    # a text bar redrawn less fills an executed notebook with fewer carriage-return frames.
    kwargs.setdefault("mininterval", 1.0)
    if chosen == "widget":
        from tqdm.notebook import tqdm

        return tqdm(iterable, total=total, desc=desc, leave=leave, unit=unit, **kwargs)
    from tqdm import tqdm

    # Text for logs: stdout (papermill keeps stderr apart), a fixed width. The postfix goes after
    # the timing bracket so log readers and nbval's sanitizers can mask the timing and keep the
    # numbers that matter.
    kwargs.setdefault("bar_format", "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]{postfix}")
    return tqdm(iterable, total=total, desc=desc, leave=leave, unit=unit, file=sys.stdout,
                ncols=100, ascii=False, disable=(chosen == "off"), **kwargs)
