"""The portable path prints the modelzoo's log format, and labkit.logs reads it into the same metrics."""

from __future__ import annotations

import re

import pytest

import labkit.logs
from labkit.testbeds.cerebras import bert_large

from .conftest import STUDENT_LOGS

MICRO = {"model_size": "micro", "batch_size": 4, "max_steps": 6, "log_steps": 3, "max_seq_length": 32,
         "target": "cpu"}


@pytest.fixture(scope="module")
def portable(tmp_path_factory):
    log = tmp_path_factory.mktemp("portable") / "portable.log"
    printed = []
    config = bert_large.SPEC.validate(MICRO)
    run = bert_large.run_portable(config, bert_large.plan(config).device, log_path=str(log), echo=printed.append,
                                progress=False)
    return run, log, printed


def test_lines_are_in_the_modelzoo_format(portable):
    _run, log, printed = portable
    train = [line for line in printed if "| Train Device=" in line]
    pattern = (r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO:   \| Train Device=CPU, Step=(\d+), Loss=\d+\.\d{5}, "
               r"Rate=\d+\.\d\d samples/sec, GlobalRate=\d+\.\d\d samples/sec$")
    assert [int(re.match(pattern, line).group(1)) for line in train] == [3, 6]
    assert re.search(r"INFO:   Processed 24 sample\(s\) in [\d.]+ seconds\.$", printed[-1])
    assert "Effective batch size is 4." in printed[1]
    assert log.read_text().splitlines() == printed


def test_the_log_reader_reads_the_same_metrics(portable):
    run, log, _printed = portable
    read = bert_large.read_log(str(log))
    assert labkit.logs.read(str(log)).format == "cerebras"  # detected as a CS-2 log
    assert read.exercise == run.exercise == "cerebras/bert_large"
    assert read.status == run.status == "complete"
    for name in ("samples_per_sec", "final_loss", "total_samples", "steps", "global_rate", "last_rate", "samples"):
        assert read.metrics[name] == run.metrics[name], name
    for name in ("total_time", "time_per_sample"):
        assert read.metrics[name] == pytest.approx(run.metrics[name], rel=1e-12), name
    assert read.series["global_rate"]["y"] == pytest.approx(run.series["global_rate"]["y"], abs=0.006)
    assert read.series["loss"]["y"] == pytest.approx([run.series["loss"]["y"][i] for i in (2, 5)], abs=6e-6)


def test_portable_record_has_warmup_apart(portable):
    run = portable[0]
    assert run.source == "portable" and run.params["batch_size"] == 4
    assert 0 < run.metrics["warmup_time"] <= run.metrics["total_time"]
    assert run.metrics["setup_time"] > 0
    assert len(run.series["loss"]["y"]) == 6


def test_student_logs_compare_by_batch_size(cerebras_logs):
    config = bert_large.SPEC.validate({"compare_logs": [str(p) for p in STUDENT_LOGS.values()]})
    runs = bert_large.compare(config)
    table = bert_large.comparison_table(runs)
    assert list(table["batch_size"]) == [512, 1024, 2048]
    for row in table.itertuples():
        text = STUDENT_LOGS[row.batch_size].read_text()
        last_global = float(re.findall(r"GlobalRate=([\d.]+)", text)[-1])
        samples, seconds = re.search(r"Processed (\d+) sample\(s\) in ([\d.]+) seconds", text).groups()
        assert row.samples_per_sec == last_global
        assert row.time_per_sample_ms == pytest.approx(1000 * float(seconds) / int(samples))
        assert row.source == "log"
    figure = bert_large.plot_comparison(table)
    assert [ax.get_xlabel() for ax in figure.axes] == ["batch size", "batch size"]
    assert list(figure.axes[0].lines[0].get_ydata()) == list(table["samples_per_sec"])
    import matplotlib.pyplot as plt

    plt.close(figure)
