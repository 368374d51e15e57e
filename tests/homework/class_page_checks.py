"""What the class page of a really graded class must show (tests/homework/test_class.py and test_class_2025.py).

    check_class_page(out, tmp_path, planted={"ned": "compile time read as training time"}, may_be_far={"fay"})

The page `labkit grade` wrote is the page `labkit class` draws again; every exercise the class
recorded runs of has its figures, with every point of the long table; each planted student is
named with their misreading (far from the class, or in the table of misreadings), and no student
outside ``planted`` and ``may_be_far`` (typed or patched records, a different setting) is far from
the class; the long CSV, read back with pandas, holds the figures of the records in the executed
notebooks. With LABKIT_BROWSER_TESTS=1 the page is opened in chromium too (figures drawn, outliers named, size, render time, nothing fetched).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Dict, Iterable

import pandas as pd

from labkit import results
from labkit.cli import main as labkit
from labkit.grading.reports.class_page import figure_id, read_class

__all__ = ["check_class_page"]

_PREFIXES = {"ttft_median": "ttft_median_time", "tpot_median": "tpot_median_time", "e2el_median": "e2el_median_latency",
             "output_throughput": "output_throughput"}


def _recorded(out: Path, row) -> float:
    record = results.read(out / "executed" / (row.student + ".ipynb")).records[row.run.split(":")[0]]
    if ":" in row.run:
        series = record["series"]["{}:{}".format(_PREFIXES[row.metric], row.endpoint)]
        return series["y"][series["x"].index(float(row.parameter_value))]
    return record["metrics"][row.metric]


def check_class_page(out: Path, tmp_path: Path, planted: Dict[str, str], may_be_far: Iterable[str],
                     exercises: Iterable[str], name: str, live: Iterable[str] = ()) -> Dict[str, object]:
    """``live``: honest students whose figures come from a live run of their own, measured apart from
    the class's: on a loaded machine such a run may land far from the class, but no misreading may be
    named for it."""
    out = Path(out)
    page = (out / "class.html").read_text()
    again, table = tmp_path / "again.html", tmp_path / "long.csv"
    assert labkit(["class", str(out), "--out", str(again), "--csv", str(table)]) == 0
    assert again.read_text() == page  # drawn again from what grading wrote: the same page
    data = read_class(str(out))
    keys = {(r["exercise"], r["metric"], r["endpoint"]) for r in data.rows}
    assert {k[0] for k in keys} >= set(exercises)
    for exercise, metric, endpoint in keys:
        assert 'id="{}"'.format(figure_id(exercise, metric, endpoint)) in page
    far = {}
    for outlier in data.outliers:
        far.setdefault(outlier.row["student"], set()).update(outlier.misreadings)
    flagged = {}
    for row in data.rows:
        flagged.setdefault(row["student"], set()).update(f for f in row["flags"].split("; ") if f)
    for student, misreading in planted.items():
        assert any(m.startswith(misreading) for m in flagged.get(student, ())), (student, flagged.get(student))
        assert student in page
    for student in live:
        assert not far.get(student), (student, far[student])
    honest_far = set(far) - set(planted) - set(may_be_far) - set(live)
    assert not honest_far, {s: far[s] for s in honest_far}
    frame = pd.read_csv(table)
    assert len(frame) == len(data.rows) > 0
    for row in frame.itertuples():
        assert row.value == _recorded(out, row), row
    seen = {"bytes": len(page.encode()), "far": sorted(far), "figures": len(keys)}
    if os.environ.get("LABKIT_BROWSER_TESTS") == "1":
        from tests.browser.class_page import open_class_page
        artifacts = Path(os.environ.get("LABKIT_BROWSER_ARTIFACTS") or Path(__file__).parents[2] / "runs" / "browser")
        artifacts.mkdir(parents=True, exist_ok=True)
        opened = open_class_page(out / "class.html", screenshot=str(artifacts / (name + ".png")))
        assert opened["requests"] == [] and opened["scripts"] == 0
        assert len(opened["figures"]) == len(keys) and all(f["points"] > 0 for f in opened["figures"])
        assert sum(f["points"] for f in opened["figures"]) == len(data.rows)
        assert {row[0] for row in opened["outliers"]} == set(far)
        seen.update(render_ms=opened["render_ms"])
        (artifacts / (name + ".json")).write_text(json.dumps(seen))
    assert seen["bytes"] < 2 * 1024 * 1024
    return seen
