"""``labkit results PATH...``: print what executed notebooks recorded.

    labkit results runs/mnist.ipynb      # one JSON line per notebook
    labkit results runs/NAME             # a sweep folder: its summary (summary.md) again
"""

from __future__ import annotations

import argparse
import os

from labkit import results


def main(paths) -> int:
    status = 0
    plain = []
    for path in paths:
        if os.path.isfile(os.path.join(path, "sweep.json")):
            from labkit import sweep_report

            print(sweep_report.main(path))
        else:
            plain.append(path)
    if plain:
        status = results.main(plain)
    return status


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("results", help="print the records of executed notebooks, or a sweep's summary")
    p.add_argument("paths", nargs="+", metavar="PATH", help="executed notebooks, folders of them, or sweep folders")
    p.set_defaults(func=lambda args: main(args.paths))
