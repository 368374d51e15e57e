"""The kernel side in a cell: labkit's SIGINT handlers, and what the kernel tells `labkit run` about a Ctrl-C.

What `labkit run` (:mod:`labkit.interrupts.runner`) and its kernel tell each other are flag files in a
folder labkit run makes and names in the kernel's environment: ``unrecorded`` (the kernel holds a run
step's result no cell has recorded), ``stop`` (labkit run goes on only to record that run),
``between-cells`` (the interrupt reached the kernel where ipykernel ignores or drops it). Outside labkit
run there is no folder and those functions do nothing.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable, Optional

__all__ = ["handler_interrupt", "quiet_to_cell_end", "deferred", "stop_pending", "unrecorded", "recorded",
           "flag_interrupts_between_cells"]


def quiet_to_cell_end(returning: Any = None) -> bool:
    """Once a run step, a show step or a record has ended: an interrupt that lands after the cell's
    own code (IPython storing the result, drawing the figures; ipykernel sending the reply) is set
    aside instead of failing a cell whose work is done and losing the record. While the cell's code
    still runs, an interrupt raises as usual. Only in an ipykernel kernel's main thread, whose next
    message puts ipykernel's own handler back; returns whether it is in place.

    ``returning``: the frame of the labkit step that is handing its result back; an interrupt while
    it still returns is set aside too (it would lose the result on its way)."""
    if threading.current_thread() is not threading.main_thread() or "ipykernel" not in sys.modules:
        return False
    from IPython import get_ipython

    shell = get_ipython()
    cells = getattr(getattr(shell, "compile", None), "_filename_map", None)  # the cells' code, by file name
    if getattr(shell, "kernel", None) is None or not isinstance(cells, dict):
        return False

    def after_the_code(signum: int, frame: Any) -> None:
        while frame is not None:
            if frame is returning:  # the step's work is done; it is on its way back
                return
            if frame.f_code.co_filename in cells:
                raise handler_interrupt()
            frame = frame.f_back

    signal.signal(signal.SIGINT, after_the_code)
    return True


def handler_interrupt() -> KeyboardInterrupt:
    """The KeyboardInterrupt labkit's SIGINT handlers raise, marked for :func:`_delivered_again`."""
    interrupt = KeyboardInterrupt()
    interrupt.from_labkit_handler = True  # type: ignore[attr-defined]
    return interrupt


def _delivered_again(previous: Callable[[Any], None]) -> Callable[[Any], None]:
    """A ``sys.unraisablehook``. Python runs a signal handler between any two bytecodes, also inside
    a destructor or a weakref callback (importlib's module locks have one), where an exception
    cannot propagate: Python prints "Exception ignored in ..." with a traceback and goes on, and the
    Ctrl-C is lost. An interrupt labkit's handler raised there is sent again instead, silently: it
    lands in the code that goes on, where the handler decides again (for a run step, as a second
    interrupt: it stops at once). Every other unraisable exception goes to ``previous``."""

    def hook(unraisable: Any) -> None:
        if getattr(unraisable.exc_value, "from_labkit_handler", False):
            # Sent now, it would land in this hook, where it cannot raise either; 50 ms later the
            # callback has returned (if not, this hook sends it again).
            again = threading.Timer(0.05, signal.raise_signal, (signal.SIGINT,))
            again.daemon = True
            again.start()
            return
        previous(unraisable)

    hook.labkit = True  # type: ignore[attr-defined]
    return hook


if not getattr(sys.unraisablehook, "labkit", False):  # once, also when the module is reloaded
    sys.unraisablehook = _delivered_again(sys.unraisablehook)


@contextlib.contextmanager
def deferred(returning: Any) -> Any:
    """Run a short block (recording a run) to its end: an interrupt meanwhile is set aside, not raised;
    after it, as :func:`quiet_to_cell_end` says for ``returning`` (the caller's frame)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: None)
    try:
        yield
    finally:
        # In a cell, straight from this handler to quiet_to_cell_end's: in between, ipykernel's own
        # would fail the cell after its run was recorded.
        if not quiet_to_cell_end(returning):
            signal.signal(signal.SIGINT, previous)


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
