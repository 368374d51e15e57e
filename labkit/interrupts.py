"""Stopping a run (Kernel -> Interrupt, the stop button, Ctrl+C) is a result, not a crash.

The first interrupt asks the run to stop at the next step boundary: the training loop sees
``stop.requested``, ends there, and the run is returned with status ``interrupted`` and what
was measured so far. A second interrupt stops at once (the step in progress is dropped), as
PyTorch Lightning's graceful shutdown does on ``KeyboardInterrupt``. The training loops use it as:

    with interrupts.graceful() as stop:
        for step in ...:
            ...
            if stop.requested:
                break

and a run step (``graphcore.run_exercise`` ...) is wrapped in :func:`run_step`, which checks its
config against the notebook first and turns an interrupt that reaches it anyway (during
set-up, a download, a compile) into one line instead of a traceback.
"""

from __future__ import annotations

import functools
import signal
import threading
from typing import Any, Callable, Optional

from labkit.errors import one_line_traceback
from labkit.params import Config, check_current

__all__ = ["graceful", "StopRequest", "Interrupted", "run_step", "where"]


class Interrupted(KeyboardInterrupt):
    """An interrupt that arrived outside a training loop; shown in Jupyter as its one line.

    Not a :class:`labkit.errors.LabkitError`: that is an ``Exception``, and a stop must get past
    ``except Exception``.
    """

    shown_as = ""
    _render_traceback_ = one_line_traceback


class StopRequest:
    """Whether an interrupt asked the current run to stop, and how."""

    def __init__(self) -> None:
        self.requested = False
        self.at_once = False  # a second interrupt: the step in progress was dropped
        self._previous: Any = None
        self._installed = False

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.requested:  # a second interrupt: stop now
            self._restore()
            self.at_once = True
            raise KeyboardInterrupt
        self.requested = True

    def interrupted_by(self, exc: BaseException) -> bool:
        """Call in ``except KeyboardInterrupt``: True when this run should end with what it has
        (it was started under :func:`graceful`), False when the interrupt must propagate."""
        if not isinstance(exc, KeyboardInterrupt) or isinstance(exc, Interrupted):
            return False
        self.requested = True
        self.at_once = True
        return True

    def __enter__(self) -> "StopRequest":
        # Only the main thread may set signal handlers (ipykernel runs cells there); elsewhere an
        # interrupt arrives as KeyboardInterrupt and interrupted_by() still ends the run cleanly.
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def _restore(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)
            self._installed = False

    def __exit__(self, *exc: Any) -> None:
        self._restore()


def graceful() -> StopRequest:
    """A context manager: inside it, the first interrupt sets ``.requested`` instead of raising."""
    return StopRequest()


def where(epoch: Optional[int] = None, epochs: Optional[int] = None, step: Optional[int] = None,
          steps: Optional[int] = None, unit: str = "step") -> str:
    """The line a student reads: ``interrupted at epoch 2/10, step 40/150``."""
    parts = []
    if epoch is not None:
        parts.append("epoch {}/{}".format(epoch, epochs) if epochs else "epoch {}".format(epoch))
    if step is not None:
        parts.append("{} {}/{}".format(unit, step, steps) if steps else "{} {}".format(unit, step))
    return "interrupted at " + ", ".join(parts) if parts else "interrupted before the first step"


def run_step(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a notebook run step (a function given the notebook's ``config``).

    Before any work, every :class:`~labkit.params.Config` argument is checked against the
    notebook (:func:`labkit.params.check_current`). An interrupt that reaches the step outside
    a training loop ends it with one line and no traceback.
    """

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, Config):
                check_current(value)
        try:
            return function(*args, **kwargs)
        except KeyboardInterrupt as exc:
            if isinstance(exc, Interrupted):
                raise
            raise Interrupted("interrupted: {} stopped before it had a result to show".format(
                function.__name__)) from None

    return wrapper
