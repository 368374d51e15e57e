"""The ``labkit`` command.

    labkit results PATH...                     records of executed notebooks, as JSON lines
    labkit logs parse FILE... [--json]         read testbed logs
    labkit run NOTEBOOK OUTPUT -p NAME VALUE   run one notebook with checked parameters
    labkit sweep NOTEBOOK -p NAME V1,V2 ...    grids x repeats
    labkit grade SUBMISSIONS --rubric FILE     batch-grade homework
    labkit class DIR [--csv FILE]              the class page of a graded folder, and its long table

Each subcommand is one ``cli.py`` in the package that does its work, listed in ``COMMANDS``; the
shape every one has (``register``, ``main``, the exit statuses) is in docs/architecture.md.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import List, Optional

__all__ = ["COMMANDS", "build_parser", "main"]

# subcommand -> module with register(subparsers); imported lazily so `labkit results` does
# not pay for torch.
COMMANDS = {
    "results": "labkit.results.cli",
    "logs": "labkit.logs.cli",
    "run": "labkit.execute.cli",
    "sweep": "labkit.sweep.cli",
    "grade": "labkit.grading.cli",
    "class": "labkit.grading.reports.cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="labkit", description="A lab book for the ALCF AI-testbeds module.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            if exc.name is not None and module_name.startswith(exc.name):
                continue  # this subcommand is not part of this install
            raise
        module.register(sub)
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    try:  # the commands' modules load here, a second or more: a Ctrl-C then is one line, not a traceback
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        words = sys.argv[1:] if argv is None else argv
        command = " " + words[0] if words and words[0] in COMMANDS else ""
        print("labkit{}: interrupted before it started; nothing was done".format(command), file=sys.stderr)
        return 130
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
