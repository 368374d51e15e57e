"""Read real testbed logs into labkit run records, with the usual misreadings pointed out.

    import labkit.logs
    report = labkit.logs.read("slurm-43717.out")      # or the log's text; format detected
    report.runs            # one labkit.results.Run per run found in the file
    report.run             # the last run (error if none)
    report.run_for("sambanova/bert_large")           # the last run of one exercise
    report.notes           # what could not be read, where the real log lives
    labkit.logs.record(report)                     # record in the notebook, beside local runs
    labkit.logs.table([report, other_report])      # pandas DataFrame, one row per run

    labkit logs parse FILE... [--json] [--format graphcore|cerebras|sambanova|groq|keras|openai]

docs/logs.md lists the formats and what is read from each. Each vendor log reader was checked
against real logs from the course (tests/logs), the "openai" one on hand-written pieces
(tests/sambanova/evidence); none could be checked against a vendor SDK or the live service here.
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from labkit import exercises
from labkit.errors import LabkitError
from labkit.logs.base import LineReader
from labkit.logs.text import BinaryLogError, iter_lines, open_source, unwrap
from labkit.results import Run

__all__ = ["read", "LogReport", "NoRunError", "record", "table", "FORMATS", "reader_for"]

#: The formats labkit itself reads (:data:`labkit.exercises.LOG_FORMATS`), in tie-break order; detection
#: also weighs formats that exercises registered from outside labkit bring (``log_formats()``).
FORMATS = tuple(f.name for f in exercises.LOG_FORMATS)

#: Detection looks at this many lines (and characters) of a file's head only, so that reading a huge
#: log stays one streaming pass plus a short look at its head.
_SAMPLE_LINES = 20000
_SAMPLE_CHARS = 1_000_000

# A Keras progress bar: labkit's own generic format, counted beside its plain signs.
_KERAS_BAR = re.compile(r"\d+/\d+ \[[=>.]+\] - ")

#: At most this many "could not read line N" notes per file (a mangled file has thousands).
_MAX_LINE_ERRORS = 5


class NoRunError(LabkitError, LookupError):
    """The log held no run (a pointer file, an empty or unreadable file)."""


@dataclass
class LogReport:
    """What :func:`read` found in one log."""

    path: Optional[str]
    format: Optional[str]
    runs: List[Run] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    pointers: List[str] = field(default_factory=list)  # where the real log lives (SambaNova)

    @property
    def run(self) -> Run:
        """The last run in the file; :class:`NoRunError` (saying why) when there is none."""
        if not self.runs:
            why = " ".join(self.notes) if self.notes else "no run was recognised in it."
            raise NoRunError("{}: no run found ({}). {}".format(self.path or "<text>", self.format or "format unknown", why))
        return self.runs[-1]

    def run_for(self, exercise: str) -> Run:
        """The last run of ``exercise`` ("graphcore/mnist", or just "graphcore"); NoRunError if none."""
        found = [r for r in self.runs if r.exercise == exercise or r.exercise.split("/")[0] == exercise]
        if not found:
            have = ", ".join(sorted({r.exercise for r in self.runs})) or "no runs"
            raise NoRunError("{}: no {} run in this log (it holds {}).".format(self.path or "<text>", exercise, have))
        return found[-1]

    def to_dict(self) -> Dict[str, Any]:
        return {"path": self.path, "format": self.format, "runs": [r.to_dict() for r in self.runs],
                "notes": list(self.notes), "pointers": list(self.pointers)}


def reader_for(fmt: str, name: str = "<text>") -> LineReader:
    """A fresh reader for format ``fmt``: the registry (:mod:`labkit.exercises`) names its class, an
    exercise's ``log.py``, imported now (so that importing this package imports no exercise)."""
    return _log_format(fmt).reader()(name)


def _log_format(fmt: str) -> "exercises.LogFormat":
    """The registry's format ``fmt``; a ValueError naming the formats labkit reads when there is none."""
    try:
        return exercises.log_format(fmt)
    except exercises.UnknownExercise:
        raise ValueError("format: {!r} is not a log format labkit reads; use one of {} or None to detect it".format(
            fmt, ", ".join(f.name for f in exercises.log_formats()))) from None


def read(path_or_text: Union[str, bytes, "os.PathLike[str]"], format: Optional[str] = None,
         follow: bool = True) -> LogReport:
    """Read one log (a path, its text or its bytes) into a :class:`LogReport`.

    ``format`` is one of :data:`FORMATS`, or None to detect it. ``follow``: a Slurm
    ``slurm-<id>.out`` that only says ``Using DIR/BertLarge.out for output`` is followed to
    that file when it can be found next to the Slurm file.

    Never raises on the content of a log (empty, binary, truncated, mangled): what could not
    be read is in ``report.notes``. Raises ``FileNotFoundError`` / ``OSError`` when the file
    cannot be opened, :class:`labkit.files.NotAFile` (a ``ValueError``) for a folder, FIFO, device or
    socket, never opened, and ``ValueError`` for an unknown ``format``.
    """
    if format is not None:
        _log_format(format)  # raises the ValueError that names the allowed formats
    try:
        source = open_source(path_or_text)
    except BinaryLogError as exc:
        path = os.fspath(path_or_text) if isinstance(path_or_text, (str, os.PathLike)) else None
        return LogReport(path, format, notes=["{}: nothing was read.".format(exc)])
    also = None
    with source:
        path = source.path
        if format is None:
            format, also = _detect(unwrap(iter_lines(source.stream)), source.name)
            source.stream.seek(0)
        if format is None:
            empty = not any(line for line in iter_lines(source.stream))
            why = "the file is empty" if empty else \
                "no Graphcore, Cerebras, SambaNova, Groq, Keras or chat-completion output was recognised in it"
            return LogReport(path, None, notes=["Nothing read: {}.".format(why)])
        name = source.name if path is None else path
        runs, notes, pointers = _read_with(reader_for(format, name), source.stream)
        if also is not None:  # a homework Markdown with a vendor's log and pasted chat completions
            source.stream.seek(0)
            other, other_notes, _ = _read_with(reader_for(also, name), source.stream)
            for run in other:
                run.environment.setdefault("log_format", also)
            if other:
                runs, notes = runs + other, notes + other_notes + [
                    "This file also holds {} evidence: {} run(s) of it were read as well.".format(also, len(other))]
    report = LogReport(path, format, runs=runs, notes=notes, pointers=pointers)
    if not report.runs and not report.notes:
        report.notes.append("No run was recognised in this {} log.".format(format))
    if follow and path is not None and report.pointers and not report.runs:
        _follow(report, path)
    for run in report.runs:
        run.notes[:] = list(dict.fromkeys(run.notes))  # without repeats, in their first order
        run.environment.setdefault("log", os.path.basename(path) if path else "<text>")
        run.environment.setdefault("log_format", format)
    return report


def _detect(lines: Iterable[str], name: str) -> Tuple[Optional[str], Optional[str]]:
    """The most likely format, and a second one the same file also holds (chat completions beside a
    vendor's log, or the other way round: formats of another ``family``), else None for either.

    Each format's signs are counted (each at most 20 times) in the head of the file; its name is a
    weak extra hint.
    """
    sample: List[str] = []
    size = 0
    for line in itertools.islice(lines, _SAMPLE_LINES):
        if size > _SAMPLE_CHARS:
            break
        if line:
            sample.append(line)
            size += len(line)
    # One big string and str.count per sign: far faster than testing every sign on every line.
    text = "\n".join(sample)
    formats = exercises.log_formats()
    found: Dict[str, int] = {}
    for fmt in formats:
        found[fmt.name] = sum(min(text.count(sign), 20) * weight for sign, weight in fmt.signs)
        found[fmt.name] += sum(min(len(pattern.findall(text)), 20) * weight for pattern, weight in fmt.line_signs)
        found[fmt.name] += 2 * sum(hint in name.lower() for hint in fmt.name_hints)
    if "] - " in text:
        found["keras"] += min(len(_KERAS_BAR.findall(text)), 20) * 6
    best = max(formats, key=lambda fmt: found[fmt.name])
    if found[best.name] < 4:
        return None, None
    others = [fmt for fmt in formats if fmt.family != best.family]
    if not others:
        return best.name, None
    other = max(others, key=lambda fmt: found[fmt.name])
    return best.name, other.name if found[other.name] >= other.companion_min else None


def _read_with(reader: LineReader, stream: Any) -> Tuple[List[Run], List[str], List[str]]:
    """The runs, notes and pointers ``reader`` finds in ``stream``; a reader's bug costs a note, never the file."""
    errors = 0
    notes: List[str] = []
    for number, line in enumerate(unwrap(iter_lines(stream)), 1):
        try:
            reader.feed(line)
        except Exception as exc:  # a reader bug must not lose the rest of the file
            errors += 1
            if errors <= _MAX_LINE_ERRORS:
                notes.append("Line {} could not be read ({}: {}).".format(number, type(exc).__name__, exc))
    try:
        runs = reader.finish()
    except Exception as exc:  # pragma: no cover - defensive, like above
        runs = list(reader.runs)
        notes.append("The end of the log could not be read ({}: {}).".format(type(exc).__name__, exc))
    if errors > _MAX_LINE_ERRORS:
        notes.append("{} more lines could not be read.".format(errors - _MAX_LINE_ERRORS))
    return list(runs), reader.notes + notes, list(reader.pointers)


def _follow(report: LogReport, slurm_path: str) -> None:
    """Read the training log a ``slurm-<id>.out`` points to, when a copy can be found here."""
    here = os.path.dirname(os.path.abspath(slurm_path))
    candidates: List[str] = []
    for pointer in report.pointers:  # as written, then its folder and its name beside the Slurm file
        parts = pointer.replace("\\", "/").split("/")
        candidates += [pointer, os.path.join(here, *parts[-2:]), os.path.join(here, parts[-1])]
    found = [c for c in candidates if os.path.isfile(c) and os.path.abspath(c) != os.path.abspath(slurm_path)]
    if found:
        followed = read(found[0], follow=False)
        for run in followed.runs:
            run.notes.insert(0, "Read from {}, the job's output file named in {} (the Slurm file holds "
                                "only that pointer).".format(found[0], os.path.basename(slurm_path)))
        report.runs.extend(followed.runs)
        report.notes.append("Followed the pointer to {}.".format(found[0]))


def _runs_of(items: Any) -> List[Run]:
    if isinstance(items, LogReport):
        return list(items.runs)
    if isinstance(items, Run):
        return [items]
    runs: List[Run] = []
    for item in items:
        runs.extend(_runs_of(item))
    return runs


def record(report: Union[LogReport, Run, Iterable[Any]], name: str = "log_run") -> List[str]:
    """Record every run of ``report`` in the executing notebook with :func:`labkit.results.record`.

    Names are ``name`` for a single run, ``name_1``, ``name_2``... for several, so that
    ``labkit.results.collect`` tabulates them beside runs made locally. Returns the names.
    """
    from labkit import results

    runs = _runs_of(report)
    names = [name] if len(runs) == 1 else ["{}_{}".format(name, i) for i in range(1, len(runs) + 1)]
    for run, run_name in zip(runs, names):
        results.record(run, name=run_name)
    return names


def table(runs: Union[LogReport, Run, Iterable[Any]]):
    """A pandas DataFrame, one row per run: exercise, source, status, params, metrics, log file."""
    import pandas as pd

    return pd.DataFrame([{"log": run.environment.get("log"), **run.flat()} for run in _runs_of(runs)])
