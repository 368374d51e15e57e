"""Measure how far golden numbers move across CPU kernels and threads, to set the tolerances.

    .venv/bin/python tests/golden/cpu_kernels.py --spread-log /tmp/spread.jsonl   # replay, logging
    .venv/bin/python tests/golden/spread.py /tmp/spread.jsonl                  # the table

cpu_kernels.py replays every golden notebook under each capability and thread count; with
``--spread-log``, tests/golden/conftest.py appends every number that differs from its golden value
(printed text and run records alike). This prints, per kind of tolerance in
tests/golden/numeric.py, the largest difference seen and where, next to the tolerance in force.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numeric  # noqa: E402

TOLERANCE = {"percent": "{} points".format(numeric.PERCENT_POINTS),
             "fraction": "{} absolute".format(numeric.FRACTION_ATOL),
             "relative": "{:g} %".format(numeric.RTOL * 100), "integer": "exact"}


def main(paths) -> int:
    if not paths:
        print(__doc__)
        return 2
    largest = {}
    for path in paths:
        with open(path, encoding="utf-8") as log:
            for line in log:
                entry = json.loads(line)
                if not entry["where"].startswith("record"):  # printed: recount beyond rounding
                    want, got = (numeric.Number.parse(entry[k], False) for k in ("golden", "got"))
                    rounding = 0.0 if entry["kind"] == "integer" else max(want.unit_in_last_place,
                                                                          got.unit_in_last_place)
                    entry["diff"] = max(0.0, abs(want.value - got.value) - rounding)
                    if entry["kind"] == "relative":
                        entry["diff"] /= abs(want.value)
                best = largest.get(entry["kind"])
                if best is None or entry["diff"] > best["diff"]:
                    largest[entry["kind"]] = entry
    print("{:<9} {:>12}  {:<16} {}".format("kind", "largest", "tolerance", "where (golden -> fresh)"))
    for kind in ("percent", "fraction", "relative", "integer"):
        entry = largest.get(kind)
        if entry is None:
            print("{:<9} {:>12}  {:<16} -".format(kind, "none moved", TOLERANCE[kind]))
            continue
        shown = "{:.3g} %".format(entry["diff"] * 100) if kind == "relative" else "{:.4g}".format(entry["diff"])
        print("{:<9} {:>12}  {:<16} {} {}: {} -> {}".format(kind, shown, TOLERANCE[kind], entry["cell"],
                                                         entry["where"], entry["golden"], entry["got"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
