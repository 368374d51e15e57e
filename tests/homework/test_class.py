"""A realistic class of 15 graded with the real homework rubric gives the expected gradebook.

The class (tests/homework/classroom.py) is built from the homework notebook and real testbed
logs; each student's comment there says why their row of class/expected_gradebook.csv holds
those numbers: complete, partial, wrong answers, edited outputs, typed-in records, a
monkeypatched log reader, an endless loop, a sandbox escape attempt, a killed kernel, the
untouched template, compile-only logs and a broken file.
"""

from __future__ import annotations

import csv
import os

import pytest

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.homework import classroom
from labkit.grading.reports.class_page import read_class
from tests.homework.class_page_checks import check_class_page

LIMITS = levels.Limits(notebook_s=60, cell_s=10, memory_bytes=2 << 30, nproc=64, fsize_bytes=16 << 20)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, strongest_level):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(classroom.fixtures_dir()))
    root = tmp_path_factory.mktemp("class")
    students = classroom.build_class(root / "submissions")
    results = grade_class(str(root / "submissions"), str(classroom.RUBRIC), str(root / "out"), workers=2,
                          limits=LIMITS, reproduce=True)
    return {"students": students, "results": results, "out": root / "out", "level": strongest_level}


def test_gradebook_matches_the_expected_one(graded):
    with open(str(classroom.EXPECTED), newline="") as f:
        expected = list(csv.DictReader(f))
    rows = read_gradebook(str(graded["out"] / "gradebook.csv"))
    assert len(graded["students"]) >= 12
    assert [r["student"] for r in rows] == graded["students"]
    for want, got in zip(expected, rows):
        differing = {k: (v, got[k]) for k, v in want.items() if got[k] != v}
        assert not differing, "{}: expected vs got {}; reasons: {}".format(
            want["student"], differing, [(c["name"], c["reason"]) for c in graded["results"][want["student"]]["checks"]
                                         if c["name"] in differing])
    assert {r["isolation"] for r in rows} == {rows[0]["isolation"]}
    assert rows[0]["isolation"].startswith(graded["level"])


def test_reasons_say_what_happened(graded):
    results = graded["results"]
    by = {s: {c["name"]: c for c in r["checks"]} for s, r in results.items()}
    assert "the grader read 0.01" in by["fay"]["graphcore_accuracy"]["reason"]
    assert "recomputed 98.88" in by["lou"]["graphcore_accuracy"]["reason"]
    assert "submitted 99.9 vs 98.88" in by["eve"]["reproduces"]["reason"]
    assert "still the template's text" in by["dan"]["q1_graphcore"]["reason"]
    assert results["gus"]["status"] == "timeout" and results["ivy"]["status"] == "kernel died"
    assert "PermissionError" in results["hal"]["reason"]
    assert results["max"]["status"] == "unreadable"


def test_feedback_and_executed_notebooks_for_everyone(graded):
    feedback = sorted(os.listdir(str(graded["out"] / "feedback")))
    assert feedback == [s + ".html" for s in graded["students"]]
    executed = sorted(os.listdir(str(graded["out"] / "executed")))
    assert executed == [s + ".ipynb" for s in graded["students"] if s != "max"]
    html = (graded["out"] / "feedback" / "ada.html").read_text()
    checks = html.split("<table>")[1]  # the checks, not the duplicate note (which names ada's own log files)
    assert "diverged_run_seen" in checks and "diverge" not in checks.replace("diverged_run_seen", "")
    assert "39 / 39" in html


def test_the_class_page_shows_every_figure_and_names_the_planted_misreadings(graded, tmp_path):
    # ned counted the compile time in his epoch times, oli recorded CPU runs as CS-2 logs; fay and lou
    # typed or patched their records (far from the class is fair there, with no misreading to name).
    seen = check_class_page(graded["out"], tmp_path, planted={
        "ned": "compile time read as training time", "oli": "a portable run labelled as a testbed's"},
        may_be_far={"fay", "lou", "cleo"}, exercises=("graphcore/mnist", "cerebras/bert_large",
                                                     "sambanova/bert_large", "groq/bert_tiny"), name="class_2024")
    assert {"ned", "oli"} <= set(seen["far"])
    # cleo handed in the course's sample output (upstream, 1112.94 samples/s at batch 1024) beside her own:
    # honest, and truly far from the class's own CS-2 runs (4884.95): the page shows it, naming no misreading
    cleo = [o for o in read_class(str(graded["out"])).outliers if o.row["student"] == "cleo"]
    assert [(o.row["exercise"], o.row["value"], o.misreadings) for o in cleo] in (
        [], [("cerebras/bert_large", 1112.94, [])])
