"""nbval with a numeric tolerance, so that golden notebooks pass on any CPU.

nbval compares every output as a string, and a number can move in its last digits on another CPU
(other kernels, another thread count) while the result is the same. This extension replaces
nbval's comparison of a cell's outputs with tests/golden/numeric.py's: the text with its numbers
taken out must be equal, and the numbers must agree within a tolerance that fits the quantity.
Run records are compared with ``labkit.results.compare_records`` under the same rules (timings
skipped, parameters and status exactly). sanitize.cfg still masks timings, paths and dates first.
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict

from labkit.results import SCRAP_MIME, compare_records, is_unstable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numeric  # noqa: E402  (tests/golden is not a package; nbval collects notebooks here)

# The golden homework's evidence: lab-book notebooks run portably, read by the homework, not replayed.
collect_ignore_glob = ["homework/runs/*", "homework/evidence_2025/*"]

try:
    from nbval.plugin import IPyNbCell, transform_streams_for_comparison
except ImportError:  # nbval not installed: nothing to patch
    IPyNbCell = None


def _split(outputs):
    records, rest = {}, []
    for output in outputs:
        payload = output.get("data", {}).get(SCRAP_MIME) if hasattr(output, "get") else None
        if isinstance(payload, dict):
            records[payload.get("name")] = payload.get("data")
        else:
            rest.append(output)
    return records, rest


# cpu_kernels.py --spread-log sets this to a file: every number that differs from its golden value
# is appended there (one JSON line each); spread.py tabulates what the tolerances must cover.
_SPREAD_LOG = os.environ.get("LABKIT_GOLDEN_SPREAD_LOG")


def _log_spread(cell, where, entries):
    if not _SPREAD_LOG or not entries:
        return
    with open(_SPREAD_LOG, "a", encoding="utf-8") as log:
        for kind, golden, got, diff in entries:
            log.write(json.dumps({"cell": cell.nodeid, "where": where, "kind": kind, "golden": golden,
                                  "got": got, "diff": diff}) + "\n")


def _record_spread(expected, actual):
    units = expected.get("units") or {}
    found = []
    pairs = [(n, v, (actual.get("metrics") or {}).get(n)) for n, v in (expected.get("metrics") or {}).items()]
    for n, series in (expected.get("series") or {}).items():
        other = ((actual.get("series") or {}).get(n) or {}).get("y") or []
        pairs.extend((n, v, w) for v, w in zip(series.get("y") or [], other))
    for name, want, got in pairs:
        if is_unstable(expected, name) or not (numeric.is_number(want) and numeric.is_number(got)) or want == got:
            continue
        which = numeric.metric_kind(name, units.get(name), want, got)
        diff = abs(want - got)
        found.append((which, repr(want), repr(got), diff / abs(want) if which == "relative" else diff))
    return found


def _record_problems(cell, test_records, ref_records):
    problems = []
    if set(test_records) != set(ref_records):
        problems.append("records {} recorded, {} expected".format(sorted(test_records), sorted(ref_records)))
    for name in sorted(set(test_records) & set(ref_records), key=str):
        expected, actual = ref_records[name], test_records[name]
        if isinstance(expected, dict) and "metrics" in expected:
            if isinstance(actual, dict):
                _log_spread(cell, "record " + str(name), _record_spread(expected, actual))
            problems.extend("record {}: {}".format(name, p)
                            for p in compare_records(expected, actual, close=numeric.metric_close))
        else:
            problems.extend("record {}: {}".format(name, p) for p in numeric.outputs_differ(expected, actual))
    return problems


def _by_key(cell, outputs, skip):
    """Sanitized output values by stream name or MIME type, in order (as nbval groups them)."""
    grouped = defaultdict(list)
    for output in transform_streams_for_comparison(outputs):
        for key, value in output.items():
            if key in skip:
                continue
            if key == "data":
                for mime, data in value.items():
                    if mime not in skip:
                        grouped[mime].append(cell.sanitize(data))
            else:
                grouped[key].append(cell.sanitize(value))
    return grouped


def _compare(cell, test, ref, skip_compare=None):
    test_records, test_rest = _split(test)
    ref_records, ref_rest = _split(ref)
    cell.comparison_traceback = []
    problems = _record_problems(cell, test_records, ref_records)
    if problems:
        cell.comparison_traceback = ["labkit records differ:"] + problems
        return False
    skip = skip_compare or cell.parent.skip_compare
    got, want = _by_key(cell, test_rest, skip), _by_key(cell, ref_rest, skip)
    if set(got) != set(want):
        cell.comparison_traceback = ["output fields {} where the golden copy has {}".format(
            sorted(got), sorted(want))]
        return False
    for key in want:
        if len(got[key]) != len(want[key]):
            cell.comparison_traceback = ['{} outputs for "{}" where the golden copy has {}'.format(
                len(got[key]), key, len(want[key]))]
            return False
        for expected, actual in zip(want[key], got[key]):
            if isinstance(expected, str) and isinstance(actual, str):
                _log_spread(cell, key, numeric.spread(expected, actual))
            problems = numeric.outputs_differ(expected, actual)
            if problems:
                cell.format_output_compare(key, expected, actual)
                cell.comparison_traceback.append('"{}" differs beyond the golden tolerance: {}'.format(
                    key, "; ".join(problems)))
                return False
    return True


if IPyNbCell is not None and not getattr(IPyNbCell, "_labkit_patched", False):
    IPyNbCell.compare_outputs = _compare
    IPyNbCell._labkit_patched = True
