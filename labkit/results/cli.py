"""``labkit results PATH...``: print what executed notebooks recorded, or a sweep's summary.

    labkit results runs/mnist.ipynb               # one JSON line per notebook (its records)
    labkit results runs/ --lines "test accuracy"  # the printed lines that contain TEXT instead
    labkit results runs/NAME                      # a sweep folder: its summary (summary.md) again

A folder is searched for notebooks recursively. Exit status: 0 when every notebook was read,
1 when one could not be (the others are still printed).
"""

from __future__ import annotations

import argparse
import json
import sys

from labkit import results, sweep
from labkit.sweep import report as sweep_report

__all__ = ["register", "main"]


def register(subparsers: "argparse._SubParsersAction") -> None:
    p = subparsers.add_parser("results", help="print the records of executed notebooks, or a sweep's summary",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH", help="executed notebooks, folders of them, or sweep folders")
    p.add_argument("--lines", metavar="TEXT", help="print the output lines that contain TEXT instead")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    status = 0
    notebooks = []
    for path in args.paths:
        if sweep.is_sweep(path):
            print(sweep_report.main(path))
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
