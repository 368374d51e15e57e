"""The class page in chromium: a class of 200 (tests/grading/class_fixtures.py) stays light and quick.

The page of a really graded class is opened in chromium by tests/homework/test_class.py and
test_class_2025.py (with LABKIT_BROWSER_TESTS=1); this one is the size and render measurement:
200 students of both offerings, every figure drawn, the four planted misreadings named, nothing
fetched from anywhere. The page, a screenshot and the numbers go to the artifacts folder.
"""

from __future__ import annotations

import json

import pytest

from labkit.grading.reports.class_page import class_html, read_class
from tests.browser import lab as lablib
from tests.browser.class_page import open_class_page
from tests.grading.class_fixtures import PLANTED, synthetic_class


@pytest.mark.timing
def test_a_class_of_200_stays_under_2_mb_and_renders_in_under_2_s(tmp_path, artifacts, browser_context):
    out = tmp_path / "out"
    synthetic_class(out, 200)
    data = read_class(str(out))
    (out / "class.html").write_text(class_html(data))
    seen = open_class_page(out / "class.html", screenshot=str(artifacts / "class_200.png"), context=browser_context)
    (artifacts / "class_200.json").write_text(json.dumps({k: seen[k] for k in ("bytes", "render_ms")}))
    assert seen["bytes"] < 2 * 1024 * 1024
    assert seen["render_ms"] < 2000 * lablib.SLOWDOWN, seen["render_ms"]
    assert seen["requests"] == [] and seen["scripts"] == 0  # opened from its file, nothing fetched
    assert len(seen["figures"]) == len({(r["exercise"], r["metric"], r["endpoint"]) for r in data.rows}) >= 15
    assert all(f["points"] > 0 and f["width"] > 0 for f in seen["figures"])
    assert sum(f["points"] for f in seen["figures"]) == len(data.rows)
    assert {row[0] for row in seen["outliers"]} == set(PLANTED.values())
    assert all(check["dots"] == 200 for check in seen["checks"])
