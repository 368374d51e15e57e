"""The errors labkit raises: one base, :class:`LabkitError`, and how Jupyter shows them.

    try:
        run = graphcore.run_exercise(config)
    except labkit.errors.LabkitError as error:   # anything labkit refused or could not do
        ...

Every labkit error derives from ``LabkitError`` (never raised itself) and keeps the built-in base
that says what kind of failure it is, so ``except ValueError`` (bad input) or ``except
MemoryError`` (too big for this machine) still catches it. Each class's docstring says when it
is raised; by module (built-in base in brackets):

* parameters and hand-ins: ``ParameterError`` [ValueError] and its ``StaleConfigError`` (params),
  ``TooBigForMemory`` [MemoryError] (a ParameterError of testbeds.sambanova), ``UnknownExercise``
  [LookupError] (exercises), ``SweepError`` [ValueError] and
  ``ReportNotWritten`` [OSError] (sweep), ``EvidenceError`` [ValueError]
  (testbeds.homework, and testbeds.sambanova.inference for pasted transcripts);
* data, logs and models: ``IdxError`` [ValueError] and ``MnistDataError`` [RuntimeError] (data),
  ``NoRunError`` [LookupError] and ``BinaryLogError`` [ValueError] (logs), ``ClassDataError``
  [ValueError] (grading.reports.class_page), ``CorpusUnavailable`` [RuntimeError] and
  ``ModelTooLarge`` [MemoryError] (llm), ``ModelUnavailable`` [ValueError] (testbeds.groq),
  ``PromptError`` [ValueError] (testbeds.sambanova.inference);
* devices and local runs: ``DeviceError`` [RuntimeError] (devices), ``BackendError``
  [RuntimeError] (testbeds.groq), ``RanksFailed`` [RuntimeError] (rank_launcher),
  ``AcceleratorError`` [ValueError] (accelerator) and its ``NothingFitsHere`` (llm.device_plan),
  ``NothingFits`` [MemoryError] (accelerator);
* services and clusters: ``AccessError`` and ``NotServed`` [RuntimeError]
  (testbeds.sambanova.inference), ``ApiError`` (serving.protocol), ``ServerStartError``,
  ``QueueFull`` and ``EngineStopped`` [RuntimeError] (serving), ``JobRequestError`` [ValueError],
  ``JobRejected`` and ``JobError`` [RuntimeError] (jobs);
* files: ``Busy`` [RuntimeError] (another writer holds the path) and ``NotAFile`` [ValueError] (a
  folder, FIFO or device given as a file) (files);
* other packages: ``UpstreamChanged`` [ImportError] (a release of nbclient or jupyter_client changed a
  method labkit run overrides) (execute.upstream);
* grading: ``RubricError`` [ValueError] (grading.checks.rubric), ``LandlockError`` [OSError]
  (grading.sandbox.landlock), ``NotEnoughSpace`` [RuntimeError] (grading.sandbox.disk).

Not an error: :class:`labkit.interrupts.Interrupted` is a ``KeyboardInterrupt`` (a run stopped
by the student), so that ``except Exception`` never swallows a stop; it is shown as one line too.

An error whose message says all a student needs sets :attr:`LabkitError.shown_as`: a cell that
raises it shows one line, ``ParameterError: Bad parameter for ...``, instead of a traceback
through labkit's internals, and papermill saves that line as the cell's error output. The others
keep Python's traceback, which is what someone debugging them needs. Such a stop also ends a Run All
there (:func:`stops_end_run_all`).
"""

from __future__ import annotations

import time
from typing import Any, Callable, ClassVar, List, Optional

__all__ = ["LabkitError", "one_line_traceback", "stops_end_run_all"]


def _one_line(error: BaseException) -> Callable[[], List[str]]:
    shown_as = getattr(error, "shown_as", None)
    if shown_as is None:  # absent to IPython (hasattr is False): it shows the usual traceback
        raise AttributeError("_render_traceback_")
    line = "{}: {}".format(shown_as, error) if shown_as else str(error)
    return lambda: [line]


#: IPython's hook for an exception's own traceback (``_render_traceback_``): IPython calls it when
#: the attribute exists, so this property exists only on errors whose ``shown_as`` is set.
one_line_traceback = property(_one_line)


class LabkitError(Exception):
    """The base of every error labkit raises (see the module's documentation for the hierarchy)."""

    #: How a notebook shows this error. ``None``: Python's traceback. A name: one line,
    #: ``<name>: <message>``, no traceback (a subclass keeps its parent's name unless it sets
    #: its own). ``""``: the message alone.
    shown_as: ClassVar[Optional[str]] = None

    _render_traceback_ = one_line_traceback


#: How long a cell stopped by a one-line labkit error holds back its reply. Run All sends every cell's
#: request at once, and ipykernel aborts those behind a failed cell only until it reads a marker it
#: queues after its reply (ipykernel 7's ``Kernel._abort_queues``; ``stop_on_error_timeout`` no longer
#: applies there). On a loaded machine a request can reach the kernel after that, run, and fail for
#: want of ``config``: a NameError under the stop's one line. Measured through jupyter_client: a request
#: sent 0 to 0.5 s after the stop was shown ran every time without the hold and was aborted with it
#: (tests/test_editing_cells.py).
HOLD_S = 1.0


def _hold_after_a_stop(result: Any = None) -> None:
    error = getattr(result, "error_in_exec", None)
    if isinstance(error, LabkitError) and error.shown_as is not None:
        try:
            time.sleep(HOLD_S)
        except KeyboardInterrupt:  # the stop is shown already; a traceback from this hook would hide it
            pass


def stops_end_run_all() -> None:
    """In a Jupyter kernel, once: a cell stopped by a one-line labkit error holds its reply
    :data:`HOLD_S`, so the kernel aborts every cell that Run All queued behind it."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if getattr(shell, "kernel", None) is None:
        return
    hooks = shell.events.callbacks["post_run_cell"]
    if not any(getattr(hook, "__name__", "") == _hold_after_a_stop.__name__ for hook in hooks):
        shell.events.register("post_run_cell", _hold_after_a_stop)
