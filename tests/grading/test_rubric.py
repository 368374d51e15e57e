"""Rubric loading (errors name the line) and the checks' scoring, on evidence built by hand."""

from __future__ import annotations

import os
import textwrap

import nbformat
import pytest

from labkit.grading.checks.evidence import Evidence
from labkit.grading.checks.rubric import RubricError, answer_text, load_rubric
from labkit.results import Run
from tests.grading import notebooks as N

HERE = os.path.dirname(os.path.abspath(__file__))


def write_rubric(tmp_path, text: str) -> str:
    path = tmp_path / "r.yml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_toy_rubric_loads_with_every_check_type():
    rubric = load_rubric(os.path.join(HERE, "rubric_toy.yml"))
    assert [c.type for c in rubric.checks] == ["record", "runs", "answer", "reproduce", "no_error", "record"]
    assert rubric.checks[-1].hidden and not rubric.checks[0].hidden
    assert rubric.names[0] == "score_default"


@pytest.mark.parametrize("body, line, words", [
    ("""\
     checks:
       - name: a
         type: recordz
         points: 1
     """, 3, ["unknown check type 'recordz'", "record, runs, answer, reproduce, rerun, no_error"]),
    ("""\
     checks:
       - name: a
         type: no_error
         points: 1
       - name: b
         type: answer
         points: 2
     """, 5, ["check 'b' (answer): missing field 'heading'"]),
    ("""\
     checks:
       - name: a
         type: record
         metric: acc
     """, 2, ["check 'a': missing field 'points'"]),
    ("""\
     checks:
       - name: a
         type: runs
         points: 1
         exercise: x
         parameter: lr
         atleast: 3
     """, 7, ["unknown field 'atleast'", "at_least"]),
    ("""\
     checks:
       - name: a
         type: record
         points: two
         metric: acc
     """, 4, ["field 'points' must be a number, not 'two'"]),
    ("""\
     title: t
     check: []
     """, 2, ["unknown key 'check'"]),
    ("""\
     checks:
       - name: a
         type: no_error
         points: 1
       - name: a
         type: no_error
         points: 1
     """, 5, ["'a' is used twice (first at line 2)"]),
    ("""\
     checks:
       - name: a
         type: record
         points: 1
         metric: acc
         partial: 3
     """, 6, ["partial is a fraction"]),
])
def test_rubric_errors_name_the_line(tmp_path, body, line, words):
    path = write_rubric(tmp_path, body)
    with pytest.raises(RubricError) as err:
        load_rubric(path)
    message = str(err.value)
    assert message.startswith("{}, line {}:".format(path, line)), message
    for word in words:
        assert word in message


def test_bad_yaml_and_missing_file_are_clear(tmp_path):
    with pytest.raises(RubricError, match="not valid YAML"):
        load_rubric(write_rubric(tmp_path, "checks: [\n"))
    with pytest.raises(RubricError, match="no such rubric file"):
        load_rubric(str(tmp_path / "nope.yml"))


def records(*runs: Run) -> dict:
    return {"run_{}".format(i): r.to_dict() for i, r in enumerate(runs)}


def toy(score: float, rate: float = 0.3) -> Run:
    run = Run("toy/converge", params={"steps": 10, "rate": rate})
    run.add_metric("score", score)
    return run


def grade(tmp_path, body: str, evidence: Evidence):
    return load_rubric(write_rubric(tmp_path, body)).grade(evidence)


def test_record_range_and_partial_credit(tmp_path):
    body = """\
    checks:
      - {name: acc, type: record, points: 4, metric: score, min: 90, max: 100, partial: 0.25, exercise: "toy/*"}
    """
    inside = grade(tmp_path, body, Evidence(None, {}, records(toy(95.0)), "ok"))[0]
    outside = grade(tmp_path, body, Evidence(None, {}, records(toy(50.0)), "ok"))[0]
    missing = grade(tmp_path, body, Evidence(None, {}, {}, "ok"))[0]
    assert (inside.score, inside.passed) == (4, True)
    assert outside.score == 1 and "score = 50 is outside [90, 100]" in outside.reason
    assert missing.score == 0 and "recorded the metric 'score'" in missing.reason


def test_submitted_records_never_count_for_record_checks(tmp_path):
    body = "checks:\n  - {name: acc, type: record, points: 1, metric: score, min: 90}\n"
    result = grade(tmp_path, body, Evidence(None, records(toy(99.0)), {}, "ok"))[0]
    assert result.score == 0


def test_runs_needs_distinct_values_and_the_default(tmp_path):
    body = """\
    checks:
      - {name: lr, type: runs, points: 3, exercise: toy/converge, parameter: rate, at_least: 3, default: 0.3}
    """
    full = grade(tmp_path, body, Evidence(None, {}, records(toy(1, 0.3), toy(1, 0.6), toy(1, 0.1)), "ok"))[0]
    two = grade(tmp_path, body, Evidence(None, {}, records(toy(1, 0.3), toy(1, 0.6), toy(1, 0.3)), "ok"))[0]
    no_default = grade(tmp_path, body, Evidence(None, {}, records(toy(1, 0.5), toy(1, 0.6), toy(1, 0.1)), "ok"))[0]
    assert full.score == 3
    assert two.score == 2 and "2 distinct value(s)" in two.reason
    assert no_default.score == 2 and "the default 0.3 is not among them" in no_default.reason


def test_answer_words_template_and_heading(tmp_path):
    body = 'checks:\n  - {name: q1, type: answer, points: 2, heading: "Question 1", min_words: 10, template_text: "*Write your answer here.*"}\n'
    cases = {
        N.GOOD_ANSWER: 2,
        None: 0,  # the template's text
        "Faster.": 0.2,  # one word of ten
        "*Write your answer here.* The rate scales each step so larger is faster overall here, clearly.": 2,
    }
    for answer, score in cases.items():
        result = grade(tmp_path, body, Evidence(N.homework(answer=answer), {}, {}, "ok"))[0]
        assert result.score == score, (answer, result)
    nb = N.homework()
    nb.cells = [c for c in nb.cells if "Question 1" not in c.source]
    assert "no heading 'Question 1'" in grade(tmp_path, body, Evidence(nb, {}, {}, "ok"))[0].reason


def test_answer_text_stops_at_next_heading_or_code():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("## Question 2\nFirst line.\n### Question 3\nOther."),
        nbformat.v4.new_markdown_cell("More for three."),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_markdown_cell("not an answer"),
    ])
    assert answer_text(nb, "Question 2") == "First line."
    assert answer_text(nb, "question 3") == "Other.\nMore for three."  # case-insensitive, across cells
    assert answer_text(nb, "Question 9") is None


def test_reproduce_compares_submitted_with_fresh_within_tolerance(tmp_path):
    body = "checks:\n  - {name: rep, type: reproduce, points: 2, tolerance: 0.01}\n"
    same = Evidence(None, records(toy(97.0), toy(99.0, 0.6)), records(toy(97.5), toy(99.0, 0.6)), "ok", reproduce=True)
    edited = Evidence(None, records(toy(99.9), toy(99.0, 0.6)), records(toy(97.0), toy(99.0, 0.6)), "ok", reproduce=True)
    off = Evidence(None, records(toy(99.9)), records(toy(97.0)), "ok", reproduce=False)
    assert grade(tmp_path, body, same)[0].score == 2
    result = grade(tmp_path, body, edited)[0]
    assert result.score == 1 and "submitted 99.9 vs 97" in result.reason
    skipped = grade(tmp_path, body, off)[0]
    assert skipped.skipped and "--reproduce" in skipped.reason


def test_no_error_reports_the_execution_reason(tmp_path):
    body = "checks:\n  - {name: clean, type: no_error, points: 1}\n"
    assert grade(tmp_path, body, Evidence(None, {}, {}, "ok"))[0].score == 1
    failed = grade(tmp_path, body, Evidence(None, {}, {}, "timeout", "a cell ran past the per-cell time limit of 8 s"))[0]
    assert failed.score == 0 and "per-cell time limit" in failed.reason
