"""``labkit results PATH...``: print what executed notebooks recorded."""

from __future__ import annotations

import argparse

from labkit import results


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("results", help="print the records of executed notebooks as JSON lines")
    p.add_argument("paths", nargs="+", metavar="PATH", help="executed notebooks or folders of them")
    p.add_argument("--lines", metavar="TEXT", help="print the output lines that contain TEXT instead")
    p.set_defaults(func=lambda args: results.main(args.paths, lines=args.lines))
