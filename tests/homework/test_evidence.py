"""Where a run ran, what evidence a rubric check accepts, and the trusted reading of lab-book notebooks.

The notebooks read here are the golden executed lab-book notebooks (real papermill runs of the
exercises, tests/golden/), copied and then damaged the way a hand-in can be.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

import labkit.logs
from labkit.grading.checks.evidence import Evidence
from labkit.grading.checks.rubric import RubricError, load_rubric
from labkit.results import Run
from labkit.testbeds.homework import evidence
from labkit.testbeds.homework.hardware import where_it_ran
from tests.homework import classroom

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _log_run(key: str) -> Run:
    testbed, filename = classroom.LOGS[key]
    return labkit.logs.read(str(classroom.fixtures_dir() / testbed / filename)).runs[0]


@pytest.mark.parametrize("key, label", [("gc_lr0.01", "IPU"), ("cb_1024", "CS-2"), ("sn_32", "SN30"),
                                        ("gq_upstream", "GroqChip")])
def test_testbed_logs_are_labelled_with_their_hardware(key, label):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found")
    assert where_it_ran(_log_run(key)) == label


def test_portable_runs_are_labelled_with_their_stand_in():
    run, _facts = evidence.notebook_run(str(GOLDEN / "sambanova" / "bert_large.ipynb"))
    assert run.source == "portable" and where_it_ran(run) == "portable: CPU"
    assert where_it_ran(run.to_dict()) == "portable: CPU"  # a recorded dict too
    run.environment["device"] = "cuda:0"
    assert where_it_ran(run) == "portable: GPU"
    groq = Run("groq/bert_tiny", source="portable", metrics={"cpu_accuracy": 90.0, "cuda_accuracy": 90.0})
    assert where_it_ran(groq) == "portable: GPU"
    assert where_it_ran(Run("groq/bert_tiny", source="testbed", metrics={"groq_accuracy": 90.0})) == "GroqChip"
    assert where_it_ran(Run("graphcore/mnist", source="testbed", params={"device": "ipu"})) == "IPU"
    assert where_it_ran(Run("graphcore/mnist", params={"device": "mps"})) == "portable: GPU"


def _copy(tmp_path: Path, key: str) -> Path:
    target = tmp_path / (key.replace("/", "_") + ".ipynb")
    shutil.copyfile(str(GOLDEN / (key + ".ipynb")), str(target))
    return target


def _edit(path: Path, change) -> None:
    nb = nbformat.read(str(path), as_version=4)
    change(nb)
    nbformat.write(nb, str(path))


def test_a_lab_book_notebook_is_read_with_its_papermill_facts(tmp_path):
    path = _copy(tmp_path, "graphcore/mnist")
    run, facts = evidence.notebook_run(str(path))
    assert run.exercise == "graphcore/mnist" and facts["parameters"]["epochs"] == 2
    trusted = evidence.trusted_record({"evidence": str(path)})
    assert trusted["metrics"] == run.metrics and trusted["params"]["learning_rate"] == 0.03


@pytest.mark.parametrize("spec", ["labkit.testbeds.graphcore:SPEC", "labkit.testbeds.graphcore:MNIST_SPEC"])
def test_lab_book_notebooks_name_their_spec_by_its_new_or_its_older_name(tmp_path, spec):
    path = _copy(tmp_path, "graphcore/mnist")
    _edit(path, lambda nb: nb.metadata["labkit"].update(spec=spec))
    assert evidence.notebook_run(str(path))[0].exercise == "graphcore/mnist"


def test_a_notebook_that_does_not_hold_what_ran_is_refused(tmp_path):
    path = _copy(tmp_path, "sambanova/bert_large")

    def claim_other_parameters(nb):
        nb.metadata["papermill"]["parameters"]["ntasks"] = 8
    _edit(path, claim_other_parameters)
    with pytest.raises(evidence.EvidenceError, match=r"ran with ntasks = 8 but its record says 2"):
        evidence.notebook_run(str(path))

    path = _copy(tmp_path, "cerebras/bert_large")

    def add_error(nb):
        last = [c for c in nb.cells if c.cell_type == "code"][-1]
        last.outputs.append(nbformat.v4.new_output("error", ename="RuntimeError", evalue="out of memory", traceback=[]))
    _edit(path, add_error)
    with pytest.raises(evidence.EvidenceError, match="did not run to the end .RuntimeError: out of memory"):
        evidence.notebook_run(str(path))

    with pytest.raises(evidence.EvidenceError, match="not an executed lab-book notebook of a homework exercise"):
        evidence.notebook_run(str(_copy(tmp_path, "comparison/ipu_vs_gpu")))
    with pytest.raises(evidence.EvidenceError, match="no such notebook"):
        evidence.notebook_run(str(tmp_path / "missing.ipynb"))


# -- what a check accepts ---------------------------------------------------------------------------

def _rubric(tmp_path: Path, body: str):
    path = tmp_path / "r.yml"
    path.write_text("title: t\nchecks:\n" + body)
    return load_rubric(str(path))


CHECKS = """  - name: tasks
    type: runs
    points: 3
    exercise: sambanova/bert_large
    parameter: ntasks
    at_least: 3
{extra}  - name: time
    type: record
    points: 2
    exercise: sambanova/bert_large
    metric: e2e_train_time
    min: 0.1
{extra}"""


def _runs(testbed_tasks, portable_tasks):
    records = {}
    for number, n in enumerate(testbed_tasks, 1):
        records["log_{}".format(number)] = Run("sambanova/bert_large", source="log", params={"ntasks": n},
                                               metrics={"e2e_train_time": 600.0}).to_dict()
    for number, n in enumerate(portable_tasks, 1):
        records["portable_{}".format(number)] = Run("sambanova/bert_large", source="portable",
                                                    params={"ntasks": n, "device": "cpu"},
                                                    metrics={"e2e_train_time": 2.0}).to_dict()
    return Evidence(None, {}, records, "ok")


def _grade(rubric, evidence_):
    return {c.name: c for c in rubric.grade(evidence_)}


def test_evidence_any_counts_portable_runs_in_full(tmp_path):
    graded = _grade(_rubric(tmp_path, CHECKS.format(extra="    evidence: any\n")), _runs([], [1, 2, 4]))
    assert graded["tasks"].score == 3 and graded["time"].score == 2
    assert graded["tasks"].where == "portable: CPU"
    assert "1 (portable: CPU), 2 (portable: CPU), 4 (portable: CPU)" in graded["tasks"].reason


def test_evidence_testbed_refuses_portable_runs_with_the_reason(tmp_path):
    rubric = _rubric(tmp_path, CHECKS.format(extra="    evidence: testbed\n"))
    graded = _grade(rubric, _runs([], [1, 2, 4]))
    assert graded["tasks"].score == 0 and graded["time"].score == 0
    for check in graded.values():
        assert "3 portable run(s) not counted" in check.reason
        assert "this check asks for testbed evidence (evidence: testbed)" in check.reason
        assert "'portable_1' (portable: CPU)" in check.reason
    graded = _grade(rubric, _runs([16, 32], [1, 2, 4]))  # testbed runs still count
    assert graded["tasks"].score == 2 and graded["time"].score == 2 and graded["time"].where == "SN30"


def test_portable_points_cap_what_portable_runs_alone_earn(tmp_path):
    rubric = _rubric(tmp_path, CHECKS.format(extra="    portable_points: 1\n"))
    graded = _grade(rubric, _runs([], [1, 2, 4]))
    assert graded["tasks"].score == 1 and graded["time"].score == 1
    assert "portable runs earn at most 1 of the 3 points" in graded["tasks"].reason
    assert "a portable run earns 1 of the 2 points" in graded["time"].reason
    graded = _grade(rubric, _runs([16, 32], [1]))  # two testbed values (2 of 3) beat three values capped at 1
    assert graded["tasks"].score == 2 and graded["time"].score == 2
    graded = _grade(rubric, _runs([16, 32, 8], []))
    assert graded["tasks"].score == 3


def test_metric_and_parameter_alternatives(tmp_path):
    rubric = _rubric(tmp_path, """  - name: acc
    type: record
    points: 2
    exercise: groq/bert_tiny
    metric: [groq_accuracy, cpu_accuracy]
    min: 50
  - name: builds
    type: runs
    points: 2
    exercise: groq/bert_tiny
    parameter: [build_name, max_seq_length]
""")
    records = {"a": Run("groq/bert_tiny", source="log", params={"build_name": "bert_tiny"},
                        metrics={"groq_accuracy": 88.0, "cpu_accuracy": 88.0}).to_dict(),
               "b": Run("groq/bert_tiny", params={"max_seq_length": 32}, metrics={"cpu_accuracy": 86.0}).to_dict()}
    graded = _grade(rubric, Evidence(None, {}, records, "ok"))
    assert graded["acc"].score == 2 and "groq_accuracy = 88" in graded["acc"].reason
    assert graded["builds"].score == 2
    assert "build_name=bert_tiny (GroqChip), max_seq_length=32 (portable: CPU)" in graded["builds"].reason


@pytest.mark.parametrize("extra, words", [
    ("    evidence: testbeds\n", ["evidence 'testbeds'", "allowed: any, testbed"]),
    ("    portable_points: 5\n", ["portable_points must be between 0 and the check's points (3)"]),
    ("    evidence: testbed\n    portable_points: 1\n", ["portable_points has no effect with evidence: testbed"]),
])
def test_bad_evidence_options_name_the_line(tmp_path, extra, words):
    with pytest.raises(RubricError) as err:
        _rubric(tmp_path, CHECKS.format(extra=extra))
    assert ", line 9:" in str(err.value) or ", line 10:" in str(err.value), str(err.value)
    for word in words:
        assert word in str(err.value)


def test_the_default_rubric_accepts_any_evidence_and_reads_it_again():
    rubric = load_rubric(str(classroom.RUBRIC))
    for check in rubric.checks:
        if check.type in ("record", "runs"):
            assert check.options["evidence"] == "any", check.name
            assert check.options["recompute"] == "labkit.grading.recompute:from_evidence", check.name
    assert [c.name for c in rubric.checks if c.type == "rerun"] == ["portable_reruns"]
    assert json.loads(json.dumps(rubric.names))[-1] == "portable_reruns"


def test_the_homeworks_own_record_is_an_overview_of_the_runs_it_gathered(monkeypatch, capsys):
    from labkit.testbeds import homework
    from labkit.testbeds.homework.homeworks import is_overview

    monkeypatch.chdir(str(GOLDEN / "homework"))  # its runs/: the portable runs a student hands in
    config = homework.SPEC.validate({})
    assert "- graphcore: no log folder logs/graphcore; 3 notebook(s) in runs/graphcore" in str(homework.plan(config))
    run = homework.run_exercise(config)
    assert run.exercise == "homework/ai_testbeds" and is_overview(run) and run.metrics == {"graphcore_runs": 3, "cerebras_runs": 3,
                                                                 "sambanova_runs": 3, "groq_runs": 2}
    assert [r.exercise for r in homework.runs_of("groq", run)] == ["groq/bert_tiny"] * 2
    (overview,) = homework.show(run)  # outside a kernel: what it would show
    assert overview.loc["cerebras", "where they ran"] == "portable: CPU"
    table, figure = homework.show_testbed("graphcore", run)
    assert list(table["run"]) == ["graphcore_1", "graphcore_2", "graphcore_3"] and figure is not None
    with pytest.raises(ValueError, match="a cell above gave the name `run` to something else"):
        homework.record_runs("cerebras", homework.runs_of("graphcore", run)[-1])  # `run` reused by a loop
