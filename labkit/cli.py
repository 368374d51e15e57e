"""The ``labkit`` command.

    labkit results PATH...                     records of executed notebooks, as JSON lines
    labkit logs parse FILE... [--json]         read testbed logs
    labkit run NOTEBOOK OUTPUT -p NAME VALUE   run one notebook with checked parameters
    labkit sweep NOTEBOOK -p NAME V1,V2 ...    grids x repeats
    labkit grade SUBMISSIONS --rubric FILE     batch-grade homework
    labkit class DIR [--csv FILE]              the class page of a graded folder, and its long table

Each subcommand has one CLI module, listed in ``COMMANDS``: ``cli.py`` in the package that does
its work (``labkit/execute/cli.py`` for ``labkit run``, ``labkit/results/cli.py``,
``labkit/logs/cli.py``, ``labkit/sweep/cli.py``, ``labkit/grading/cli.py``,
``labkit/grading/reports/cli.py`` for ``labkit class``). Every one
has the same shape: a docstring with its usage and exit status, ``__all__ = ["register",
"main"]``, ``register(subparsers)`` adding its parser (``help`` for this list, its docstring as
the description) with ``func=main``, and ``main(args) -> int`` printing errors as
``labkit COMMAND: ...`` on stderr. Exit status: 0 done; 1 it ran, but something it ran or read
failed; 2 refused or stopped on an error before the work (arguments, parameters, rubric);
130 interrupted.
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
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
