"""Every metric a run or a log reader records is in its exercise's table of metrics, with the
table's unit; sweeps lead with the table's primary metrics and mark its timings.

    PYTHONPATH=$PWD python -m pytest tests/test_metric_tables.py -q

What is checked comes from the real thing: the golden notebooks' records (every exercise's
portable run), a small portable MNIST run made here, and every real testbed log in
../shared/fixtures/testbed-logs read by labkit.logs (and by Cerebras' and SambaNova's own
``read_log``, which add the exercise's names).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import pytest
import yaml

import labkit.logs
from labkit import results
from labkit.metrics import Metric, MetricTable
from labkit.results import Run
from labkit.sweep import report as sweep_report
from labkit.exercises import metric_table as table_for
from labkit.exercises import metric_tables

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = sorted((ROOT / "tests" / "golden").glob("*/*.ipynb"))


def problems_of(run: Run) -> List[str]:
    """What the run records that its exercise's table does not hold (or that it has no table)."""
    table = table_for(run.exercise)
    if table is None:
        return ["{}: no table of metrics for this exercise".format(run.exercise)]
    return table.check(run)


def _logs(shared) -> List[Path]:
    folder = shared / "fixtures" / "testbed-logs"
    if not folder.is_dir():
        pytest.skip("no real testbed logs in ../shared/fixtures/testbed-logs")
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix != ".md")


# -- the table itself -------------------------------------------------------------------------------

TOY = MetricTable(("acme/classifier",),
                  Metric("loss", "", "training loss"),
                  Metric("test_accuracy", "%", "share of test samples right", primary=True),
                  Metric("epoch_time", "s", "seconds per steady epoch", primary=True, timing=True),
                  Metric("tokens_per_second", "tokens/s", "tokens per second", timing=True))


def test_a_table_answers_units_primary_and_timings_in_its_order():
    assert TOY.unit("test_accuracy") == "%" and TOY.unit("loss") == ""
    assert TOY.primary == ("test_accuracy", "epoch_time")
    assert TOY.timings == ("epoch_time", "tokens_per_second")
    assert TOY.select("loss", "epoch_time") == ("loss", "epoch_time")
    with pytest.raises(KeyError, match="'lost' is not in the table of acme/classifier"):
        TOY.select("loss", "lost")
    frame = TOY.frame()
    assert list(frame.columns) == ["unit", "meaning", "primary", "timing"]
    assert frame.loc["epoch_time", "meaning"] == "seconds per steady epoch" and "seconds per steady" in TOY._repr_html_()
    with pytest.raises(ValueError, match="twice"):
        MetricTable(("x/y",), Metric("a", "", "one"), Metric("a", "s", "two"))


def test_check_names_a_metric_not_in_the_table_and_a_wrong_unit():
    run = Run("acme/classifier")
    TOY.add(run, "test_accuracy", 91.0)
    TOY.add(run, "epoch_time", 2.5)
    assert run.units == {"test_accuracy": "%", "epoch_time": "s"}
    assert TOY.check(run) == [] and TOY.check(run.to_dict()) == []
    run.add_metric("made_up", 1.0, "s")
    run.add_metric("loss", 0.5, "%")
    run.add_metric("tokens_per_second", 9.0, "tokens/s (logged as sequences/s)")  # a note after the unit is fine
    assert TOY.check(run) == ["metric made_up: not in the table of acme/classifier",
                              "metric loss: recorded in '%', the table of acme/classifier says ''"]


# -- runs and log readers against their exercise's table ---------------------------------------------

@pytest.mark.parametrize("notebook", GOLDEN, ids=lambda p: "{}/{}".format(p.parent.name, p.name))
def test_every_metric_a_golden_record_holds_is_in_its_table(notebook):
    runs = results.read(notebook).runs
    assert runs, "{} records no run".format(notebook)
    problems = [p for run in runs for p in problems_of(run)]
    assert not problems, problems


def test_a_made_up_metric_in_a_golden_record_fails_the_check():
    run = results.read(ROOT / "tests" / "golden" / "graphcore" / "mnist.ipynb").runs[0]
    assert problems_of(run) == []
    run.add_metric("test_acc", 97.0, "%")
    run.units["epoch_time"] = "ms"
    assert problems_of(run) == ["metric epoch_time: recorded in 'ms', the table of graphcore/mnist says 's'",
                                "metric test_acc: not in the table of graphcore/mnist"]
    assert problems_of(Run("acme/classifier", metrics={"x": 1})) == [
        "acme/classifier: no table of metrics for this exercise"]


def test_a_small_portable_mnist_run_records_only_its_tables_metrics():
    import torch

    from labkit.testbeds import graphcore
    from labkit.testbeds.graphcore.train import train

    config = graphcore.SPEC.validate({"epochs": 2, "device_iterations": 5, "max_train_samples": 200,
                                      "max_test_samples": 80, "device": "cpu"})
    run = train(config, torch.device("cpu"), verbose=False)
    assert run.status == "complete" and "test_accuracy" in run.metrics
    assert problems_of(run) == []
    assert set(graphcore.METRICS.primary) <= set(run.metrics)


def test_every_metric_every_log_reader_gives_on_every_real_log_is_in_its_table(shared):
    problems, runs = [], 0
    for path in _logs(shared):
        for run in labkit.logs.read(str(path)).runs:
            runs += 1
            problems.extend("{}: {}".format(path.name, p) for p in problems_of(run))
    assert runs > 20 and not problems, problems


def test_the_exercises_own_log_readers_add_only_their_tables_metrics(shared):
    from labkit.testbeds.cerebras import bert_large
    from labkit.testbeds.sambanova import bert_large as sambanova

    checked = 0
    for path in _logs(shared):
        vendor = path.relative_to(shared / "fixtures" / "testbed-logs").parts[0]
        if vendor == "cerebras" and "bert" in path.name:
            run = bert_large.read_log(str(path))
        elif vendor == "sambanova":
            try:
                run = sambanova.read_log(str(path))
            except labkit.logs.NoRunError:
                continue
        else:
            continue
        checked += 1
        assert problems_of(run) == [], path.name
    assert checked >= 3


# -- what reads the tables ----------------------------------------------------------------------------

@pytest.mark.parametrize("year", [2024, 2025])
def test_the_homework_compares_and_the_rubric_grades_only_metrics_in_the_tables(year):
    from labkit.testbeds.homework.homeworks import HOMEWORKS

    homework = next(h for h in HOMEWORKS.values() if h.year == year)
    for exercise in homework.testbeds.values():
        table = table_for(exercise.exercise)
        assert table is not None and set(exercise.metrics + exercise.plotted) <= set(table.names), exercise.exercise
        assert not exercise.against or exercise.against in exercise.params
    assert table_for(homework.name) is not None  # the overview record's table
    rubric_path = ROOT / homework.notebook.replace(".ipynb", ".rubric.yml")
    rubric = yaml.safe_load(rubric_path.read_text())
    graded = [(c["exercise"], m) for c in rubric["checks"] if "metric" in c
              for m in (c["metric"] if isinstance(c["metric"], list) else [c["metric"]])]
    assert len(graded) >= 4
    assert [(e, m) for e, m in graded if m not in (table_for(e) or ())] == []


#: Where a table's timing flag and results.is_unstable's unit-or-name rule (golden copies, grading)
#: disagree: "onnxruntime" holds "time"; a text check holds "throughput"; a speed-up has the unit "x".
RULE_DISAGREES = {"onnxruntime_accuracy", "onnxruntime_spearman", "onnxruntime_disagreements", "throughput_check",
                  "groq_vs_cpu_e2e_speedup"}


def test_the_tables_timings_are_those_the_comparison_rule_skips_but_the_known_few():
    disagree = {m.name for table in metric_tables() for m in table
                if m.timing != results.is_unstable({"units": {m.name: m.unit}}, m.name)}
    assert disagree == RULE_DISAGREES


def _sweep(tmp_path: Path, exercise: str, rows: List[dict], units: dict) -> str:
    out = tmp_path / "sweep"
    (out / "runs").mkdir(parents=True)
    (out / "sweep.json").write_text(json.dumps({
        "notebook": "notebooks/x.ipynb", "grid": {"learning_rate": [0.03, 0.3]}, "repeats": 2, "seeds": [0, 1],
        "baseline": {"learning_rate": 0.03}, "baseline_reason": "the default"}))
    index = 0
    for learning_rate in (0.03, 0.3):
        for seed in (0, 1):
            row = {"learning_rate": learning_rate, "seed": seed, "status": "complete", "error": "",
                   "duration": 1.0, "notebook": "runs/{}.ipynb".format(index), "exercise": exercise,
                   "run": "r{}".format(index), "units": units}
            row.update({name: value + index + 10 * learning_rate for name, value in rows[0].items()})
            (out / "runs" / "r{}.json".format(index)).write_text(json.dumps(row))
            index += 1
    return str(out)


def test_a_sweep_summary_leads_with_the_primary_metrics_and_marks_the_tables_timings(tmp_path):
    # the runs' rows hold the metrics in another order, primary ones last
    metrics = {"final_loss": 0.5, "steps_per_epoch": 3.0, "warmup_time": 0.2, "epoch_time": 2.0,
               "train_throughput": 300.0, "test_accuracy": 90.0}
    units = {"warmup_time": "s", "epoch_time": "s", "train_throughput": "samples/s", "test_accuracy": "%"}
    summary = sweep_report.summary_markdown(_sweep(tmp_path, "graphcore/mnist", [metrics], units))
    headings = [line[3:] for line in summary.splitlines() if line.startswith("## ")]
    assert headings[:3] == ["test_accuracy (%) — primary", "train_throughput (samples/s) — primary",
                            "epoch_time (s) — primary"]
    assert not any("primary" in h for h in headings[3:])
    frame = sweep_report.summary_frame(str(tmp_path / "sweep"))
    timing = frame.groupby("metric")["timing"].first().to_dict()
    assert {m for m, t in timing.items() if t} == {"warmup_time", "epoch_time", "train_throughput"}


def test_a_sweep_marks_timings_by_the_table_where_the_name_rule_would_not(tmp_path):
    metrics = {"onnxruntime_accuracy": 90.0, "cpu_e2e_latency_ms": 2.0}
    units = {"onnxruntime_accuracy": "%", "cpu_e2e_latency_ms": "ms"}
    out = _sweep(tmp_path, "groq/bert_tiny", [metrics], units)
    timing = sweep_report.summary_frame(out).groupby("metric")["timing"].first().to_dict()
    assert timing == {"onnxruntime_accuracy": False, "cpu_e2e_latency_ms": True}
    assert sweep_report.primary_metrics(sweep_report.table(out))[:3] == ["cpu_accuracy", "cpu_spearman",
                                                                         "cpu_e2e_latency_ms"]


def test_docs_metrics_md_shows_the_tables_as_they_are():
    from labkit.exercises import metrics_markdown

    page = (ROOT / "docs" / "metrics.md").read_text()
    assert page == metrics_markdown() + "\n", ("docs/metrics.md is out of date: python -c 'from labkit.exercises "
                                               "import metrics_markdown; print(metrics_markdown())' > docs/metrics.md")
