"""``labkit logs parse FILE... [--json] [--format F]``: read testbed logs from the shell.

    labkit logs parse slurm-43717.out BertLarge.out
    labkit logs parse --json cerebras/*.log > runs.jsonl

Prints a short summary per file (format, runs, key metrics with units, notes), or with
``--json`` one JSON object per file (``LogReport.to_dict()``). Exit status: 0; 1 when a file
cannot be opened at all (the others are still read); 2 when a FILE is a folder, FIFO, device or
socket (refused by name before any file is read: a FIFO would keep the command waiting for ever).
An unreadable or empty log is reported, not an error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, List, Sequence

__all__ = ["register", "main"]

#: Metrics shown first in the human summary, when a run has them.
_KEY_METRICS = ("accuracy", "throughput", "global_rate", "compile_estimated_rate", "ttft_median", "e2el_median",
                "output_throughput", "samples_per_s", "train_seconds", "e2e_train_time",
                "training_sequences_per_second", "final_loss", "compile_s", "duration_s", "groq_e2e_ips",
                "cpu_e2e_ips", "groq_onchip_ips", "test_accuracy", "mean_epoch_time", "epoch_time", "training_time_s", "loss")


def register(subparsers: "argparse._SubParsersAction") -> None:
    from labkit.logs import FORMATS

    logs = subparsers.add_parser("logs", help="read testbed logs into run records",
                                 description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    logs_sub = logs.add_subparsers(dest="logs_command", metavar="ACTION")
    logs_sub.required = True
    parse = logs_sub.add_parser("parse", help="read each FILE and print what it holds")
    parse.add_argument("files", nargs="+", metavar="FILE", help="log files (a path per run log)")
    parse.add_argument("--json", action="store_true", help="one JSON object per file instead of a summary")
    parse.add_argument("--format", default=None, metavar="FORMAT",
                       help="skip detection and read as this format: {} (or one an exercise registered from outside "
                            "labkit brings)".format(", ".join(FORMATS)))
    parse.set_defaults(func=main)


def _value(value: Any, unit: str) -> str:
    if isinstance(value, float):
        text = "{:.4g}".format(value) if abs(value) < 1e4 else "{:,.1f}".format(value)
    else:
        text = str(value)
    return text + (" " + unit if unit and not unit.startswith("tokens/s (") else (" tokens/s" if unit else ""))


def _summary(report: Any) -> str:
    """A few readable lines about one :class:`labkit.logs.LogReport`."""
    lines = ["{}: {} format, {} run{}".format(report.path or "<text>", report.format or "unknown",
                                               len(report.runs), "" if len(report.runs) == 1 else "s")]
    for i, run in enumerate(report.runs, 1):
        params = ", ".join("{}={}".format(k, v) for k, v in run.params.items())
        lines.append("  run {}: {} [{}]{}".format(i, run.exercise, run.status, " " + params if params else ""))
        shown = [k for k in _KEY_METRICS if k in run.metrics]
        shown += [k for k in run.metrics if k not in shown][: max(0, 6 - len(shown))]
        for key in shown:
            lines.append("    {} = {}".format(key, _value(run.metrics[key], run.units.get(key, ""))))
        for note in run.notes:
            lines.append("    note: {}".format(note))
    for note in report.notes:
        lines.append("  note: {}".format(note))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from labkit import exercises
    from labkit.logs import read

    known = [f.name for f in exercises.log_formats()]
    if args.format is not None and args.format not in known:
        print("labkit logs parse: --format {!r} is not a log format labkit reads; use one of {}".format(
            args.format, ", ".join(known)), file=sys.stderr)
        return 2
    refused = _special_files(args.files)
    if refused:
        print("labkit logs parse: {}; no file was read".format("; ".join(refused)), file=sys.stderr)
        return 2
    status = 0
    for path in args.files:
        try:
            report = read(path, format=args.format)
        except (OSError, ValueError) as exc:
            print("labkit logs parse: {}".format(exc), file=sys.stderr)
            status = 1
            continue
        print(json.dumps(report.to_dict()) if args.json else _summary(report))
    return status


def _special_files(paths: Sequence[str]) -> List[str]:
    """A sentence for each path that is there but is no regular file (a missing one is reported in its turn)."""
    from labkit.files import NotAFile, regular_file

    refused = []
    for path in paths:
        try:
            regular_file(path, "log")
        except NotAFile as exc:
            refused.append(str(exc))
        except FileNotFoundError:
            pass
    return refused
