"""The class page and the feedback pages are drawn from templates that escape every value: a student's name, run
name, unit, reason, check name or handed-in evidence is shown as text, never read as markup.

Each page is parsed as a browser's tokenizer would (html.parser): no ``<script>`` element, no element the page
does not draw itself, and every hostile text comes back verbatim as text or as an attribute's value.
"""

from __future__ import annotations

import fnmatch
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Set

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli")

from labkit.grading.reports.class_page import ClassData, class_html, find_outliers
from labkit.grading.reports.gradebook import HIDDEN_REASON, feedback_html

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATES = ROOT / "labkit" / "grading" / "reports" / "templates"

STUDENT = "<b>O'Brien</b> \"&\" </title></svg><script>alert(1)</script> é😀 &#39; {{ 1 }}"
RUN = "run</td><script>alert('run')</script>"
UNIT = "ms\"><script>alert(\"unit\")</script>"
REASON = "expected </p><script src=x></script> & got <img src=x onerror=alert(1)>"
CHECK = "q1' onmouseover='alert(1)"
WHERE = "portable: CPU </circle><script>where</script>"
EVIDENCE = "log </li><script>evidence</script>"

#: The elements the pages draw themselves.
CLASS_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "span", "i", "figure",
              "figcaption", "svg", "line", "text", "rect", "circle", "div", "table", "tr", "th", "td", "section",
              "details", "summary", "ul", "li"}
FEEDBACK_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "b", "table", "tr", "th", "td"}


class Page(HTMLParser):
    """The elements, the text and the attribute values of a page, as the tokenizer reads them."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: List[str] = []
        self.texts: List[str] = []
        self.attributes: List[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: List) -> None:
        self.tags.append(tag)
        self.attributes.extend(value for _, value in attrs if value is not None)

    def handle_startendtag(self, tag: str, attrs: List) -> None:
        self.handle_starttag(tag, attrs)

    def handle_data(self, data: str) -> None:
        self.texts.append(data)

    def shows(self, text: str) -> bool:
        return any(text in t for t in self.texts)

    def has_attribute(self, text: str) -> bool:
        return any(text in a for a in self.attributes)


def _row(student: str, run: str, value: float, **extra: str) -> Dict:
    row = {"student": student, "exercise": "cerebras/llama2_7b", "run": run, "record": run, "endpoint": "",
           "parameter": "batch_size", "parameter_value": "512", "metric": "global_rate", "value": value,
           "unit": UNIT, "where": "CS-3", "kind": "testbed log", "flags": ""}
    row.update(extra)
    return row


def _result(student: str, score: float) -> Dict:
    return {"student": student, "status": "ok", "total": score, "max_total": 2.0,
            "checks": [{"name": CHECK, "points": 2.0, "score": score, "passed": score >= 2, "reason": REASON}],
            "fingerprints": {"ab" * 32: EVIDENCE}}


def _class() -> ClassData:
    rows = [_row(STUDENT, RUN, 1000.0, flags=REASON)] + [_row("s%d" % i, "r%d" % i, 17.0 + i * 0.1) for i in range(6)]
    rows.append(_row(STUDENT, RUN + "2", 3.0, kind="portable: CPU", where=WHERE, parameter_value=STUDENT))
    results = [_result(STUDENT, 0.0), _result("s1", 2.0), _result("s2", 1.0)]
    return ClassData(rows, find_outliers(rows, {}), results, [CHECK], STUDENT)


def _assert_only(page: Page, allowed: Set[str]) -> None:
    assert "script" not in page.tags and "img" not in page.tags
    assert set(page.tags) <= allowed, set(page.tags) - allowed


def test_hostile_text_in_the_class_page_is_shown_as_text_never_as_markup():
    data = _class()
    assert data.outliers and data.outliers[0].row["student"] == STUDENT  # the hostile run is in the table too
    text = class_html(data)
    page = Page(text)
    _assert_only(page, CLASS_TAGS)
    for hostile in (STUDENT, RUN, UNIT, REASON, WHERE, EVIDENCE, CHECK):
        assert page.shows(hostile), hostile
    assert page.has_attribute("check-" + CHECK)  # the check's section id, an attribute value and no more
    assert STUDENT + ": the class" in page.texts  # the page's <title>, whole
    # quotes are spelled as html.escape spells them; a student's own entity is escaped, not read
    assert "O&#x27;Brien" in text and "&quot;&amp;&quot;" in text and "&amp;#39;" in text


def test_hostile_text_in_the_feedback_page_is_shown_as_text_never_as_markup():
    result = _result(STUDENT, 0.0)
    result["checks"].append({"name": "hidden", "points": 1, "score": 0, "passed": False, "hidden": True,
                             "reason": "secret " + REASON, "description": "secret"})
    result.update(reason=REASON, isolation=WHERE, duplicates=[EVIDENCE],
                  runs=[{"name": RUN, "exercise": "cerebras/llama2_7b", "where": WHERE},
                        {"name": RUN + "2", "exercise": UNIT, "where": "CS-3"}])
    text = feedback_html(result, title=STUDENT)
    page = Page(text)
    _assert_only(page, FEEDBACK_TAGS)
    for hostile in (STUDENT, RUN, UNIT, REASON, WHERE, EVIDENCE, CHECK):
        assert page.shows(hostile), hostile
    assert page.shows(HIDDEN_REASON) and not page.shows("secret")
    assert page.tags.count("tr") == 1 + 2 + 1 + 2  # the checks' header and rows, the runs' header and rows


def test_every_template_escapes_and_ships_with_the_package():
    templates = sorted(TEMPLATES.iterdir())
    assert {p.name for p in templates} >= {"class.html.j2", "feedback.html.j2", "figure.html.j2"}
    for path in templates:  # nothing may turn the escape off for a value
        source = path.read_text(encoding="utf-8")
        for switch in ("|safe", "| safe", "autoescape false", "Markup"):
            assert switch not in source, "{} uses {}".format(path.name, switch)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    missing = [p.name for p in templates if not any(fnmatch.fnmatch(p.name, pattern) for pattern in patterns)]
    assert not missing, "pyproject.toml's package-data leaves out {}".format(missing)
