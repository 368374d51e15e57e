"""``labkit grade``: grade a class's homework notebooks into a gradebook.

    labkit grade --check        # which sandbox this machine and user get, what each level protects

    labkit grade submissions/ --rubric notebooks/homework/ai_testbeds.rubric.yml --out grades/ \
        --workers 2 --timeout 600 --memory 4 --reproduce

SUBMISSIONS is a folder of notebooks (``alice.ipynb``) or of student folders
(``alice/ai_testbeds.ipynb`` plus any files the notebook reads). Writes
``DIR/gradebook.csv``, ``DIR/feedback/<student>.html`` and ``DIR/executed/<student>.ipynb``.
Run it again after an interruption: finished grades are kept, the rest (and any grader error) are done.

    labkit grade submissions/ --rubric R.yml --out grades/ --executor parsl --config docs/parsl/slurm_testbed.py
    labkit grade submissions/ --rubric R.yml --out grades/ --only alice        # regrade one student
    labkit grade submissions/ --rubric R.yml --out grades/ --lms canvas        # + grades/canvas.csv

Also writes ``DIR/summary.md`` (per check: points distribution, commonest failure) and flags
evidence two students both handed in (gradebook column ``duplicate_evidence``). Exit status: 0
when the batch was graded (a student's failing notebook is a grade, not an error), 2 when it
stopped on an error (the rubric, the folders, the options, no level here that keeps a submission
inside its folder: see --check and --allow-unconfined) before any notebook ran, 1 when DIR could not
be written while grading (finished grades are kept), 130 when interrupted (finished grades are kept).
DIR keeps the class: students graded into it earlier and not in SUBMISSIONS stay in every report.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
from typing import Any, Dict, List, Optional

from labkit.grading.sandbox import disk, levels, slots

__all__ = ["register", "main"]


def _positive(kind: Any, what: str, most: float) -> Any:
    """A finite number > 0 and at most ``most``: 'nan', 'inf', 0 and -5 are refused, naming ``what``."""
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError("{}: {!r} is not a {}".format(
                what, text, "whole number" if kind is int else "number")) from None
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError("{}: must be > 0 and finite, got {}".format(what, text))
        if value > most:
            raise argparse.ArgumentTypeError("{}: must be at most {:g}, got {}".format(what, most, text))
        return value
    return parse


_DAY = 24 * 3600.0
_MOST_WORKERS = slots.UID_RANGE[1] - slots.UID_RANGE[0] + 1  # a private uid per concurrent run


def register(subparsers: "argparse._SubParsersAction") -> None:
    parser = subparsers.add_parser("grade", help="batch-grade homework notebooks in a sandbox",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", metavar="SUBMISSIONS", nargs="?",
                        help="folder of notebooks or of student folders")
    parser.add_argument("--check", action="store_true",
                        help="print each isolation level, what it protects and needs here, and which one grading "
                             "would use; grade nothing")
    parser.add_argument("--rubric", metavar="FILE", help="the YAML rubric (docs/grading.md); required")
    parser.add_argument("--out", metavar="DIR", help="where the gradebook and feedback go; required")
    parser.add_argument("--workers", type=_positive(int, "--workers", _MOST_WORKERS), default=1, metavar="N",
                        help="submissions graded at once (default 1)")
    parser.add_argument("--timeout", type=_positive(float, "--timeout", 7 * _DAY), default=600.0, metavar="S",
                        help="wall-clock seconds per notebook (default 600)")
    parser.add_argument("--cell-timeout", type=_positive(float, "--cell-timeout", 7 * _DAY), default=None, metavar="S",
                        help="wall-clock seconds per cell (default: min(120, --timeout))")
    parser.add_argument("--memory", type=_positive(float, "--memory", 1 << 20), default=4.0, metavar="GB",
                        help="writable memory (RLIMIT_DATA) of the kernel and each of its processes (default 4)")
    parser.add_argument("--processes", type=_positive(int, "--processes", 1 << 22), default=128, metavar="N",
                        help="processes and threads a kernel may have (default 128)")
    parser.add_argument("--file-size", type=_positive(float, "--file-size", 1 << 30), default=64.0, metavar="MB",
                        help="largest file a kernel may write (default 64)")
    parser.add_argument("--disk", type=_positive(float, "--disk", 1 << 30), default=1024.0, metavar="MB",
                        help="disk a submission's run folder may hold: its files, what its kernel writes, its log "
                             "(default 1024)")
    parser.add_argument("--isolation", choices=("bwrap", "unshare", "rlimits", "none"), default=None,
                        help="sandbox level (default: the strongest that works here; 'none': unconfined)")
    parser.add_argument("--allow-unconfined", action="store_true",
                        help="grade even where no level keeps a submission inside its folder (rows say 'unconfined')")
    parser.add_argument("--executor", choices=("local", "parsl"), default="local",
                        help="local worker processes (default) or Parsl (needs --config)")
    parser.add_argument("--config", metavar="FILE", default=None,
                        help="Parsl config file, as for sweeps (docs/parsl/local.py, slurm_testbed.py, polaris_pbs.py)")
    parser.add_argument("--only", action="append", default=None, metavar="NAME",
                        help="regrade only this student (repeat for several); the others' results are kept")
    parser.add_argument("--lms", choices=("canvas",), default=None,
                        help="also write DIR/canvas.csv for Canvas's Gradebook import (docs/grading.md)")
    parser.add_argument("--assignment", metavar="NAME", default=None,
                        help="the assignment column's name in the LMS file (default: the rubric's title)")
    parser.add_argument("--reproduce", action="store_true",
                        help="grade the rubric's reproduce checks (compare re-executed records with the submitted ones)")
    parser.set_defaults(func=main)


_NEEDS = {"bwrap": "bubblewrap (apt-get install bubblewrap) and user namespaces or root",
          "unshare": "root (util-linux unshare, namespaces permitted)",
          "rlimits": "nothing (files: Landlock, Linux 5.13+)",
          "none": "asking for it: --isolation none"}


def _uid(level: str) -> bool:
    return level != "none" and levels.uid_switch_possible(level)


def _protections(level: str, abi: int, uid: bool, cgroup: bool) -> List[str]:
    """files, network, processes, memory for ``level`` on this machine (as ``--check`` shows them)."""
    landlocked = level != "none" and abi >= 1
    if level == "bwrap":
        files = "yes: hidden+read-only" + ("+Landlock" if landlocked else "")
    else:
        files = "yes: Landlock" if landlocked else "NO"
    if level in ("bwrap", "unshare"):
        network, processes = "yes: no network", "yes: PID namespace"
    else:
        network = "TCP only: Landlock" if landlocked and abi >= 4 else "NO"
        processes = "yes: private uid" if uid else ("yes: cgroup" if cgroup else "NO: background ones survive")
    memory = "rlimits" + ("+cgroup" if cgroup else "")
    return [files, network, processes, memory]


def levels_report(chosen: Optional[str] = None, allow_unconfined: bool = False) -> str:
    """What ``labkit grade --check`` prints: each level here, what it protects and needs, which is used."""
    abi = levels.landlock_abi()
    cgroup = bool(slots.cgroup_parents())
    lines = ["labkit grade --check: uid {}{}, Linux {}, Python {}".format(
        os.geteuid(), " (root)" if os.geteuid() == 0 else "", os.uname().release, sys.prefix)]
    if abi:
        lines.append("Landlock ABI {}: files{}{}".format(abi, "; TCP denied (ABI 4+)" if abi >= 4 else "",
                                                         "; abstract sockets and signals scoped (ABI 6+)"
                                                         if abi >= 6 else ""))
    else:
        lines.append("Landlock: not available (needs Linux 5.13+ with landlock among its LSMs)")
    lines.append("bubblewrap: {}".format("works" if levels.level_available("bwrap") else
                                         "installed, not permitted here" if shutil.which("bwrap") else
                                         "not installed (apt-get install bubblewrap)"))
    lines.append("cgroups: {}".format("yes (a process and memory cap per run)" if cgroup else
                                      "no (not writable by this user)"))
    rows = [["level", "works", "gradebook says", "files", "network", "processes", "memory", "needs"]]
    for level in levels.LEVELS:
        works = levels.level_available(level)
        uid = works and _uid(level)
        name = levels.isolation_name(level, uid, cgroup) if works else "-"
        rows.append([level, "yes" if works else "no", name] + _protections(level, abi, uid, cgroup) + [_NEEDS[level]])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines.append("")
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)) + "  " + row[-1] for row in rows]
    lines.append("Every level: kill -9 of labkit grade leaves no kernel; rlimits (memory, file size, CPU, processes).")
    lines.append("Every level: a disk share per run (--disk): {}.".format(
        "its own file system (a loop-mounted ext4 image)" if disk.mountable() else
        "a folder measured every 0.2 s (its own file system needs root, mkfs.ext4, mount, LABKIT_DISK_MOUNT unset)"))
    level = chosen or levels.best_level()
    why = "" if allow_unconfined else levels.refusal(level)
    if not levels.level_available(level):
        lines.append("labkit grade --isolation {} would stop: that level does not work here.".format(level))
    elif why:
        lines.append("labkit grade would refuse: " + why + ".")
    else:
        lines.append("labkit grade would use: {} (gradebook: {})".format(
            level, levels.isolation_name(level, _uid(level), cgroup)))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    from labkit.grading.batch import grade_class
    from labkit.grading.checks.rubric import RubricError

    if args.check:
        print(levels_report(args.isolation, args.allow_unconfined))
        return 0
    missing = [name for name, value in (("SUBMISSIONS", args.submissions), ("--rubric", args.rubric),
                                        ("--out", args.out)) if not value]
    if missing:
        print("labkit grade: {} required (or --check alone)".format(" and ".join(missing) + (
            " are" if len(missing) > 1 else " is")), file=sys.stderr)
        return 2
    limits = levels.Limits(notebook_s=args.timeout, cell_s=args.cell_timeout or min(120.0, args.timeout),
                            memory_bytes=int(args.memory * (1 << 30)), nproc=args.processes,
                            fsize_bytes=int(args.file_size * (1 << 20)), disk_bytes=int(args.disk * (1 << 20)))

    def show(result: Dict[str, Any]) -> None:
        print("{:<24} {:>6g} / {:<6g} {:<12} {}{}".format(result["student"], result.get("total", 0),
                                                           result.get("max_total", 0), result.get("status", ""),
                                                           result.get("isolation", ""),
                                                           " on " + result["host"] if result.get("host") else ""),
              flush=True)

    try:
        results = grade_class(args.submissions, args.rubric, args.out, workers=args.workers, limits=limits,
                              reproduce=args.reproduce, level=args.isolation, progress=show, only=args.only,
                              lms=args.lms, assignment=args.assignment, executor=args.executor,
                              parsl_config=args.config, allow_unconfined=args.allow_unconfined,
                              tell=lambda line: print("labkit grade: " + line, file=sys.stderr, flush=True))
    except (RubricError, FileNotFoundError, ValueError, RuntimeError) as exc:
        print("labkit grade: {}".format(exc), file=sys.stderr)
        return 2
    except OSError as exc:  # grading ran: what finished is in the state, written whole
        print("labkit grade: {}: {}; the grades finished before are kept in {}".format(
            exc.filename or args.out, exc.strerror or exc, os.path.join(args.out, ".labkit-grade", "state.json")),
            file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("labkit grade: interrupted; run the same command again to finish the batch", file=sys.stderr)
        return 130
    out = args.out.rstrip("/")
    print("{} graded; gradebook: {}/gradebook.csv, summary: {}/summary.md{}".format(
        len(results), out, out, ", Canvas: {}/canvas.csv".format(out) if args.lms == "canvas" else ""))
    return 0
