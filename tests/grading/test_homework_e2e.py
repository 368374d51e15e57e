"""The homework end to end, as a student without a testbed account does it, and as one with logs does.

pia runs the lab book's notebooks portably (tests/grading/portable_student.py: `labkit sweep` and
`labkit run` at tiny sizes into runs/<testbed>/), writes her answers and hands it in: the default
rubric gives full marks, and every run says "portable: CPU". tess hands in the real testbed logs
of ../shared/fixtures/testbed-logs and gets full marks too, her runs labelled IPU, CS-2, SN30 and
GroqChip. A rubric that asks `evidence: testbed` refuses pia's runs, saying why; fab edits her
portable records in the homework's kernel and the grader's trusted re-reading rejects them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labkit.grading import sandbox
from labkit.grading.batch import grade_class
from labkit.grading.gradebook import read_gradebook
from tests.grading import classroom, portable_student

LIMITS = sandbox.Limits(notebook_s=300, cell_s=120, memory_bytes=4 << 30, nproc=128, fsize_bytes=64 << 20)

FABRICATED = """graphcore_runs = homework.runs_for(config, "graphcore")
for run in graphcore_runs:
    run.metrics["test_accuracy"] = 97.5
homework.record_runs("graphcore", graphcore_runs)"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(classroom.fixtures_dir()))
    return portable_student.make_runs(tmp_path_factory.mktemp("lab"))


@pytest.fixture(scope="module")
def graded(tmp_path_factory, lab, strongest_level):
    root = tmp_path_factory.mktemp("homework")
    subs = root / "submissions"
    portable_student.hand_in(subs, "pia", runs=lab)
    portable_student.hand_in(subs, "tess", logs=classroom.COMPLETE)
    portable_student.hand_in(subs, "fab", runs=lab, replace={"graphcore": FABRICATED})
    results = grade_class(str(subs), str(classroom.RUBRIC), str(root / "out"), workers=2, limits=LIMITS)
    # The same rubric, every check asking for testbed evidence.
    strict = root / "testbed_only.rubric.yml"
    text = classroom.RUBRIC.read_text().replace("evidence: any", "evidence: testbed")
    strict.write_text(text.replace("template: ai_testbeds.ipynb", "template: {}".format(classroom.HOMEWORK)))
    strict_subs = root / "strict"
    portable_student.hand_in(strict_subs, "pia", runs=lab)
    strict_results = grade_class(str(strict_subs), str(strict), str(root / "strict_out"), workers=1, limits=LIMITS)
    return {"results": results, "out": root / "out", "strict": strict_results["pia"]}


def _checks(result):
    return {c["name"]: c for c in result["checks"]}


def test_portable_runs_alone_get_full_marks(graded):
    pia = graded["results"]["pia"]
    assert pia["status"] == "ok", pia["reason"]
    failing = {c["name"]: c["reason"] for c in pia["checks"] if not c["passed"] and not c.get("skipped")}
    assert not failing
    assert pia["total"] == pia["max_total"] > 30
    assert {r["exercise"] for r in pia["runs"]} == {"graphcore/mnist", "cerebras/bert_large", "sambanova/bert_large",
                                                    "groq/bert_tiny"}
    assert {r["where"] for r in pia["runs"]} == {"portable: CPU"}
    checks = _checks(pia)
    assert checks["graphcore_learning_rates"]["where"] == "portable: CPU"
    assert "0.3 (portable: CPU)" in checks["graphcore_learning_rates"]["reason"]
    assert "max_seq_length=32 (portable: CPU)" in checks["groq_builds"]["reason"]
    assert checks["portable_reruns"]["skipped"]  # only with --reproduce (tests below)


def test_testbed_logs_grade_the_same(graded):
    tess = graded["results"]["tess"]
    assert tess["status"] == "ok", tess["reason"]
    assert tess["total"] == tess["max_total"] == graded["results"]["pia"]["max_total"]
    assert tess["where"] == "CS-2, GroqChip, IPU, SN30"
    assert _checks(tess)["portable_reruns"]["skipped"]


def test_gradebook_and_feedback_say_where_each_run_ran(graded):
    rows = {r["student"]: r for r in read_gradebook(str(graded["out"] / "gradebook.csv"))}
    assert rows["pia"]["where"] == "portable: CPU"
    assert rows["tess"]["where"] == "CS-2, GroqChip, IPU, SN30"
    html = (graded["out"] / "feedback" / "pia.html").read_text()
    assert "<b>portable: CPU</b> (a model of the exercise, not a measurement of the testbed)" in html
    assert "GroqChip" in (graded["out"] / "feedback" / "tess.html").read_text()


def test_the_executed_homework_labels_portable_runs(graded):
    import nbformat

    nb = nbformat.read(str(graded["out"] / "executed" / "pia.ipynb"), as_version=4)
    text = "\n".join(o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "ran the exercise's portable stand-in, not the GroqChip" in text
    assert "portable: CPU" in text
    figures = sum(1 for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {}))
    assert figures == 4


def test_a_testbed_only_rubric_refuses_portable_runs_and_says_why(graded):
    pia = graded["strict"]
    checks = _checks(pia)
    for name in ("graphcore_accuracy", "graphcore_learning_rates", "cerebras_batch_sizes", "sambanova_tasks",
                 "groq_accuracy", "groq_builds"):
        assert checks[name]["score"] == 0, name
        assert "asks for testbed evidence (evidence: testbed)" in checks[name]["reason"], checks[name]["reason"]
        assert "portable: CPU" in checks[name]["reason"]
    assert pia["total"] < pia["max_total"]


def test_records_edited_in_the_kernel_are_rejected_by_re_reading_the_notebooks(graded):
    checks = _checks(graded["results"]["fab"])
    assert checks["graphcore_accuracy"]["score"] == 0
    assert re.search(r"recorded test_accuracy = 97\.5 but the grader recomputed [\d.]+", checks["graphcore_accuracy"]["reason"])
    assert checks["graphcore_learning_rates"]["score"] == 0
    assert checks["cerebras_batch_sizes"]["passed"]  # the other sections were not touched


def test_a_student_with_nothing_is_told_what_to_run_and_sees_no_empty_figure(graded):
    import nbformat

    nb = nbformat.read(str(graded["out"] / "executed" / "tess.ipynb"), as_version=4)
    assert nb is not None
    jon = Path(graded["out"]).parent / "nothing"
    from labkit.execute import run_notebook

    portable_student.hand_in(jon.parent, jon.name)
    outcome = run_notebook(str(jon / "ai_testbeds.ipynb"), str(jon / "out.ipynb"), cwd=str(jon))
    assert outcome.status == "complete", outcome.error
    done = nbformat.read(str(jon / "out.ipynb"), as_version=4)
    outputs = [o for c in done.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if "image/png" in o.get("data", {})]
    text = "".join(o.get("text", "") for o in outputs)
    for testbed in ("graphcore", "cerebras", "sambanova", "groq"):
        assert "--out runs/{}".format(testbed) in text or "runs/{}/".format(testbed) in text
        assert "logs/{}/".format(testbed) in text
