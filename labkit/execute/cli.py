"""``labkit run NOTEBOOK OUTPUT``: run one notebook with checked parameters.

    labkit run notebooks/graphcore/mnist.ipynb runs/mnist.ipynb -p epochs 2 -p learning_rate 1
    labkit run NOTEBOOK OUTPUT -y 'epochs: 2' --timeout 600      # YAML text (or -f FILE)

Parameters (a YAML file, then YAML text, then -p pairs; later wins) are checked before a kernel
starts (labkit.execute): against the labkit Spec the notebook's metadata names (types, ranges,
choices, cross-checks), or else against its parameters cell (names and the types of their
literal defaults). Exit status: 0 when the notebook ran to the end, 1 when it failed (the
output notebook is written either way, with the error in it), 2 when the parameters were refused,
130 when interrupted.

Ctrl-C is Kernel -> Interrupt: the run in progress ends early with what it has (status
interrupted), the cells that show and record it still run, and the executed notebook is written.
A second Ctrl-C stops at once (the notebook is written up to there).
"""

from __future__ import annotations

import argparse
import sys

from labkit.execute import ERROR, INTERRUPTED, gather_parameters, notebook_parameters, run_notebook
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
    p.add_argument("--timeout", type=float, metavar="S", help="limit for each cell, in seconds")
    p.add_argument("--cwd", metavar="DIR", help="kernel working directory (default: the notebook's folder)")
    p.add_argument("--kernel", metavar="NAME", help="kernel name (default: the notebook's)")
    p.add_argument("--show-output", action="store_true",
                   help="print what the cells print (progress bars too) while they run")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        # a release of nbclient or jupyter_client that labkit cannot drive: said before a kernel starts
        from labkit.execute.upstream import check

        check()
        declared = notebook_parameters(args.notebook)
        values = gather_parameters(declared, args.parameter, args.yaml, args.parameters_file)
    except (ParameterError, FileNotFoundError, ValueError, ImportError) as exc:
        print("labkit run: {}".format(exc), file=sys.stderr)
        return 2
    outcome = run_notebook(args.notebook, args.output, values, timeout=args.timeout, cwd=args.cwd,
                           kernel_name=args.kernel, check=False, ctrl_c=True, show_output=args.show_output)
    if outcome.status == INTERRUPTED:
        print("labkit run: {} interrupted after {:.1f} s: {}. The executed notebook is {}".format(
            args.notebook, outcome.duration, outcome.error, args.output), file=sys.stderr)
        return 130
    if outcome.ok:
        print("labkit run: {} complete in {:.1f} s -> {}".format(args.notebook, outcome.duration, args.output))
        return 0
    print("labkit run: {} {} after {:.1f} s: {}\nThe executed notebook, with the error, is {}".format(
        args.notebook, "failed" if outcome.status == ERROR else "stopped: " + outcome.status,
        outcome.duration, outcome.error, args.output), file=sys.stderr)
    return 1
