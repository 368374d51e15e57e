"""``labkit sweep``: a notebook over a grid of parameters, each configuration repeated.

    labkit sweep NOTEBOOK -p epochs 4,10,14 -p learning_rate 0.01,0.03 --repeats 3 --out runs/NAME
        [--workers N] [--executor local|parsl --config FILE] [--timeout S] [--retry-failed]

Runs NOTEBOOK for every combination of the -p values, --repeats times each (seeds: the
notebook's default seed, +1, +2, ...). Resumable: run it again with the same arguments to
finish an interrupted sweep. Exit status: 0 when every run is complete, 1 when some are not
(or the disk refused the tables: the runs are kept), 2 when the sweep was refused (arguments,
parameters, an --out of another sweep or that cannot be written, another sweep writing it),
130 when interrupted (finished runs are kept).

See labkit/sweep/ for what is run and docs/sweeps.md for the whole story.
"""

from __future__ import annotations

import argparse
import sys

from labkit.files import Busy
from labkit.params import ParameterError

__all__ = ["register", "main"]


def register(subparsers: "argparse._SubParsersAction") -> None:
    p = subparsers.add_parser("sweep", help="run a notebook over a grid x repeats; tables, noise, plots",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("notebook", metavar="NOTEBOOK")
    p.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "V1,V2"),
                   help="a parameter and its comma-separated values")
    p.add_argument("--repeats", type=int, default=1, metavar="R", help="runs per configuration (default 1)")
    p.add_argument("--out", required=True, metavar="DIR", help="sweep folder, e.g. runs/mnist-lr")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="runs at once (default: 1, or one per GPU when there are GPUs)")
    p.add_argument("--executor", choices=("local", "parsl"), default="local")
    p.add_argument("--config", metavar="FILE", help="Parsl config file defining `config` (with --executor parsl)")
    p.add_argument("--timeout", type=float, metavar="S", help="limit for each cell of each run, in seconds")
    p.add_argument("--retry-failed", action="store_true", help="run again the runs that failed last time")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from labkit import sweep
    from labkit.sweep import report
    from labkit.sweep.dispatch import MAX_WORKERS, visible_gpus

    try:
        plan = sweep.plan(args.notebook, [tuple(pair) for pair in args.parameter], args.repeats, args.timeout)
        workers = args.workers if args.workers is not None else min(MAX_WORKERS, max(1, len(visible_gpus())))
        summary = sweep.run_sweep(plan, args.out, workers=workers, executor=args.executor,
                                  parsl_config=args.config, retry_failed=args.retry_failed)
    except report.ReportNotWritten as exc:
        print("labkit sweep: {}".format(exc), file=sys.stderr)
        return 1
    except (sweep.SweepError, ParameterError, FileNotFoundError, ImportError, Busy) as exc:
        print("labkit sweep: {}".format(exc), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("labkit sweep: interrupted; finished runs are kept in {}. Run the same command again to "
              "finish the sweep.".format(args.out), file=sys.stderr)
        return 130
    print(report.main(args.out))
    # The counts are of the folder, so a resumed sweep says the same as one run in one go.
    print("labkit sweep: {finished} of {total} runs finished, {complete} complete, {not_complete} not complete "
          "({ran} run now, {skipped} already done); tables in {out}".format(out=args.out, **summary))
    return 0 if summary["not_complete"] == 0 and summary["finished"] == summary["total"] else 1
