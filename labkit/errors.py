"""The errors labkit raises: one base, :class:`LabkitError`, and how Jupyter shows them.

    try:
        run = graphcore.run_exercise(config)
    except labkit.errors.LabkitError as error:   # anything labkit refused or could not do
        ...

Every labkit error also keeps the built-in base that says what kind of failure it is, so
``except ValueError`` (bad input) or ``except MemoryError`` (too big for this machine) still
catches it. The hierarchy (built-in base in brackets; where each is raised):

* ``LabkitError`` [Exception]: the base; never raised itself.

  Parameters, sweeps and hand-ins

  * ``ParameterError`` [ValueError] (:mod:`labkit.params`): a notebook's parameter values were
    refused; ``problems`` lists every one, each naming the parameter and what is allowed.

    * ``StaleConfigError``: the parameters cell changed since ``config`` was built (edited and
      run alone); says which parameter and to run the config cell again.
    * ``TooBigForMemory`` [MemoryError] (:mod:`labkit.testbeds.sambanova`): the portable BERT
      run would not fit in this machine's memory; says which sizes would.

  * ``UnknownExercise`` [LookupError] (:mod:`labkit.exercises`): a name, notebook or log format the
    registry of exercises does not hold; says which it holds.
  * ``SweepError`` [ValueError] (:mod:`labkit.sweep`): a sweep's arguments are wrong, or its
    ``--out`` folder belongs to another sweep.
  * ``EvidenceError`` [ValueError] (:mod:`labkit.testbeds.homework`): a notebook or sweep folder
    handed in that cannot count as homework evidence.
  * ``EvidenceError`` [ValueError] (:mod:`labkit.testbeds.sambanova.inference`): a pasted
    transcript of the inference service that cannot be read as evidence.

  Data, logs and models

  * ``IdxError`` [ValueError] (:mod:`labkit.data.idx`): an IDX file is missing, truncated or corrupted.
  * ``MnistDataError`` [RuntimeError] (:mod:`labkit.data.mnist`): MNIST could not be loaded.
  * ``NoRunError`` [LookupError] (:mod:`labkit.logs`): a log holds no run.
  * ``BinaryLogError`` [ValueError] (:mod:`labkit.logs.text`): a "log" that is not text.
  * ``ClassDataError`` [ValueError] (:mod:`labkit.grading.reports.class_data`): ``labkit class DIR`` on a folder
    that ``labkit grade`` did not write (no grading state, or one it cannot read).
  * ``CorpusUnavailable`` [RuntimeError] (:mod:`labkit.llm.corpus`): a hub dataset could not be loaded.
  * ``ModelTooLarge`` [MemoryError] (:mod:`labkit.llm.presets`): a LLaMA preset too big to train here.
  * ``ModelUnavailable`` [ValueError] (:mod:`labkit.testbeds.groq`): a model that cannot be loaded here.
  * ``PromptError`` [ValueError] (:mod:`labkit.testbeds.sambanova.inference`): prompts that could not be loaded.

  Devices, backends and local runs

  * ``DeviceError`` [RuntimeError] (:mod:`labkit.devices`): the device or vendor stack asked for is not here.
  * ``BackendError`` [RuntimeError] (:mod:`labkit.testbeds.groq`): a Groq backend that cannot run here.
  * ``RanksFailed`` [RuntimeError] (:mod:`labkit.rank_launcher`): a rank of a multi-process run raised, died or hung.
  * ``AcceleratorError`` [ValueError] (:mod:`labkit.accelerator`): a precision, micro-batch or launch mode
    this device cannot do; names the parameter and what is allowed.

    * ``NothingFitsHere`` (:mod:`labkit.llm.device_plan`): no LLaMA preset trains on this device; says what would.

  * ``NothingFits`` [MemoryError] (:mod:`labkit.accelerator`): even a micro-batch of 1 ran out of the device's memory.

  Services and clusters

  * ``AccessError`` [RuntimeError] (:mod:`labkit.testbeds.sambanova.inference`): no access token found.
  * ``NotServed`` [RuntimeError] (:mod:`labkit.testbeds.sambanova.inference`): the endpoint does not
    serve the model asked for.
  * ``ApiError`` (:mod:`labkit.serving.protocol`): an error answered as the OpenAI API does (HTTP status).
  * ``ServerStartError`` [RuntimeError] (:mod:`labkit.serving.process`): a local server did not get ready.
  * ``QueueFull`` and ``EngineStopped`` [RuntimeError] (:mod:`labkit.serving.engine`): the local engine
    takes no new request (too many waiting; shutting down).
  * ``JobRequestError`` [ValueError] (:mod:`labkit.jobs`): a job request that cannot run on the cluster.
  * ``JobRejected`` [RuntimeError] (:mod:`labkit.jobs`): Slurm refused a submission (its own message).
  * ``JobError`` [RuntimeError] (:mod:`labkit.jobs`): Slurm could not be asked (no ``sbatch``, a timeout).

  Grading

  * ``RubricError`` [ValueError] (:mod:`labkit.grading.checks.rubric`): a rubric file is wrong (file, line,
    what is allowed).
  * ``LandlockError`` [OSError] (:mod:`labkit.grading.sandbox.landlock`): no Landlock here, or a ruleset refused.

Not an error: :class:`labkit.interrupts.Interrupted` is a ``KeyboardInterrupt`` (a run stopped
by the student), so that ``except Exception`` never swallows a stop; it is shown as one line too.

How Jupyter shows them: an error whose message says all a student needs (what was wrong, what
to do) sets :attr:`LabkitError.shown_as`, and a cell that raises it shows one line,
``ParameterError: Bad parameter for ...``, instead of a traceback through labkit's internals;
papermill saves that line as the cell's error output and prints it when a run stops. The others
keep Python's traceback, which is what someone debugging them needs.
"""

from __future__ import annotations

from typing import Callable, ClassVar, List, Optional

__all__ = ["LabkitError", "one_line_traceback"]


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
