"""``labkit results PATH...``: print what executed notebooks recorded.

    labkit results runs/mnist.ipynb      # one JSON line per notebook
    labkit results runs/NAME             # a sweep folder: its summary (summary.md) again
"""

from __future__ import annotations

import argparse

from labkit import results, sweep
from labkit.sweep import report as sweep_report


def main(paths, lines=None) -> int:
    status = 0
    plain = []
    for path in paths:
        if sweep.is_sweep(path):
            print(sweep_report.main(path))
        else:
            plain.append(path)
    if plain:
        status = results.main(plain, lines=lines)
    return status


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("results", help="print the records of executed notebooks, or a sweep's summary")
    p.add_argument("paths", nargs="+", metavar="PATH", help="executed notebooks, folders of them, or sweep folders")
    p.add_argument("--lines", metavar="TEXT", help="print the output lines that contain TEXT instead")
    p.set_defaults(func=lambda args: main(args.paths, lines=args.lines))
