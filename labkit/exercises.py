"""The registry of exercises: every fact about an exercise that code outside it needs, in one place.

An entry names its modules as text and imports them only when asked: this module and
:mod:`labkit.logs` sit below the exercises and import none of them, so reading a log never
imports an exercise that imports ``labkit.logs`` back. An exercise is one package under
``labkit/testbeds/`` and one :class:`Entry` in :data:`ENTRIES`; one kept outside labkit registers
its entry through the ``labkit.exercises`` entry-point group (``acme = "acme:ENTRY"``). Record
names (``Entry.name``) never change: executed notebooks, sweeps and gradebooks name runs by them.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Pattern, Protocol, Tuple, Union

from labkit.errors import LabkitError

__all__ = ["Entry", "Exercise", "LogFormat", "ENTRIES", "LOG_FORMATS", "entries", "entry", "find", "for_notebook",
           "metric_table", "metric_tables", "metrics_markdown", "hardware", "log_format", "log_formats", "offerings", "UnknownExercise"]

ENTRY_POINT_GROUP = "labkit.exercises"


class Exercise(Protocol):
    """What an exercise module gives its notebook's five steps (spec, plan, run, show, record)."""

    SPEC: Any       # labkit.params.Spec
    METRICS: Any    # labkit.metrics.MetricTable

    def plan(self, config: Any) -> Any: ...                            # a labkit.plans.RunPlan

    def run_exercise(self, config: Any, plan: Any = None) -> Any: ...  # a labkit.results.Run

    def show(self, run: Any) -> Optional[List[Any]]: ...


def _load(reference: str) -> Any:
    """``"package.module:attribute"`` (or a bare module) imported now."""
    module, _, attribute = reference.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded


@dataclass(frozen=True)
class LogFormat:
    """A testbed's log format: how :mod:`labkit.logs` recognises it and which class reads it.

    ``signs``: (substring, weight) counted in a log's first lines; ``line_signs``: (regex, weight)
    for single summary lines a student pastes alone; ``name_hints``: lower-case parts of a file name
    that point to it. A file may hold formats of two ``family``s (a homework Markdown with a
    vendor's log and pasted chat completions): the best format of the other family is read too
    when it scores at least its ``companion_min``.
    """

    name: str
    reader_class: str  # "module:Class", a labkit.logs.base.LineReader
    signs: Tuple[Tuple[str, int], ...]
    line_signs: Tuple[Tuple[Pattern[str], int], ...] = ()
    name_hints: Tuple[str, ...] = ()
    companion_min: int = 12
    family: str = "log"

    def reader(self) -> Any:
        return _load(self.reader_class)


#: Every log format labkit reads, in the order detection breaks ties.
LOG_FORMATS: Tuple[LogFormat, ...] = (
    LogFormat("graphcore", "labkit.testbeds.graphcore.log:GraphcoreReader",
              (("poptorch", 3), ("Graph compilation:", 3), ("Accuracy on test set", 5), ("Epochs:", 2),
               ("PL:POPLIN", 3), ("--ipus", 3), ("Compiled/Loaded model", 5), ("run_pretraining", 5),
               ("TrainingModelWithLoss", 3), ("popart", 2)),
              ((re.compile(r"Epochs:\s*\d+%.*?\d+/\d+ \["), 4),), ("graphcore", "poptorch", "mnist")),
    LogFormat("cerebras", "labkit.testbeds.cerebras.log:CerebrasReader",
              (("| Train Device=", 6), ("Effective batch size is", 5), ("wsjob", 4), ("Compile hash is", 5),
               ("run.py CSX", 6), ("Processed ", 1), ("Cerebras", 3), ("Beginning appliance run", 5),
               ("cszoo", 6), ("LoopTimeRemaining=", 6)),
              ((re.compile(r"Processed \d+ (?:training )?sample\(s\) in"), 6),),  # 2.6 adds "training"
              ("cerebras",)),
    LogFormat("sambanova", "labkit.testbeds.sambanova.bert_large.log:SambaNovaReader",
              (("COMPILE START AT", 6), ("COMPILE END AT", 6), ("sambaflow", 2), ("e2e_train_time", 6),
               ("for output", 2), ("BertLarge", 3), ("SLURM_NTASKS", 3), ("Duration:", 2), (".pef", 3),
               ("transformers_hook", 4), ("Submitted batch job", 2), ("SN30", 3)),
              (), ("sambanova", "bertlarge", "slurm-")),
    LogFormat("groq", "labkit.testbeds.groq.log:GroqReader",
              (("groqflow", 4), ("end-to-end IPS", 8), ("GroqChip", 5), ("on-chip latency", 8),
               ("Woohoo!", 3), ("Proof point", 3)),
              ((re.compile(r"^\|\s*(?:cpu|groq)\s*\|", re.MULTILINE), 8),), ("groq",)),
    # Keras progress lines: any exercise's (the course's TensorFlow examples); no exercise owns it
    LogFormat("keras", "labkit.logs.keras:KerasReader",
              (("ms/step", 4), ("s/step", 2), ("Epoch 1/", 3), ("training time", 2), ("val_loss", 2),
               ("tensorflow", 1)),
              (), ("keras",)),
    # pasted OpenAI-compatible chat completions (Metis, Sophia): JSON, a curl transcript, an SSE stream
    LogFormat("openai", "labkit.testbeds.sambanova.inference.evidence:InferenceReader",
              (('"chat.completion', 6), ('"completion_tokens"', 3), ("data: [DONE]", 6),
               ('"time_to_first_token"', 4), ("/chat/completions", 3)),
              (), (), companion_min=9, family="chat"),
)


class UnknownExercise(LabkitError, LookupError):
    """A name, notebook or log format that no registry entry has."""


@dataclass(frozen=True)
class Entry:
    """One exercise: its record name and where everything about it lives.

    ``module``: the exercise module a notebook imports (an :class:`Exercise`), None for runs that
    exist only in testbed logs (Graphcore's BERT tutorial). ``metrics``: ``"module:TABLE"``, its
    :class:`labkit.metrics.MetricTable`. ``hardware``: what a run made on (or read from) the testbed
    ran on, in the words tables and gradebooks use. ``notebook``: relative to the repository.
    ``log_format``: the name of the format its testbed logs are in (one of :data:`LOG_FORMATS`), or,
    for an exercise registered from outside labkit with a format of its own, that :class:`LogFormat`.
    """

    name: str
    module: Optional[str]
    metrics: str
    hardware: str
    offering: int
    notebook: Optional[str] = None
    log_format: Union[str, LogFormat, None] = None
    title: str = ""

    @property
    def testbed(self) -> str:
        return self.name.split("/")[0]

    def load(self) -> Exercise:
        """The exercise module, imported now."""
        if self.module is None:
            raise UnknownExercise("{} is read from testbed logs only; it has no notebook or run step".format(self.name))
        return _load(self.module)

    def metric_table(self) -> Any:
        return _load(self.metrics)

    def log_reader(self) -> Optional[Any]:
        """The class that reads this exercise's testbed logs, or None."""
        if isinstance(self.log_format, LogFormat):
            return self.log_format.reader()
        return log_format(self.log_format).reader() if self.log_format else None


#: labkit's own exercises, the 2024 offering first (record names never change).
ENTRIES: Tuple[Entry, ...] = (
    Entry("graphcore/mnist", "labkit.testbeds.graphcore", "labkit.testbeds.graphcore.metrics:METRICS", "IPU", 2024,
          "notebooks/graphcore/mnist.ipynb", "graphcore", "MNIST CNN with PopTorch on Graphcore IPUs"),
    Entry("graphcore/bert", None, "labkit.testbeds.graphcore.metrics:BERT_METRICS", "IPU", 2024, None, "graphcore",
          "BERT with PopART on Graphcore IPUs (read from logs)"),
    Entry("cerebras/bert_large", "labkit.testbeds.cerebras.bert_large",
          "labkit.testbeds.cerebras.bert_large.metrics:METRICS", "CS-2", 2024, "notebooks/cerebras/bert_large.ipynb",
          "cerebras", "BERT-Large pre-training on a Cerebras CS-2"),
    Entry("sambanova/bert_large", "labkit.testbeds.sambanova.bert_large",
          "labkit.testbeds.sambanova.bert_large.metrics:METRICS", "SN30", 2024,
          "notebooks/sambanova/bert_large.ipynb", "sambanova", "BERT-Large under Slurm on SambaNova SN30"),
    Entry("groq/bert_tiny", "labkit.testbeds.groq", "labkit.testbeds.groq.metrics:METRICS", "GroqChip", 2024,
          "notebooks/groq/bert_tiny.ipynb", "groq", "BERT-tiny with GroqFlow on a GroqChip"),
    Entry("comparison/ipu_vs_gpu", "labkit.testbeds.comparison", "labkit.testbeds.comparison.metrics:METRICS", "IPU",
          2024, "notebooks/comparison/ipu_vs_gpu.ipynb", None, "Scaling study: IPUs against GPUs"),
    Entry("homework/ai_testbeds", "labkit.testbeds.homework.fall2024", "labkit.testbeds.homework.fall2024:METRICS",
          "", 2024, "notebooks/homework/ai_testbeds.ipynb", None, "The 2024 homework"),
    Entry("cerebras/llama2_7b", "labkit.testbeds.cerebras.llama2_7b",
          "labkit.testbeds.cerebras.llama2_7b.metrics:METRICS", "CS-3", 2025, "notebooks/cerebras/llama2_7b.ipynb",
          "cerebras", "LLaMA-2-7B training with cszoo fit on a Cerebras CS-3"),
    Entry("sambanova/inference", "labkit.testbeds.sambanova.inference",
          "labkit.testbeds.sambanova.inference.metrics:METRICS", "Metis/Sophia", 2025,
          "notebooks/sambanova/inference.ipynb", "openai", "LLM inference: SambaNova Metis against vLLM on Sophia"),
    Entry("homework/ai_testbeds_2025", "labkit.testbeds.homework.fall2025",
          "labkit.testbeds.homework.fall2025:METRICS", "", 2025, "notebooks/homework/ai_testbeds_2025.ipynb", None,
          "The 2025 homework"),
)

_plugins: Optional[Tuple[Entry, ...]] = None


def _entry_points() -> Tuple[Entry, ...]:
    """Entries other packages register under the ``labkit.exercises`` entry-point group (read once)."""
    global _plugins
    if _plugins is None:
        from importlib import metadata

        found = metadata.entry_points()
        points = found.select(group=ENTRY_POINT_GROUP) if hasattr(found, "select") else found.get(ENTRY_POINT_GROUP, ())
        loaded = []
        for point in points:
            value = point.load()
            if not isinstance(value, Entry):
                raise TypeError("entry point {} = {}: is a {}, not a labkit.exercises.Entry".format(
                    point.name, point.value, type(value).__name__))
            loaded.append(value)
        _plugins = tuple(loaded)
    return _plugins


def entries() -> Tuple[Entry, ...]:
    """labkit's entries, then those registered through entry points."""
    return ENTRIES + _entry_points()


def find(name: str) -> Optional[Entry]:
    """The entry of record name ``name``, or None (labkit's own first: no entry-point scan for them)."""
    own = next((e for e in ENTRIES if e.name == name), None)
    return own if own is not None else next((e for e in _entry_points() if e.name == name), None)


def entry(name: str) -> Entry:
    """The entry of record name ``name``; :class:`UnknownExercise` names the known ones."""
    found = find(name)
    if found is None:
        raise UnknownExercise("exercise: {!r} is not registered; the exercises are {}".format(
            name, ", ".join(e.name for e in entries())))
    return found


def for_notebook(path: str) -> Entry:
    """The entry whose notebook is ``path`` (relative to the repository, or ending in it)."""
    normal = str(path).replace("\\", "/")
    for candidate in entries():
        if candidate.notebook and (normal == candidate.notebook or normal.endswith("/" + candidate.notebook)):
            return candidate
    raise UnknownExercise("notebook: {} is no exercise's notebook; the notebooks are {}".format(
        path, ", ".join(e.notebook for e in entries() if e.notebook)))


def metric_tables() -> List[Any]:
    """Every entry's table once (by identity), in the order of the entries."""
    tables = (candidate.metric_table() for candidate in entries())
    return list({id(table): table for table in tables}.values())


def metric_table(name: str) -> Optional[Any]:
    """The metric table of exercise ``name``, or None for an exercise labkit does not know."""
    found = find(name)
    if found is not None:
        return found.metric_table()
    return next((t for t in metric_tables() if name in t.exercises), None)


def metrics_markdown() -> str:
    """docs/metrics.md: every table, under the exercises it serves."""
    parts = ["# Metrics of each exercise", "",
             "Written by `labkit.exercises.metrics_markdown()` from the tables the registry names "
             "(`labkit/testbeds/<exercise>/metrics.py`); tests/test_metric_tables.py checks that this page is current. "
             "*Primary*: what a sweep's summary leads with. *Timing*: a time or a speed, which depends on the machine "
             "and its load; sweeps give it per worker share.", ""]
    for table in metric_tables():
        parts += ["## " + table.title, "", table.markdown(), ""]
    return "\n".join(parts)


def hardware(name: str) -> str:
    """What a testbed run of ``name`` ran on ("CS-3"); an unknown exercise of a known testbed gets
    that testbed's first label, an unknown testbed its own name."""
    found = find(name)
    if found is not None and found.hardware:
        return found.hardware
    testbed = name.split("/")[0]
    return next((e.hardware for e in entries() if e.testbed == testbed and e.hardware), testbed)


def log_formats() -> Tuple[LogFormat, ...]:
    """labkit's formats, then those that entry-point exercises bring (in tie-break order)."""
    extra = [e.log_format for e in _entry_points() if isinstance(e.log_format, LogFormat)]
    return LOG_FORMATS + tuple(f for f in extra if all(f.name != known.name for known in LOG_FORMATS))


def log_format(name: str) -> LogFormat:
    """The log format called ``name``; :class:`UnknownExercise` names the formats labkit reads."""
    found = log_formats()
    known = next((f for f in found if f.name == name), None)
    if known is not None:
        return known
    raise UnknownExercise("format: {!r} is not a log format labkit reads; use one of {}".format(
        name, ", ".join(f.name for f in found)))


def offerings() -> Dict[int, List[str]]:
    """Each offering's notebooks, the current offering first (docs/book/offerings.yml is checked against it)."""
    years: Dict[int, List[str]] = {}
    for candidate in sorted(entries(), key=lambda e: -e.offering):
        if candidate.notebook:
            years.setdefault(candidate.offering, []).append(candidate.notebook)
    return years

