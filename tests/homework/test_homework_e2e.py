"""The homework end to end, as a student without a testbed account does it, and as one with logs does.

pia runs the lab book's notebooks portably (tests/homework/portable_student.py: `labkit sweep` and
`labkit run` at tiny sizes into runs/<testbed>/), writes her answers and hands it in: the default
rubric gives full marks, and every run says "portable: CPU". tess hands in the real testbed logs
of ../shared/fixtures/testbed-logs and gets full marks too, her runs labelled IPU, CS-2, SN30 and
GroqChip. A rubric that asks `evidence: testbed` refuses pia's runs, saying why; fab edits her
portable records in the homework's kernel and the grader's trusted re-reading rejects them.

The portable runs take a few minutes on a quiet 2-core machine; to grade again without remaking
them, point LABKIT_TEST_PORTABLE_RUNS at a runs/ folder made by portable_student.make_runs.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.homework import classroom, portable_student

LIMITS = levels.Limits(notebook_s=300, cell_s=120, memory_bytes=4 << 30, nproc=128, fsize_bytes=64 << 20)

FABRICATED = """graphcore_runs = homework.runs_for(config, "graphcore")
for fake in graphcore_runs:
    fake.metrics["test_accuracy"] = 97.5
homework.record_runs("graphcore", graphcore_runs)"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(classroom.fixtures_dir()))
    reuse = os.environ.get("LABKIT_TEST_PORTABLE_RUNS")  # runs/ made earlier by portable_student.make_runs
    if reuse:
        return Path(reuse)
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


def _run_as_the_student(folder: Path):
    """The hand-in executed as the student runs it (JupyterLab's inline plots, not the grader's sandbox)."""
    import nbformat

    from labkit.execute import run_notebook

    outcome = run_notebook(str(folder / "ai_testbeds.ipynb"), str(folder / "out.ipynb"), cwd=str(folder))
    assert outcome.status == "complete", outcome.error
    done = nbformat.read(str(folder / "out.ipynb"), as_version=4)
    outputs = [o for c in done.cells if c.cell_type == "code" for o in c.outputs]
    return [o for o in outputs if "image/png" in o.get("data", {})], "".join(o.get("text", "") for o in outputs)


def test_the_student_sees_one_plot_per_testbed_or_what_to_run_and_no_empty_figure(lab, tmp_path):
    figures, text = _run_as_the_student(portable_student.hand_in(tmp_path, "pia", runs=lab))
    assert len(figures) == 4
    assert "No runs of" not in text
    figures, text = _run_as_the_student(portable_student.hand_in(tmp_path, "nothing"))
    assert figures == []
    for testbed in ("graphcore", "cerebras", "sambanova", "groq"):
        assert "No runs of {}/".format(testbed) in text
        assert "runs/{}".format(testbed) in text and "logs/{}/".format(testbed) in text


RERUN_RUBRIC = """title: re-run
checks:
  - name: reruns
    type: rerun
    points: 2
    exercise: "cerebras/*"
  - name: clean
    type: no_error
    points: 1
"""


def _edit_sweep_consistently(folder: Path, metric: str, factor: float) -> None:
    """Change ``metric`` in every run notebook's record AND in results.csv: the files agree, the numbers are made up."""
    import csv

    import nbformat

    from labkit.results import SCRAP_MIME

    changed = {}
    for path in sorted((folder / "runs").glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        for cell in nb.cells:
            for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
                payload = output.get("data", {}).get(SCRAP_MIME)
                if payload and payload.get("name") == "run":
                    payload["data"]["metrics"][metric] *= factor
                    changed["runs/" + path.name] = payload["data"]["metrics"][metric]
        nbformat.write(nb, str(path))
    table = folder / "results.csv"
    with open(str(table), newline="") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        row[metric] = repr(changed[row["notebook"]])
    with open(str(table), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def test_reproduce_re_runs_a_portable_run_and_catches_consistent_edits(lab, tmp_path, strongest_level):
    from labkit.testbeds.homework import evidence

    subs = tmp_path / "submissions"
    portable_student.hand_in(subs, "pia", runs=lab)
    tam = portable_student.hand_in(subs, "tam", runs=lab)
    _edit_sweep_consistently(tam / "runs" / "cerebras", "final_loss", 0.9)
    # The edit is consistent: the trusted re-reading alone cannot see it...
    edited = sorted((tam / "runs" / "cerebras" / "runs").glob("*.ipynb"))[0]
    assert evidence.trusted_record({"evidence": str(edited)})["metrics"]["final_loss"] > 0
    rubric = tmp_path / "rerun.yml"
    rubric.write_text(RERUN_RUBRIC)
    results = grade_class(str(subs), str(rubric), str(tmp_path / "out"), workers=2, limits=LIMITS, reproduce=True)
    pia, tam_result = _checks(results["pia"])["reruns"], _checks(results["tam"])["reruns"]
    assert pia["passed"], pia["reason"]
    assert "cerebras/bert_large: runs/cerebras/runs/batch_size=" in pia["reason"]
    assert "with the lab book's notebook agrees (timings skipped)" in pia["reason"]
    # ...re-running the smallest run does.
    assert tam_result["score"] == 0
    assert "re-running runs/cerebras/runs/batch_size=" in tam_result["reason"]
    assert "metric final_loss: expected" in tam_result["reason"]


def test_a_sweep_whose_results_csv_disagrees_with_its_notebooks_does_not_count(lab, tmp_path, capsys):
    import csv
    import shutil

    from labkit.testbeds.homework import evidence, exercise

    folder = tmp_path / "runs" / "sambanova"
    shutil.copytree(str(lab / "sambanova"), str(folder))
    table = folder / "results.csv"
    with open(str(table), newline="") as f:
        rows = list(csv.DictReader(f))
    rows[1]["e2e_train_time"] = "0.5"
    with open(str(table), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    found = evidence.sweep_runs(str(folder))
    assert [run is not None for _path, run, _problem in found] == [True, False, True]
    assert "e2e_train_time = 0.5 in results.csv but" in found[1][2]
    with pytest.raises(evidence.EvidenceError, match="disagrees with the run's notebook"):
        evidence.trusted_record({"evidence": found[1][0]})
    runs = exercise.runs_from_lab_book(str(tmp_path / "runs"), "sambanova")
    assert [r.params["ntasks"] for r in runs] == [1, 3]
    assert "not counted: " in capsys.readouterr().out
