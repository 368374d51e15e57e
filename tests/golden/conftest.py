"""nbval with tolerance for labkit's run records.

nbval compares every output exactly, and a run record holds timings. Records are taken out of
nbval's string comparison and compared here with ``labkit.results.compare_records``: timings
skipped, other numbers within a tolerance, parameters and status exactly. Every other output
still goes through nbval, with the sanitizers in sanitize.cfg.
"""

from __future__ import annotations

from labkit.results import SCRAP_MIME, compare_records

# The golden homework's evidence: lab-book notebooks run portably, read by the homework, not replayed.
collect_ignore_glob = ["homework/runs/*"]

try:
    from nbval.plugin import IPyNbCell
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


if IPyNbCell is not None and not getattr(IPyNbCell, "_labkit_patched", False):
    _original = IPyNbCell.compare_outputs

    def compare_outputs(self, test, ref, skip_compare=None):
        test_records, test_rest = _split(test)
        ref_records, ref_rest = _split(ref)
        problems = []
        if set(test_records) != set(ref_records):
            problems.append("records {} recorded, {} expected".format(sorted(test_records), sorted(ref_records)))
        for name in set(test_records) & set(ref_records):
            expected, actual = ref_records[name], test_records[name]
            if isinstance(expected, dict) and "metrics" in expected:
                problems.extend("record {}: {}".format(name, p) for p in compare_records(expected, actual))
            elif expected != actual:
                problems.append("record {}: expected {!r}, got {!r}".format(name, expected, actual))
        if problems:
            self.comparison_traceback = ["labkit records differ:"] + problems
            return False
        return _original(self, test_rest, ref_rest, skip_compare)

    IPyNbCell.compare_outputs = compare_outputs
    IPyNbCell._labkit_patched = True
