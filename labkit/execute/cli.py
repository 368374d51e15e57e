"""``labkit run NOTEBOOK OUTPUT``: run one notebook with checked parameters.

    labkit run notebooks/graphcore/mnist.ipynb runs/mnist.ipynb -p epochs 2 -p learning_rate 1
    labkit run NOTEBOOK OUTPUT -y 'epochs: 2' --timeout 600      # YAML text (or -f FILE)

Parameters (a YAML file, then YAML text, then -p pairs; later wins) are checked before a kernel
starts (labkit.execute): against the labkit Spec the notebook's metadata names (types, ranges,
choices, cross-checks), or else against its parameters cell (names and the types of their
literal defaults). Exit status: 0 when the notebook ran to the end, 1 when it failed (the
output notebook is written either way, with the error in it), 2 when the parameters, the files or
the timeout were refused before anything ran, 130 when interrupted.

OUTPUT is written whole or not at all: the run writes a temporary file beside it and renames it over
OUTPUT at the end, so a disk that fills keeps the OUTPUT of an earlier run as it was. One `labkit run`
writes an OUTPUT at a time; OUTPUT may not be NOTEBOOK itself.

Ctrl-C is Kernel -> Interrupt: the run in progress ends early with what it has (status
interrupted), the cells that show and record it still run, and the executed notebook is written.
A second Ctrl-C stops at once (the notebook is written up to there). A Ctrl-C while the command is
still loading, before it starts the kernel, ends it there with nothing written.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Optional

from labkit.execute import (ERROR, INTERRUPTED, Outcome, check_output, check_timeout, gather_parameters,
                            notebook_parameters, run_notebook)
from labkit.files import Busy, exclusive
from labkit.params import ParameterError

__all__ = ["register", "main"]


def register(subparsers: "argparse._SubParsersAction") -> None:
    p = subparsers.add_parser("run", help="run one notebook with checked parameters",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebook", metavar="NOTEBOOK")
    p.add_argument("output", metavar="OUTPUT", help="where the executed notebook is written")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                   help="a parameter; the text is converted to the declared type")
    p.add_argument("-y", "--yaml", metavar="YAML", help="parameters as YAML text, e.g. 'epochs: 2'")
    p.add_argument("-f", "--parameters-file", metavar="FILE", help="parameters from a YAML file")
    p.add_argument("--timeout", type=float, metavar="S", help="limit for each cell, in seconds (above 0)")
    p.add_argument("--cwd", metavar="DIR", help="kernel working directory (default: the notebook's folder)")
    p.add_argument("--kernel", metavar="NAME", help="kernel name (default: the notebook's)")
    p.add_argument("--show-output", action="store_true",
                   help="print what the cells print (progress bars too) while they run")
    p.set_defaults(func=main)


def _refused(text: object) -> int:
    print("labkit run: {}".format(text), file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    existed = os.path.exists(args.output)
    outcome: Optional[Outcome] = None
    try:
        try:
            # a release of nbclient or jupyter_client that labkit cannot drive: said before a kernel starts
            from labkit.execute.upstream import check

            check()
            check_timeout(args.timeout, "--timeout")
            declared = notebook_parameters(args.notebook)
            values = gather_parameters(declared, args.parameter, args.yaml, args.parameters_file)
            target = check_output(args.notebook, args.output)
        except (ParameterError, FileNotFoundError, ValueError, ImportError) as exc:
            return _refused(exc)
        try:
            with exclusive(target, "labkit run"):
                existed = os.path.exists(args.output)
                outcome = run_notebook(args.notebook, args.output, values, timeout=args.timeout, cwd=args.cwd,
                                       kernel_name=args.kernel, check=False, ctrl_c=True,
                                       show_output=args.show_output)
        except (Busy, ValueError) as exc:
            return _refused(exc)
        except OSError as exc:  # run_notebook raises only before its kernel starts
            return _refused("OUTPUT {}: cannot be written in {} ({})".format(
                args.output, os.path.dirname(os.path.realpath(args.output)), exc.strerror or exc))
    except KeyboardInterrupt:
        if outcome is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut this line short
            print("labkit run: {} interrupted before its kernel started: nothing ran, and {}".format(
                args.notebook, _kept(args.output, existed)), file=sys.stderr)
            return 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the outcome is kept: what is left is saying so
    return _report(args, outcome, existed)


def _kept(output: str, existed: bool) -> str:
    """What is at OUTPUT when this run wrote nothing there."""
    return "{} is as it was before this run".format(output) if existed else "nothing was written at {}".format(output)


def _report(args: argparse.Namespace, outcome: Outcome, existed: bool) -> int:
    unwritten = "the executed notebook could not be written ({}): {}".format(
        outcome.write_error, _kept(args.output, existed)) if outcome.write_error else ""
    if outcome.status == INTERRUPTED:
        print("labkit run: {} interrupted after {:.1f} s: {}. {}".format(
            args.notebook, outcome.duration, outcome.error,
            _sentence(unwritten) if unwritten else "The executed notebook is " + args.output), file=sys.stderr)
        return 130
    if outcome.ok and not unwritten:
        print("labkit run: {} complete in {:.1f} s -> {}".format(args.notebook, outcome.duration, args.output))
        return 0
    if outcome.ok:
        print("labkit run: {} ran to the end in {:.1f} s, but {}".format(args.notebook, outcome.duration, unwritten),
              file=sys.stderr)
    elif unwritten and outcome.write_error in outcome.error:  # writing it was what failed the run
        print("labkit run: {} stopped after {:.1f} s: {}".format(args.notebook, outcome.duration, unwritten),
              file=sys.stderr)
    else:
        print("labkit run: {} {} after {:.1f} s: {}\n{}".format(
            args.notebook, "failed" if outcome.status == ERROR else "stopped: " + outcome.status,
            outcome.duration, outcome.error,
            _sentence(unwritten) if unwritten else "The executed notebook, with the error, is " + args.output),
            file=sys.stderr)
    return 1


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]
