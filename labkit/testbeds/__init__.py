"""One module per testbed: its exercises' parameter specs and how each runs there."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple


def last_run(path: str, exercise: Optional[str] = None) -> Tuple[Any, List[str]]:
    """The last run of ``exercise`` (None: of any exercise; where none is its, the last of any) in the
    testbed log at ``path``, and the log's notes; says which run it read. A log without a run raises
    ValueError naming ``log_path``."""
    from labkit import logs

    report = logs.read(path)
    runs = [r for r in report.runs if r.exercise == exercise] or list(report.runs)
    if not runs:
        raise ValueError("log_path = {!r}: no run found in this log ({}).".format(
            path, "; ".join(report.notes) or "unrecognised format"))
    if len(runs) > 1:
        print("This log holds {} runs; showing the last. labkit.logs.read(log_path).runs has them all.".format(
            len(runs)), flush=True)
    run = runs[-1]
    print("Read a {} run from {} ({} format).".format(run.exercise, path, report.format), flush=True)
    return run, list(report.notes)
