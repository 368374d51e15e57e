"""The class page (DIR/class.html) and `labkit class DIR [--csv FILE]` on a graded folder written directly.

The folder (tests/grading/class_fixtures.py) holds both offerings' runs of 30 students, four of them
planted one per misreading; the real graded classes check the same page end to end
(tests/homework/test_class.py, test_class_2025.py) and in chromium (tests/browser/test_class_page.py).
"""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest

from labkit import results
from labkit.cli import main as labkit
from labkit.grading.reports.class_page import COLUMNS, RULE, class_html, figure_id, read_class
from tests.grading.class_fixtures import PLANTED, synthetic_class


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("class") / "out"
    synthetic_class(out, 30)
    return out


def test_each_planted_misreading_is_named_and_no_honest_student(folder):
    data = read_class(str(folder))
    named = {}
    for outlier in data.outliers:
        named.setdefault(outlier.row["student"], set()).update(outlier.misreadings)
    assert set(named) == set(PLANTED.values())  # every planted student, and no one else
    for misreading, student in PLANTED.items():
        assert any(m.startswith(misreading) for m in named[student]), (student, named[student])
    compile_time = next(o for o in data.outliers if o.row["student"] == PLANTED["compile time read as training time"])
    assert compile_time.row["metric"] == "mean_epoch_time" and compile_time.row["value"] == 30.0
    assert "less its compile time 28 s is 2 s" in compile_time.misreadings[0]


def test_the_page_shows_every_figure_the_rule_and_each_check(folder):
    data = read_class(str(folder))
    page = class_html(data)
    for exercise, metric, endpoint in (("cerebras/llama2_7b", "global_rate", ""),
                                       ("graphcore/mnist", "test_accuracy", ""),
                                       ("groq/bert_tiny", "groq_e2e_latency_ms", ""),
                                       ("sambanova/inference", "ttft_median", "metis"),
                                       ("sambanova/inference", "output_throughput", "sophia")):
        assert 'id="{}"'.format(figure_id(exercise, metric, endpoint)) in page
    assert RULE in page.replace("&#x27;", "'")
    for check in ("cs3_global_rate", "inference_both_endpoints", "q1_cs3", "runs_clean"):
        assert "id='check-{}'".format(check) in page
    assert "Commonest failure: global_rate = " in page  # the summary's commonest failure, per check
    assert "log logs/cerebras/mytest.log: s005, s006" in page  # evidence two students handed in
    # a run of two endpoints is one run per endpoint: both are plotted, neither pools the other
    assert {r["run"] for r in data.rows if r["student"] == "s000" and r["exercise"] == "sambanova/inference"} == \
        {"sambanova_1:metis", "sambanova_1:sophia"}


def test_the_page_is_self_contained(folder):
    page = class_html(read_class(str(folder)))
    assert "<script" not in page and "<link" not in page and "@import" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert page.count("<svg") == page.count("</svg>") > 15


def test_labkit_class_draws_the_same_page_and_writes_the_long_table(folder, tmp_path, capsys):
    before = (folder / "class.html").read_text() if (folder / "class.html").exists() else None
    table = tmp_path / "long.csv"
    assert labkit(["class", str(folder), "--csv", str(table)]) == 0
    assert "30 students" in capsys.readouterr().out
    page = (folder / "class.html").read_text()
    assert page == class_html(read_class(str(folder))) and (before is None or before == page)
    frame = pd.read_csv(table)
    assert tuple(frame.columns) == COLUMNS
    # every row's value is the figure of the record it came from, read back from the executed notebook
    checked = 0
    for row in frame.itertuples():
        record = results.read(folder / "executed" / (row.student + ".ipynb")).records[row.run.split(":")[0]]
        if ":" in row.run:
            prefix = {"ttft_median": "ttft_median_time", "tpot_median": "tpot_median_time",
                      "e2el_median": "e2el_median_latency", "output_throughput": "output_throughput"}[row.metric]
            series = record["series"]["{}:{}".format(prefix, row.endpoint)]
            expected = series["y"][series["x"].index(float(row.parameter_value))]
        else:
            expected = record["metrics"][row.metric]
        assert row.value == expected, row
        checked += 1
    assert checked == len(frame) > 500
    far = frame[frame["flags"].fillna("").str.startswith("far from the class")]
    assert set(far["student"]) == set(PLANTED.values())


def test_a_folder_that_was_not_graded_is_refused_clearly(tmp_path, capsys):
    assert labkit(["class", str(tmp_path / "missing")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert labkit(["class", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds no grading state" in err and "state.json" in err and "labkit grade" in err
    (tmp_path / ".labkit-grade").mkdir()
    (tmp_path / ".labkit-grade" / "state.json").write_text("{not json")
    assert labkit(["class", str(tmp_path)]) == 2
    assert "not a grading state labkit can read" in capsys.readouterr().err


def test_a_students_hostile_text_is_shown_as_text(tmp_path):
    out = tmp_path / "out"
    synthetic_class(out, 6)
    state = json.loads((out / ".labkit-grade" / "state.json").read_text())
    state["results"]["s000"]["checks"][0].update(score=0, passed=False, reason="<script>alert(1)</script>")
    (out / ".labkit-grade" / "state.json").write_text(json.dumps(state))
    page = class_html(read_class(str(out)))
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert io.StringIO(page).read().startswith("<!DOCTYPE html>")


def test_odd_records_are_drawn_or_left_out_never_a_crash(tmp_path):
    from labkit.grading.reports.class_page import run_rows
    odd = {"exercise": "sambanova/inference", "params": {"concurrency": [1, 2]}, "notes": ["x"] * 1000,
           "metrics": {"ttft_median": float("nan"), "e2el_median": -1.0, "output_throughput": True},
           "series": dict({"ttft_median_time:e{}".format(i): {"x": [1], "y": [0.5]} for i in range(50)},
                          **{"tpot_median_time:bad": {"x": 3, "y": "no"}, "output_throughput:<b>": {"x": [1], "y": [2.0]}})}
    rows = run_rows("s", "sambanova_1", odd, "Metis/Sophia")
    assert len([r for r in rows if r["metric"] == "ttft_median"]) == 8  # endpoints per figure are capped
    assert not [r for r in rows if r["metric"] == "tpot_median"]  # a series that is not two lists is left out
    assert [r["endpoint"] for r in rows if r["metric"] == "output_throughput"] == ["<b>"]
    assert run_rows("s", "r", {"exercise": "cerebras/llama2_7b", "metrics": {"global_rate": float("inf")}}, "CS-3") == []
