"""``labkit class``: draw the class page again from a graded folder, and write the table behind it.

    labkit class grades/                    # grades/class.html again, from what `labkit grade` wrote
    labkit class grades/ --csv class.csv    # and the long table: one row per measured point
    labkit class grades/ --out page.html    # the page somewhere else

Nothing is graded again: the page is drawn from the grading state (``DIR/.labkit-grade/``), the
executed notebooks (``DIR/executed/``, whose records the grader read) and the rubric's checks, so
it is the page ``labkit grade`` wrote last. The CSV's columns: student, exercise, run, endpoint,
parameter, parameter_value, metric, value, unit, where (where the run ran), kind (the colour on
the page), flags (far from the class, and the misreading when labkit detects one); read it with
``pandas.read_csv``. Exit status: 0 written; 2 DIR is not a folder ``labkit grade`` wrote, or a
file cannot be written.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["register", "main"]


def register(subparsers: "argparse._SubParsersAction") -> None:
    parser = subparsers.add_parser("class", help="the class page (measurements, outliers, points) of a graded folder",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", metavar="DIR", help="the --out folder of `labkit grade`")
    parser.add_argument("--csv", metavar="FILE", default=None, help="also write the long table of every point here")
    parser.add_argument("--out", metavar="FILE", default=None, help="write the page here (default DIR/class.html)")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from labkit.files import write_atomic
    from labkit.grading.reports.class_page import ClassDataError, class_html, long_csv, read_class

    if not os.path.isdir(args.folder):
        print("labkit class: DIR {} is not a folder (give the --out folder of `labkit grade`)".format(args.folder),
              file=sys.stderr)
        return 2
    page = args.out or os.path.join(args.folder, "class.html")
    for option, target in (("--out", page), ("--csv", args.csv)):
        if target and os.path.isdir(target):
            print("labkit class: {} {}: is a folder; give a file".format(option, target), file=sys.stderr)
            return 2
    try:
        data = read_class(args.folder)
    except ClassDataError as exc:
        print("labkit class: {}".format(exc), file=sys.stderr)
        return 2
    for target, text in ((page, lambda: class_html(data)), (args.csv, lambda: long_csv(data.rows))):
        if not target:
            continue
        try:
            write_atomic(target, text())
        except OSError as exc:  # a file left as it was: write_atomic replaces it whole or not at all
            print("labkit class: cannot write {}: {}; it is left as it was".format(target, exc.strerror or exc),
                  file=sys.stderr)
            return 2
    print("{} students, {} points, {} far from the class: {}{}".format(
        len(data.results), len(data.rows), len(data.outliers), page, ", table: " + args.csv if args.csv else ""))
    return 0
