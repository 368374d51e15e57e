"""``labkit results PATH...``: print what executed notebooks recorded, or a sweep's summary.

    labkit results runs/mnist.ipynb               # one JSON line per notebook (its records)
    labkit results runs/ --lines "test accuracy"  # the printed lines that contain TEXT instead
    labkit results runs/NAME                      # a sweep folder: its summary (summary.md) again

A folder is searched for notebooks recursively. Exit status: 0 when every notebook was read,
1 when one could not be (the others are still printed: a FIFO or a cut-short file in a folder is
named and skipped), 2 when a PATH is neither a folder nor a regular file (missing, a FIFO, a
device): then nothing is read, as a FIFO would block the first read for ever.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from labkit import results, sweep
from labkit.files import NotAFile, regular_file
from labkit.sweep import report as sweep_report
from labkit.sweep import tables as sweep_tables

__all__ = ["register", "main"]


def register(subparsers: "argparse._SubParsersAction") -> None:
    p = subparsers.add_parser("results", help="print the records of executed notebooks, or a sweep's summary",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH", help="executed notebooks, folders of them, or sweep folders")
    p.add_argument("--lines", metavar="TEXT", help="print the output lines that contain TEXT instead")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    refused = []
    for path in args.paths:
        if not os.path.isdir(path):
            try:
                regular_file(path, "PATH")
            except (FileNotFoundError, NotAFile) as exc:
                refused.append(exc)
    for exc in refused:
        print("labkit results: {}; give executed notebooks, folders of them or sweep folders".format(exc),
              file=sys.stderr)
    if refused:
        return 2
    status = 0
    notebooks = []
    for path in args.paths:
        if sweep.is_sweep(path):
            try:
                print(sweep_report.main(path))
                problems = sweep_tables.read_rows(path)[1]
            except sweep.SweepError as exc:
                problems = [str(exc)]
            for problem in problems:
                print("labkit results: {}".format(problem), file=sys.stderr)
                status = 1
        else:
            notebooks.extend(results.notebook_paths(path))
    for path in notebooks:
        try:
            if args.lines is not None:
                for line in results.output_lines(path, args.lines):
                    print("{}: {}".format(path, line))
            else:
                print(json.dumps(results.read(path).to_dict()))
        except (OSError, ValueError) as exc:
            print("labkit results: {}".format(exc), file=sys.stderr)
            status = 1
    return status
