"""Every notebook as a student meets it: JupyterLab in chromium, typed parameters, Run All.

    make setup-browser && make test-browser

Three passes per notebook (tests/browser/cases.py says what each types and expects): small
parameters run clean; one bad parameter stops in one ParameterError naming it; the untouched
defaults either run clean or stop in one short message. A screenshot of each finished notebook
goes to runs/browser/ (LABKIT_BROWSER_ARTIFACTS to choose another folder).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path

import pytest

from labkit import results
from tests.browser import cases as catalogue
from tests.browser.lab import NotebookPage

CASES = [pytest.param(c, id=c.key) for c in catalogue.CASES]


def _set_line(source: str, name: str, value_text: str) -> str:
    """The cell's source with ``name = ...`` given ``value_text``, its comment kept (appended if absent)."""
    pattern = re.compile(r"^({} *= *)(.*?)(\s*#.*)?$".format(re.escape(name)))
    lines = source.split("\n")
    for i, line in enumerate(lines):
        m = pattern.match(line)
        if m:
            lines[i] = m.group(1) + value_text + (m.group(3) or "")
            return "\n".join(lines)
    return source + "\n{} = {}".format(name, value_text)


def _parameters_index(path: Path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return next(i for i, c in enumerate(cells) if "parameters" in c.get("metadata", {}).get("tags", []))


def _outputs(path: Path):
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        for output in cell.get("outputs", []):
            yield index, output


def _open_copy(lab, context, case, label):
    """A fresh copy of the notebook beside the original (relative paths stay right), opened in a page."""
    source = lab.root / case.notebook
    copy = source.with_name("{}-{}.ipynb".format(source.stem, label))
    shutil.copyfile(str(source), str(copy))
    page = context.new_page()
    notebook = NotebookPage(page, lab, str(copy.relative_to(lab.root))).open()
    return notebook, copy


def _type_parameters(notebook, copy, changes):
    index = _parameters_index(copy)
    text = notebook.editor_text(index)
    for name, value_text in changes:
        text = _set_line(text, name, value_text)
    notebook.edit_lines(index, text)


def _finish(notebook, lab, artifacts, case, label):
    try:
        # The screenshot shows the message where a notebook stopped, else its last cells.
        stops = notebook.panel().locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        (stops.first if stops.count() else notebook.panel().locator(".jp-Cell").last).scroll_into_view_if_needed()
        notebook.page.screenshot(path=str(artifacts / "{}-{}.png".format(case.key.replace("/", "-"), label)))
    finally:
        notebook.page.close()
        lab.shutdown_kernels()


def _assert_ran_clean(case, notebook, saved):
    outputs = list(_outputs(saved))
    errors = [o for _, o in outputs if o["output_type"] == "error"]
    assert not errors, "{}: error output {}".format(case.key, errors[0]["traceback"])
    stderr = [line for _, o in outputs if o.get("name") == "stderr" for line in "".join(o["text"]).splitlines()]
    unexpected = [line for line in stderr if line.strip() and not any(re.search(p, line) for p in case.stderr)]
    assert not unexpected, "{}: stderr the notebook does not mean: {}".format(case.key, unexpected[:5])
    assert not notebook.error_texts(), "{}: the page shows stderr/errors".format(case.key)

    bars = notebook.progress_bars()
    assert len(bars) >= case.widgets, "{}: {} progress widget(s) shown, expected >= {}".format(
        case.key, len(bars), case.widgets)
    for bar in bars:
        assert "progress-bar-success" in bar["cls"] and bar["width"] == "100%", \
            "{}: a progress widget did not end complete: {}".format(case.key, bar)

    images = notebook.images()
    pngs = [o for _, o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= case.plots and len(pngs) >= case.plots, "{}: {} plot(s) shown, {} saved, expected >= {}".format(
        case.key, len(images), len(pngs), case.plots)
    for image in images:
        assert 200 <= image["w"] <= 4000 and 150 <= image["h"] <= 4000 and image["shown"] >= 100, \
            "{}: a plot of odd size {}".format(case.key, image)

    html_tables = [o for _, o in outputs if "<table" in "".join(o.get("data", {}).get("text/html", ""))]
    assert notebook.html_tables() >= case.tables and len(html_tables) >= case.tables, \
        "{}: {} HTML table(s), expected >= {}".format(case.key, notebook.html_tables(), case.tables)
    # A table that reached the page as text only (a DataFrame printed, a widget's text fallback).
    text_only = [o for _, o in outputs if o["output_type"] == "execute_result" and "text/html" not in o["data"]
                 and re.search(r"\n\s*\d+\s+\S+\s+\S+", "".join(o["data"].get("text/plain", "")))]
    assert not text_only, "{}: a table shown as text: {}".format(case.key, text_only[0]["data"]["text/plain"])

    recorded = results.read(str(saved))
    assert recorded.error is None, "{}: {}".format(case.key, recorded.error)
    assert recorded.runs or not case.records, "{}: the record cell recorded no run".format(case.key)


def _assert_one_stop(case, notebook, saved, words):
    """One error output, one short message (no traceback) containing ``words``."""
    errors = [(i, o) for i, o in _outputs(saved) if o["output_type"] == "error"]
    cells = json.loads(saved.read_text())["cells"]
    assert len(errors) == 1, "{}: {} error outputs, expected one: {}".format(case.key, len(errors), [
        (i, o["ename"], cells[i]["metadata"].get("execution")) for i, o in errors])
    shown = "\n".join(errors[0][1]["traceback"])
    assert len(errors[0][1]["traceback"]) == 1 and "Traceback" not in shown and "File \"" not in shown \
        and len(shown.splitlines()) <= 8, "{}: not one short message: {}".format(case.key, shown)
    on_page = notebook.error_texts()
    assert len(on_page) == 1 and "Traceback" not in on_page[0], on_page
    for word in words:
        assert word in on_page[0], "{}: {!r} not in the message shown: {}".format(case.key, word, on_page[0])


@pytest.mark.parametrize("case", CASES)
def test_small_parameters_typed_in_run_clean(case, lab, browser_context, artifacts):
    notebook, copy = _open_copy(lab, browser_context, case, "small")
    try:
        _type_parameters(notebook, copy, [(k, repr(v)) for k, v in case.parameters.items()])
        notebook.run_all(case.timeout)
        notebook.save()
        _assert_ran_clean(case, notebook, copy)
    finally:
        _finish(notebook, lab, artifacts, case, "small")


@pytest.mark.parametrize("case", CASES)
def test_one_bad_parameter_stops_with_one_message_naming_it(case, lab, browser_context, artifacts):
    name, value_text = case.bad
    notebook, copy = _open_copy(lab, browser_context, case, "bad")
    try:
        _type_parameters(notebook, copy, [(name, value_text)])
        notebook.run_all(300)
        notebook.save()
        _assert_one_stop(case, notebook, copy, ["ParameterError", "{} = {}".format(name, value_text.replace('"', "'"))])
        errors = [i for i, o in _outputs(copy) if o["output_type"] == "error"]
        assert errors == [_parameters_index(copy) + 1], "the check cell after the parameters stops the notebook"
    finally:
        _finish(notebook, lab, artifacts, case, "bad")


@pytest.mark.parametrize("case", CASES)
def test_run_all_with_the_defaults_runs_or_says_what_to_change(case, lab, browser_context, artifacts):
    notebook, copy = _open_copy(lab, browser_context, case, "defaults")
    try:
        notebook.run_all(case.defaults_timeout)
        notebook.save()
        if case.defaults == "runs":
            _assert_ran_clean(dataclasses.replace(case, **case.defaults_show), notebook, copy)
        else:
            _assert_one_stop(case, notebook, copy, case.defaults)
    finally:
        _finish(notebook, lab, artifacts, case, "defaults")
