"""The 2025 homework beside the 2024 one: one package, each year's sections, each year's evidence.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/homework/test_homework_2025.py -q

CS-3 logs made from the course's real sample (tests/homework/cs3_logs.py) are gathered by the 2025
homework as CS-3 runs of cerebras/llama2_7b and re-read by the grader's trusted code; last year's
CS-2 BERT-Large logs in the same folder are still read, by the 2024 homework, and never counted
for 2025. The notebook itself runs end to end and is graded with its rubric.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from labkit import results
from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.recompute import from_evidence
from labkit.testbeds import homework
from labkit.testbeds.cerebras.llama2_7b.metrics import METRICS as LLAMA_METRICS
from labkit.testbeds.homework import fall2025
from labkit.testbeds.homework import fall2024
from labkit.testbeds.homework.hardware import where_it_ran
from labkit.testbeds.homework.homeworks import HOMEWORKS, homework_for_runs, homework_of, is_overview, register
from labkit.testbeds.homework.report import points_against
from tests.homework import classroom, classroom_2025
from tests.homework.cs3_logs import write_cs3_log

LIMITS = levels.Limits(notebook_s=120, cell_s=60, memory_bytes=3 << 30, nproc=64, fsize_bytes=16 << 20)


def _cs3_logs(folder: Path, sizes=((512, 17.2), (1024, 31.99), (2048, 58.4))) -> None:
    for batch_size, rate in sizes:
        write_cs3_log(folder / "logs" / "cerebras", batch_size, rate)


def test_each_config_record_and_run_names_its_year():
    assert homework_of(homework.SPEC.validate({})).year == 2024
    assert homework_of(fall2025.SPEC.validate({})).year == 2025
    assert [h.year for h in HOMEWORKS.values()] == [2025, 2024]  # the current offering first
    assert homework_of(None).year == 2024  # notebooks made before 2025 name no year
    with pytest.raises(ValueError, match="'homework/ai_testbeds_2023' is not a homework"):
        homework_of("homework/ai_testbeds_2023")
    # the 2024 homework is what it was
    assert homework.SPEC is fall2024.SPEC and fall2024.HOMEWORK.testbeds is homework.TESTBEDS  # the package is 2024's
    assert fall2024.HOMEWORK.section_for("cerebras").exercise == "cerebras/bert_large"
    assert fall2025.HOMEWORK.section_for("cerebras").exercise == "cerebras/llama2_7b"
    assert fall2025.HOMEWORK.section_for("sambanova").exercise == "sambanova/inference"
    with pytest.raises(ValueError, match="'groq' is not one of cerebras, sambanova"):
        fall2025.HOMEWORK.section_for("groq")


def test_each_year_is_one_exercise_module_and_registered_once():
    for year, module in ((2024, fall2024), (2025, fall2025)):
        assert {"SPEC", "METRICS", "plan", "run_exercise", "show"} <= set(module.__all__)
        assert module.HOMEWORK is HOMEWORKS[module.SPEC.name] and module.HOMEWORK.year == year
        assert module.METRICS is module.HOMEWORK.metrics and module.METRICS.exercises == (module.SPEC.name,)
        assert module.METRICS.names == tuple("{}_runs".format(t) for t in module.TESTBEDS)
    assert is_overview(results.Run(fall2025.SPEC.name)) and is_overview({"exercise": "homework/ai_testbeds"})
    assert not is_overview(results.Run("cerebras/llama2_7b"))
    with pytest.raises(ValueError, match="'homework/ai_testbeds_2025' is registered already .by the 2025 homework"):
        register(fall2025.HOMEWORK)
    assert list(HOMEWORKS) == ["homework/ai_testbeds_2025", "homework/ai_testbeds"]


def test_cs3_logs_are_gathered_as_cs3_runs_and_cs2_logs_by_2024_only(tmp_path, monkeypatch):
    _cs3_logs(tmp_path)
    for key in ("cb_1024", "cb_2048"):  # last year's CS-2 BERT-Large logs in the same folder
        _testbed, name = classroom.LOGS[key]
        if not classroom.fixtures_dir().is_dir():
            pytest.skip("real testbed logs not found (set LABKIT_SHARED)")
        shutil.copyfile(str(classroom.fixtures_dir() / "cerebras" / name), str(tmp_path / "logs" / "cerebras" / name))
    monkeypatch.chdir(tmp_path)
    runs = fall2025.runs_for(fall2025.SPEC.validate({}), "cerebras", verbose=False)
    assert sorted(r.params["batch_size"] for r in runs) == [512, 1024, 2048]
    assert {r.exercise for r in runs} == {"cerebras/llama2_7b"} and {where_it_ran(r) for r in runs} == {"CS-3"}
    assert {r.metrics["global_rate"] for r in runs} == {17.2, 31.99, 58.4}
    assert all(r.metrics["checkpoint_s"] > 400 and r.metrics["staging_s"] > 200 for r in runs)
    old = homework.runs_for(homework.SPEC.validate({}), "cerebras", verbose=False)
    assert sorted(r.params["batch_size"] for r in old) == [1024, 2048]
    assert {where_it_ran(r) for r in old} == {"CS-2"}  # labkit keeps reading the 2024 logs, as 2024's
    assert homework_for_runs("cerebras", runs).year == 2025 and homework_for_runs("cerebras", old).year == 2024
    # the grader's trusted re-reading gives the same record
    for run in runs:
        trusted = from_evidence(dict(run.params))
        assert trusted["metrics"]["global_rate"] == run.metrics["global_rate"]
        assert trusted["params"]["batch_size"] == run.params["batch_size"]


def test_the_cs3_section_plots_global_rate_and_tokens_against_the_batch_size(tmp_path, monkeypatch):
    _cs3_logs(tmp_path)
    monkeypatch.chdir(tmp_path)
    runs = fall2025.runs_for(fall2025.SPEC.validate({}), "cerebras", verbose=False)
    portable = results.Run("cerebras/llama2_7b", source="portable", params={"batch_size": 8, "device": "cpu"})
    LLAMA_METRICS.add(portable, "global_rate", 2.0)
    LLAMA_METRICS.add(portable, "tokens_per_s", 32.0)
    section = fall2025.HOMEWORK.section_for("cerebras")
    assert points_against(section, runs + [portable], "global_rate") == {
        "CS-3": [(512.0, 17.2), (1024.0, 31.99), (2048.0, 58.4)], "portable: CPU": [(8.0, 2.0)]}
    assert points_against(section, runs, "tokens_per_s") == {}  # a CS-3 log has no sequence length
    fig = fall2025.plot("cerebras", runs + [portable])
    assert [ax.get_xlabel() for ax in fig.axes] == ["batch_size", "batch_size"]
    assert [ax.get_ylabel() for ax in fig.axes] == ["global_rate (samples/s)", "tokens_per_s (tokens/s)"]
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["measured on the CS-3", "portable: CPU: a model, not the CS-3"]
    table = fall2025.comparison("cerebras", runs)
    assert list(table["where it ran"]) == ["CS-3"] * 3 and "staging_s" in table and "checkpoint_s" in table
    assert "cszoo fit" in fall2025.nothing_yet("cerebras") and "inference.ipynb" in fall2025.nothing_yet("sambanova")
    assert "bert_large" in homework.nothing_yet("cerebras")  # the 2024 homework's default is unchanged


@pytest.fixture(scope="module")
def graded(tmp_path_factory, strongest_level):
    """One student with three CS-3 logs and every answer, and the untouched template, graded."""
    root = tmp_path_factory.mktemp("hw2025")
    subs = root / "submissions"
    folder = subs / "cs3_only"
    _cs3_logs(folder)
    nb = nbformat.read(str(classroom_2025.HOMEWORK), as_version=4)
    for number, cell in classroom_2025._answer_cells(nb).items():
        nb.cells[cell].source = classroom_2025.ANSWERS[number]
    nbformat.write(nb, str(folder / classroom_2025.NOTEBOOK))
    (subs / "template").mkdir()
    shutil.copyfile(str(classroom_2025.HOMEWORK), str(subs / "template" / classroom_2025.NOTEBOOK))
    out = grade_class(str(subs), str(classroom_2025.RUBRIC), str(root / "out"), workers=2, limits=LIMITS)
    return {"results": out, "out": root / "out"}


def test_cs3_logs_alone_earn_the_cs3_section(graded):
    result = graded["results"]["cs3_only"]
    by = {c["name"]: c for c in result["checks"]}
    assert result["status"] == "ok", result.get("reason")
    assert by["cs3_global_rate"]["score"] == 3 and "(CS-3)" in by["cs3_global_rate"]["reason"]
    assert by["cs3_batch_sizes"]["score"] == 4
    assert "1024 (CS-3), 2048 (CS-3), 512 (CS-3)" in by["cs3_batch_sizes"]["reason"]
    for name in ("inference_both_endpoints", "inference_prompts", "inference_streaming"):
        assert by[name]["score"] == 0 and "sambanova/inference" in by[name]["reason"]
    assert [by[q]["score"] for q in ("q1_cs3", "q2_inference", "q3_measured_or_modelled")] == [4, 5, 3]
    assert result["where"] == "CS-3"
    template = {c["name"]: c for c in graded["results"]["template"]["checks"]}
    assert sum(c["score"] for c in template.values()) == template["runs_clean"]["score"] == 1
    assert "still the template's text" in template["q1_cs3"]["reason"]


def test_a_saved_response_is_gathered_and_re_read_as_a_log(tmp_path, monkeypatch):
    """A student's JSON of results in logs/sambanova/: one endpoint's requests, not streamed; the grader reads
    the same file again (the reader's response_kind never takes params['evidence'], which names a lab-book notebook for the grader)."""
    (tmp_path / "logs" / "sambanova").mkdir(parents=True)
    (tmp_path / "logs" / "sambanova" / "results.json").write_text(classroom_2025.RESULTS_JSON)
    monkeypatch.chdir(tmp_path)
    (run,) = fall2025.runs_for(fall2025.SPEC.validate({}), "sambanova", verbose=False)
    assert run.params["response_kind"] == "results" and "evidence" not in run.params
    assert run.metrics["requests"] == 20 and "ttft_median" not in run.metrics  # not streamed: no first token
    assert where_it_ran(run) == "Metis/Sophia"
    trusted = from_evidence(dict(run.params))
    assert trusted["metrics"]["requests"] == 20 and trusted["metrics"]["e2el_median"] == run.metrics["e2el_median"]
