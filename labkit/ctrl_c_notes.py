"""What `labkit run` (:mod:`labkit.ctrl_c`) and its kernel (:mod:`labkit.interrupts`) tell each other
about a Ctrl-C, as flag files in a folder labkit run makes and names in the kernel's environment.

- ``unrecorded``: the kernel holds a run step's result that no cell has recorded yet (written when a
  run step returns, removed by :func:`labkit.results.record`);
- ``stop``: labkit run was asked to stop between cells: it goes on only to record that run;
- ``between-cells``: the interrupt reached the kernel between two messages, where ipykernel ignores
  SIGINT, or in ipykernel's own code around a cell, where it catches and drops it
  (:func:`flag_interrupts_between_cells`).

Outside labkit run (JupyterLab, papermill, nbval) there is no folder and every function here does nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from typing import Any, Optional

__all__ = ["CTRL_C_FLAGS", "UNRECORDED", "STOP", "BETWEEN", "CAUGHT_IN_KERNEL", "stop_pending", "unrecorded",
           "recorded", "flag_interrupts_between_cells"]

#: Set by `labkit run` in its kernel's environment: the flags' folder.
CTRL_C_FLAGS = "LABKIT_CTRL_C_FLAGS"
UNRECORDED, STOP, BETWEEN = "unrecorded", "stop", "between-cells"
#: What ipykernel logs (and writes to the kernel's stderr) when an interrupt lands in its own code.
CAUGHT_IN_KERNEL = "KeyboardInterrupt caught in kernel"


def _flag(name: str) -> Optional[str]:
    folder = os.environ.get(CTRL_C_FLAGS)
    return os.path.join(folder, name) if folder else None


def stop_pending() -> bool:
    """A Ctrl-C came between cells (in labkit run, or in the kernel itself): labkit run goes on only to
    the cells that record the run, where a run step starts nothing and a show step draws nothing."""
    return any(path is not None and os.path.exists(path) for path in (_flag(STOP), _flag(BETWEEN)))


def unrecorded(held: bool) -> None:
    """The kernel holds a run no cell has recorded yet (``held``), or no longer does."""
    path = _flag(UNRECORDED)
    if path is None:
        return
    try:
        if held:
            open(path, "w").close()
        elif os.path.exists(path):
            os.remove(path)
    except OSError:  # the flags are a courtesy to labkit run; a run never fails on them
        pass


def recorded() -> None:
    """The run the kernel held is recorded (:func:`labkit.results.record` calls it)."""
    unrecorded(False)


def flag_interrupts_between_cells() -> None:
    """In a kernel `labkit run` started: ipykernel ignores SIGINT between two messages, so a Ctrl-C that
    labkit run passed on as a cell's request was on its way, or just after the cell's reply, was lost
    and the notebook ran on. Flag it (BETWEEN) instead: labkit run starts no further cell, and a run or
    show step in the cell already sent starts nothing. ipykernel puts back, after each message, the
    handler it found before the message (``saved_sigint_handler``): it becomes this one. The same flag
    when ipykernel catches the interrupt in its own code around a cell (:class:`_CaughtInTheKernel`)."""
    path = _flag(BETWEEN)
    if path is None or threading.current_thread() is not threading.main_thread() or "ipykernel" not in sys.modules:
        return
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if getattr(kernel, "saved_sigint_handler", None) != signal.SIG_IGN:  # not inside a message: leave it
        return

    def between_cells(signum: int, frame: Any) -> None:
        _flag_between_cells(path)

    kernel.saved_sigint_handler = between_cells
    log = getattr(kernel, "log", None)
    logger = getattr(log, "logger", log)  # a LoggerAdapter's, or the Logger itself
    if isinstance(logger, logging.Logger):
        logger.addFilter(_CaughtInTheKernel(path))


def _flag_between_cells(path: str) -> None:
    try:
        open(path, "w").close()
    except OSError:  # labkit run has ended and removed the flags
        pass


class _CaughtInTheKernel(logging.Filter):
    """Flags BETWEEN when ipykernel logs "KeyboardInterrupt caught in kernel.": the interrupt landed in its
    own code around a cell and went no further. Where the cell's reply had already gone out (the
    moment after it is sent), labkit run would see a cell that ended well and run on as if no Ctrl-C
    had come. The flag is written before the kernel says it is idle, so before the next cell is sent."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(CAUGHT_IN_KERNEL):
            _flag_between_cells(self.path)
        return True
