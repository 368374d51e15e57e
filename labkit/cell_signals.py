"""SIGINT in a notebook kernel's cell, as labkit's handlers need it (:mod:`labkit.interrupts` uses these).

- :func:`handler_interrupt`: the KeyboardInterrupt labkit's handlers raise, marked so that one raised
  where Python cannot raise it (a weakref callback, a destructor) is sent again (:func:`_delivered_again`);
- :func:`quiet_to_cell_end`: once a step's work is done, an interrupt is set aside instead of losing it;
- :func:`deferred`: a short block (recording a run) runs to its end.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from typing import Any, Callable

__all__ = ["handler_interrupt", "quiet_to_cell_end", "deferred"]


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
