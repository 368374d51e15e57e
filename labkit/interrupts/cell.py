"""The kernel side in a cell: labkit's SIGINT handlers, and what the kernel tells `labkit run` when it asks.

`labkit run` (:mod:`labkit.interrupts.runner`) asks through Jupyter's own messages, a silent execute
request whose user_expressions call :func:`answer`; outside labkit run nobody asks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from typing import Any, Callable

__all__ = ["handler_interrupt", "quiet_to_cell_end", "deferred", "answer", "stop_pending", "holding_a_run",
           "note_interrupts_between_cells"]


def quiet_to_cell_end(returning: Any = None) -> bool:
    """Once a step or a record has ended, an interrupt after the cell's code (IPython storing the result,
    drawing figures) or while ``returning`` (the step's frame) hands its result back is set aside; in
    the cell's code it raises. In an ipykernel main thread only (its next message puts its own handler
    back); returns whether it is in place."""
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
    """A ``sys.unraisablehook``: an interrupt labkit's handler raised where Python cannot raise it (a
    destructor, a weakref callback such as importlib's module locks have) would be printed and lost;
    it is sent again instead, where the handler decides again. Everything else goes to ``previous``."""

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
    """Run a short block (recording a run) to its end, an interrupt set aside; then :func:`quiet_to_cell_end`."""
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


#: Set in the environment of a kernel `labkit run` starts: the kernel notes interrupts between cells.
RUN_KERNEL = "LABKIT_RUN_KERNEL"
#: What ipykernel logs (and writes to the kernel's stderr) when an interrupt lands in its own code.
CAUGHT_IN_KERNEL = "KeyboardInterrupt caught in kernel"
#: The expression `labkit run` asks its kernel with (a silent execute request's user_expressions;
#: {} is whether it goes on only to record the run): :func:`answer`'s words, or "" without labkit.
ASK = "(lambda m: m.answer({}) if m else '')(__import__('sys').modules.get('labkit.interrupts.cell'))"


class _Noted:
    held = False  # a run step's result that no cell has recorded yet
    finishing = False  # labkit run goes on only to record that run
    between = False  # an interrupt reached the kernel where ipykernel ignores or drops it


def answer(finishing: bool) -> str:
    """What the kernel tells `labkit run` when asked (:data:`ASK`): "held", "between", both or none."""
    _Noted.finishing = _Noted.finishing or finishing
    return " ".join(word for word, on in (("held", _Noted.held), ("between", _Noted.between)) if on)


def stop_pending() -> bool:
    """A Ctrl-C came between cells under labkit run: a run step starts nothing, a show step draws nothing."""
    return _Noted.finishing or _Noted.between


def holding_a_run(held: bool) -> None:
    """Whether the kernel holds a run no cell has recorded yet (:func:`labkit.results.record` ends it)."""
    _Noted.held = held


def note_interrupts_between_cells() -> None:
    """In labkit run's kernel, note a Ctrl-C that ipykernel would lose: it ignores SIGINT between two
    messages (after each, it puts back ``saved_sigint_handler``, which becomes this handler), and drops
    one it catches in its own code (:class:`_CaughtInTheKernel`). No message is in flight then, so this
    is state the kernel keeps until labkit run asks; it runs before the kernel reads that request."""
    if not os.environ.get(RUN_KERNEL) or threading.current_thread() is not threading.main_thread() \
            or "ipykernel" not in sys.modules:
        return
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if getattr(kernel, "saved_sigint_handler", None) != signal.SIG_IGN:  # not inside a message: leave it
        return

    def between_cells(signum: int, frame: Any) -> None:
        _Noted.between = True

    kernel.saved_sigint_handler = between_cells
    log = getattr(kernel, "log", None)
    logger = getattr(log, "logger", log)  # a LoggerAdapter's, or the Logger itself
    if isinstance(logger, logging.Logger):
        logger.addFilter(_CaughtInTheKernel())


class _CaughtInTheKernel(logging.Filter):
    """Notes "KeyboardInterrupt caught in kernel.": the interrupt landed in ipykernel's code around a cell
    and went no further; after the cell's reply had gone, labkit run would run on as if none came."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith(CAUGHT_IN_KERNEL):
            _Noted.between = True
        return True
