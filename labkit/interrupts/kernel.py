"""The kernel side: a run step's phases, what it keeps, and a show step (the table in :mod:`labkit.interrupts`)."""

from __future__ import annotations

import functools
import signal
import sys
import threading
from typing import Any, Callable, List, Optional

from labkit.interrupts.cell import handler_interrupt, note_interrupts_between_cells, quiet_to_cell_end, stop_pending
from labkit.interrupts.cell import holding_a_run
from labkit.errors import one_line_traceback
from labkit.params import Config, check_current

#: The line an interrupt before the first measurement ends with ({} is the phase).
NOTHING_MEASURED = "interrupted in {}: nothing was measured yet, so no run was recorded"
#: The line a run step ends with when an interrupt outside its loops kept what was measured.
KEPT = "interrupted in {}: the run is kept with what was measured before it (status interrupted)"
#: The phase after a run's last line: an interrupt there no longer changes the run.
DONE = "done"


class Interrupted(KeyboardInterrupt):
    """An interrupt that ended a run step with nothing to show, shown as its one line (a KeyboardInterrupt,
    not a LabkitError: a stop must get past ``except Exception``)."""

    shown_as = ""
    _render_traceback_ = one_line_traceback


class _EndWithWhatWasKept(KeyboardInterrupt):
    """Raised at a boundary after a first interrupt: the run step returns what it kept."""


def _from_an_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is an interrupt or an error made of one (Python 3.11 wraps one raised in a class's
    ``__set_name__``, as while matplotlib first imports, in a RuntimeError)."""
    seen = set()
    cause: Optional[BaseException] = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


class RunPhases:
    """One run step in progress: its phase, and how to build what it measured."""

    def __init__(self, stop: StopRequest) -> None:
        self.stop = stop
        self.phase = "setup"
        self.build: Optional[Callable[[], Any]] = None
        self.measuring: Callable[[], bool] = lambda: True
        self.holds = False  # a measuring run step inside this one returned: its result is in this one's hands


_local = threading.local()


def _runs() -> List[RunPhases]:
    if not hasattr(_local, "runs"):
        _local.runs = []
    return _local.runs


def current_phase() -> str:
    """The phase of the innermost run step in progress in this thread ("" outside one)."""
    runs = _runs()
    return runs[-1].phase if runs else ""


def _measuring() -> bool:
    """Whether a run step in progress keeps what it measured and has begun measuring (cheap: a signal handler asks)."""
    return any(run.holds or (run.build is not None and run.measuring()) for run in _runs())


def _ending() -> bool:
    """An interrupt came and a run step in progress keeps what was measured: end at this boundary."""
    runs = _runs()
    return bool(runs) and runs[-1].stop.requested and any(run.build is not None for run in runs)


def check() -> None:
    """A boundary inside a phase (a test batch): the run ends here after an interrupt, when it keeps."""
    if _ending():
        raise _EndWithWhatWasKept


def phase(name: str, check: bool = True) -> None:
    """The run enters phase ``name``; with ``check``, after an interrupt it ends here when it keeps."""
    runs = _runs()
    if not runs:
        return
    if check and _ending():
        raise _EndWithWhatWasKept
    runs[-1].phase = name


def where(epoch: Optional[int] = None, epochs: Optional[int] = None, step: Optional[int] = None,
          steps: Optional[int] = None, unit: str = "step") -> str:
    """The line a student reads: ``interrupted at epoch 2/10, step 40/150``."""
    parts = []
    if epoch is not None:
        parts.append("epoch {}/{}".format(epoch, epochs) if epochs else "epoch {}".format(epoch))
    if step is not None:
        parts.append("{} {}/{}".format(unit, step, steps) if steps else "{} {}".format(unit, step))
    return "interrupted at " + ", ".join(parts) if parts else "interrupted before the first step"


class StopRequest:
    """The stop flag: ``requested`` (a first interrupt came, in phase ``requested_in``), ``at_once`` (a
    second one did), ``returning`` (the step's work is done: an interrupt is set aside). Its loops call
    :func:`phase`, :func:`check` and :func:`where` through it."""

    def __init__(self) -> None:
        self.requested = False
        self.at_once = False
        self.requested_in = ""
        self.returning = False
        self._defer = 0  # > 0: a first interrupt only sets .requested (a loop or a kept run checks it)
        self._previous: Any = None
        self._installed = False
        self._entered: List[bool] = []  # per ``with`` block: whether it installed the handler

    def _on_sigint(self, signum: int, frame: Any) -> None:
        if self.returning or _returning_result(frame):  # set aside: the run's result is complete
            return
        if self.requested:  # a second interrupt: stop now
            self._restore()
            self.at_once = True
            raise handler_interrupt()
        self.requested = True
        self.requested_in = current_phase()
        if self._defer <= 0 and not _measuring():  # nothing measured yet: nothing to wait for
            raise handler_interrupt()

    phase = staticmethod(phase)
    check = staticmethod(check)
    where = staticmethod(where)

    def interrupted_by(self, exc: BaseException) -> bool:
        """In ``except KeyboardInterrupt`` (or an error made of one): True when the run ends with what it
        has, False when the interrupt must propagate."""
        if not _from_an_interrupt(exc) or isinstance(exc, (Interrupted, _EndWithWhatWasKept)):
            return False  # _EndWithWhatWasKept: the run step ends there, with what it kept
        if not self.requested:
            self.requested_in = current_phase()
        self.requested = True
        self.at_once = True
        return True

    def _install(self) -> bool:
        # Only the main thread may set signal handlers (ipykernel runs cells there); elsewhere an
        # interrupt arrives as KeyboardInterrupt and interrupted_by() still ends the run cleanly.
        if self._installed or threading.current_thread() is not threading.main_thread():
            return False
        self._previous = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, self._on_sigint)
        self._installed = True
        return True

    def _restore(self) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous if self._previous is not None else signal.default_int_handler)
            self._installed = False

    def __enter__(self) -> "StopRequest":
        self._defer += 1
        self._entered.append(self._install())
        return self

    def __exit__(self, *exc: Any) -> None:
        self._defer -= 1
        if self._entered.pop():
            self._restore()


def graceful() -> StopRequest:
    """A context manager: inside it, the first interrupt sets ``.requested`` instead of raising (inside a
    run step, on the run's own stop flag, so the phases after the loop see it)."""
    runs = _runs()
    return runs[-1].stop if runs else StopRequest()


def keep(build: Callable[[], Any], measuring: Optional[Callable[[], bool]] = None) -> StopRequest:
    """From now on an interrupt ends the run with ``build()``, what was measured (None while nothing is);
    until ``measuring()`` says it has begun, an interrupt outside a loop stops it at once. Returns the
    run's stop flag (outside a run step, a flag of its own)."""
    runs = _runs()
    if not runs:
        return StopRequest()
    runs[-1].build = build
    runs[-1].measuring = measuring or (lambda: True)
    return runs[-1].stop


def _the_run(result: Any) -> Any:
    """The labkit.results.Run in a run step's result (a Run, or a result with ``.run``)."""
    return result if hasattr(result, "mark_interrupted") else getattr(result, "run", None)


def _mark(result: Any, where_: str) -> None:
    """Status interrupted and ``stopped_in``, and one line (:data:`KEPT`) unless the run said so itself."""
    run = _the_run(result)
    if run is None:
        return
    if not getattr(run, "stopped_in", ""):
        run.stopped_in = where_
    if run.status != "interrupted":
        run.mark_interrupted("interrupted in " + where_, "its figures cover only what was measured before it.")
        print(KEPT.format(where_))


def _ended(run: RunPhases) -> Any:
    """After an interrupt: ``keep``'s builder's result, marked, with one line unless the run said where."""
    built = run.build() if run.build is not None else None
    _mark(built, run.stop.requested_in or run.phase)
    return built


def run_step(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a notebook run step: :func:`with_phases`, its Config arguments first checked against the
    notebook (:func:`labkit.params.check_current`)."""
    phased = with_phases(function)

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        for value in list(args) + list(kwargs.values()):
            if isinstance(value, Config):
                check_current(value)
        return phased(*args, **kwargs)

    return wrapper


def with_phases(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a run (a step, or one of several runs a step makes) with phases, ended by an interrupt as
    the table says; inside a run that keeps, "nothing yet" passes the interrupt on to that one."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        runs = _runs()
        outer = runs[-1] if runs else None
        if outer is None and stop_pending():  # Ctrl-C came before this cell: start nothing
            raise Interrupted(NOTHING_MEASURED.format("setup"))
        stop = outer.stop if outer is not None else StopRequest()
        run = RunPhases(stop)
        if outer is None:
            stop._install()
        runs.append(run)
        try:
            result = function(*args, **kwargs)
            _hand_over(run, outer)
            if stop.requested and run.build is not None and stop.requested_in != DONE:
                _mark(result, stop.requested_in)  # it came in the run's last phase, with no boundary left
            if outer is None and _the_run(result) is not None:
                holding_a_run(True)
            return result
        except BaseException as exc:  # an interrupt, or an error the code it reached made of one
            if isinstance(exc, Interrupted) or not _from_an_interrupt(exc):
                raise
            stop.interrupted_by(exc) if not stop.requested else None
            kept = _ended(run)
            if kept is not None:
                _hand_over(run, outer)
                if outer is None:
                    holding_a_run(True)
                return kept
            if any(other.build is not None for other in runs[:-1]):
                raise  # an outer run keeps what it measured
            raise Interrupted(NOTHING_MEASURED.format(stop.requested_in or run.phase)) from None
        finally:
            if outer is None:
                stop.returning = True
                # One handler straight to the next: between a restored ipykernel handler and
                # quiet_to_cell_end's, an interrupt would lose the result on its way to the cell.
                here = sys._getframe()
                if here.f_back is not None and here.f_back.f_code is _RUN_STEP_CODE:
                    here = here.f_back
                if quiet_to_cell_end(returning=here):
                    stop._installed = False
                else:
                    stop._restore()
            runs.pop()

    return wrapper


_RUN_STEP_CODE = run_step(lambda: None).__code__
_WITH_PHASES_CODE = with_phases(lambda: None).__code__


def _returning_result(frame: Any) -> bool:
    """Whether ``frame`` is in the outermost run's wrapper after the run returned (``result`` is bound)."""
    outermost = None
    while frame is not None:
        if frame.f_code is _WITH_PHASES_CODE:
            outermost = frame
        frame = frame.f_back
    return outermost is not None and "result" in outermost.f_locals


def _hand_over(run: RunPhases, outer: Optional[RunPhases]) -> None:
    """A run that measured returned inside one that keeps nothing: the outer one holds its result (an
    interrupt would otherwise find it "in setup, nothing measured" and lose that result)."""
    if outer is not None and outer.build is None and run.build is not None:
        outer.phase = run.phase
        outer.holds = True


_NOT_SHOWN = object()  # a show step's result before its drawing has returned
#: The line a show step ends with when an interrupt stops its tables and figures.
SHOW_STOPPED = "interrupted while showing the run: the run itself is unchanged, and the next cell still records it"


def show_step(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a show step (tables, figures): an interrupt stops the drawing with one line, no traceback."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if stop_pending():  # Ctrl-C came between cells: straight on to the cell that records the run
            print(SHOW_STOPPED)
            return None
        shown = _NOT_SHOWN
        try:
            try:
                shown = function(*args, **kwargs)
            finally:
                quiet_to_cell_end(returning=sys._getframe())  # the figures are drawn after the code, as the cell ends
        except BaseException as exc:  # while drawing, or as the drawing returned, before the line above
            if isinstance(exc, Interrupted) or not _from_an_interrupt(exc):
                raise
            if shown is _NOT_SHOWN:
                print(SHOW_STOPPED)
        return None if shown is _NOT_SHOWN else shown

    return wrapper


note_interrupts_between_cells()  # when labkit is imported in a cell of labkit run's kernel
