"""Hand-written edge cases (tests/logs/cases/) and the streaming text layer.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_cases.py -q
"""

from __future__ import annotations

import io
import math
import os
import shutil
import tracemalloc

import pytest

import labkit.logs
from labkit.files import NotAFile
from labkit.logs import text
from labkit.results import Run, scrap
from tests.logs.conftest import CASES


def test_lines_split_on_crlf_bare_cr_and_lf_and_lose_escapes_and_indentation():
    raw = "  a\r\n\x1b[1mb\x1b[0m\rc\n\x1b[A\x1b[A    d  \n\x1b]0;title\x07e"
    lines = list(text.iter_lines(io.StringIO(raw, newline="")))
    assert lines == ["a", "b", "c", "d", "e"]


def test_long_line_without_line_ends_is_read_in_bounded_pieces():
    raw = "x" * (text.MAX_LINE * 2 + 10)
    pieces = list(text.iter_lines(io.StringIO(raw, newline="")))
    assert [len(p) for p in pieces] == [text.MAX_LINE, text.MAX_LINE, 10]


def test_a_big_log_is_read_streaming_in_bounded_memory(tmp_path, testbed_logs):
    """The line stream under read() holds pieces of the file, never all of it (~2.4 MB at any size)."""
    block = (testbed_logs / "sambanova/sveldman-spring2024-BertLarge_HW_compile_log_base.log").read_bytes()
    path = tmp_path / "big.log"
    with open(path, "wb") as f:
        for _ in range(8_000_000 // len(block) + 1):
            f.write(block)
    tracemalloc.start()
    try:
        with text.open_source(path) as source:
            count = sum(1 for _ in text.iter_lines(source.stream))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == block.count(b"\n") * (8_000_000 // len(block) + 1)
    assert peak < 4_000_000, peak  # half the file would be 4 MB
    assert len(labkit.logs.read(path).runs) == 8_000_000 // len(block) + 1  # one compile log per copy


def test_crlf_ansi_and_indentation_in_a_groq_table():
    run = labkit.logs.read(CASES / "groq-crlf-ansi-indented.log").run
    assert run.exercise == "groq/bert_tiny" and run.status == "complete"
    assert run.metrics["groq_e2e_ips"] == 20000.0 and run.metrics["cpu_e2e_ips"] == 400.0
    assert run.metrics["build_cached"] is True
    assert run.metrics["groq_vs_cpu_e2e_speedup"] == 50.0


def test_two_concatenated_runs_are_reported_separately():
    report = labkit.logs.read(CASES / "cerebras-two-runs-ansi.log")
    assert report.format == "cerebras"
    assert [r.params["batch_size"] for r in report.runs] == [256, 512]
    assert [r.metrics["global_rate"] for r in report.runs] == [850.0, 1700.0]
    # Same seconds, twice the samples: samples/s tells the runs apart, seconds do not.
    assert report.runs[1].metrics["samples_per_s"] / report.runs[0].metrics["samples_per_s"] == pytest.approx(2, rel=0.01)
    for run in report.runs:
        assert run.metrics["compile_queue_s"] == 300.0
        assert run.metrics["compile_s"] == 600.0 + 1.0  # 10:00:01 -> 10:15:02, less 300 s queued
        assert "queue time is not run time" in " ".join(run.notes)


def test_truncated_training_log_is_incomplete_with_what_it_has():
    run = labkit.logs.read(CASES / "sambanova-training-truncated.log").run
    assert run.status == "incomplete"
    assert run.params["ntasks"] == 8 and run.params["job_id"] == 99999
    assert run.series["loss"]["x"] == [1, 2, 3, 4, 5]
    assert "cut short" in " ".join(run.notes)


def test_truncated_real_log_keeps_the_steps_before_the_cut(testbed_logs):
    data = (testbed_logs / "cerebras/student-kloiks-spring2024-bert-large-bs1024.log").read_text()
    cut = data[:data.index("Step=600")]
    run = labkit.logs.read(cut).run
    assert run.status == "incomplete"
    assert run.series["loss"]["x"] == [100, 200, 300, 400, 500]


def test_keras_nan_loss_is_diverged():
    run = labkit.logs.read(CASES / "keras-ipu-nan-loss.log").run
    assert run.status == "diverged"
    assert run.params == {"device": "ipu", "epochs": 4, "steps_per_epoch": 100}
    assert math.isnan(run.metrics["loss"])
    assert run.metrics["first_epoch_time"] == 41.0 and run.metrics["epoch_time"] == 3.0
    assert run.metrics["training_time_s"] == 50.2
    assert "epoch 3" in " ".join(run.notes)
    assert run.to_dict()["metrics"]["loss"] == "nan"  # JSON-safe


def test_keras_crlf_clean_run_and_first_epoch_note():
    run = labkit.logs.read(CASES / "keras-gpu-crlf.log").run
    assert run.status == "complete"
    assert run.series["val_accuracy"]["y"] == [0.9808, 0.9861, 0.9889]
    assert run.metrics["step_time_ms"] == 8.0
    assert "first epoch includes graph compilation" in " ".join(run.notes)


def test_keras_exploding_loss_is_diverged():
    log = "Epoch 1/2\n10/10 [==========] - 1s 100ms/step - loss: 2.5\nEpoch 2/2\n10/10 [==========] - 1s 100ms/step - loss: 4000.0\n"
    run = labkit.logs.read(log, format="keras").run
    assert run.status == "diverged" and "exploding" in " ".join(run.notes)


def test_empty_file_gives_a_note_and_no_run():
    report = labkit.logs.read(CASES / "empty.log")
    assert report.runs == [] and report.format is None
    assert report.notes == ["Nothing read: the file is empty."]
    with pytest.raises(labkit.logs.NoRunError, match="empty"):
        report.run


def test_binary_file_gives_a_note_and_no_run(tmp_path):
    exe = shutil.which("true") or "/bin/true"
    if os.path.exists(exe):
        with open(exe, "rb") as f:
            data = f.read()
    else:  # pragma: no cover - every Linux has /bin/true
        data = bytes(range(256)) * 64
    path = tmp_path / "srun.txt"  # the real student upload was the srun executable, named .txt
    path.write_bytes(data)
    report = labkit.logs.read(path)
    assert report.runs == []
    assert "binary" in report.notes[0]
    assert labkit.logs.read(data).runs == []  # the same bytes given directly


def test_missing_file_and_bad_format_are_clear_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.log: no such log file"):
        labkit.logs.read(str(tmp_path / "nope.log"))
    with pytest.raises(ValueError, match=r"format: 'poplar' is not a log format .*graphcore, cerebras"):
        labkit.logs.read("anything", format="poplar")
    with pytest.raises(NotAFile, match="is a folder, not a regular file"):
        labkit.logs.read(tmp_path)


def test_text_with_no_known_format_says_so():
    report = labkit.logs.read("hello\nworld\n")
    assert report.runs == [] and "no Graphcore, Cerebras" in report.notes[0]


def test_filename_parameters_are_noted_and_the_log_wins(tmp_path, testbed_logs):
    data = (testbed_logs / "graphcore/student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log").read_bytes()
    path = tmp_path / "mnist-bs12-e30-lr0.01.log"  # says 30 epochs; the bar says 20
    path.write_bytes(data)
    run = labkit.logs.read(path).run
    assert run.params["epochs"] == 20 and run.params["batch_size"] == 12
    notes = " ".join(run.notes)
    assert "file name suggests epochs=30 but the log shows epochs=20" in notes
    assert "Read from the file name only" in notes and "batch_size=12" in notes


def test_record_and_table_put_log_runs_beside_local_runs(testbed_logs):
    reports = [labkit.logs.read(testbed_logs / "graphcore/student-tnguyen2211-fall2024-mnist-two-runs.log")]
    assert labkit.logs.record(reports[0]) == ["log_run_1", "log_run_2"]
    assert Run.from_dict(scrap(reports[0].runs[0])["data"]).metrics["test_accuracy"] == 98.38
    local = Run("graphcore/mnist", source="portable", params={"epochs": 10}, metrics={"test_accuracy": 98.9})
    frame = labkit.logs.table([reports[0], local])
    assert list(frame["source"]) == ["log", "log", "portable"]
    assert list(frame["test_accuracy"]) == [98.38, 97.82, 98.9]
    assert frame.loc[0, "log"] == "student-tnguyen2211-fall2024-mnist-two-runs.log"


def test_report_to_dict_round_trips_runs(testbed_logs):
    report = labkit.logs.read(testbed_logs / "groq/upstream-spring2024-bert_tiny-sample-output.log")
    data = report.to_dict()
    assert data["format"] == "groq" and data["path"].endswith(".log")
    assert Run.from_dict(data["runs"][0]).metrics == report.run.metrics


def test_format_argument_skips_detection():
    log = "| Train Device=CSX, Step=100, Loss=9.5, Rate=10.0 samples/sec, GlobalRate=10.0 samples/sec\n"
    assert labkit.logs.read(log).format == "cerebras"
    report = labkit.logs.read(log, format="groq")
    assert report.format == "groq" and report.runs == []


def test_a_string_is_a_path_only_when_it_looks_like_one(tmp_path):
    one_line = labkit.logs.read("Accuracy on test set: 98.5%").run  # one line of text, not a path
    assert one_line.metrics["test_accuracy"] == 98.5 and one_line.status == "incomplete"
    assert labkit.logs.read(" samples/sec").runs == []
    with pytest.raises(FileNotFoundError, match="no such log file"):
        labkit.logs.read("logs/missing-run.out")
    path = tmp_path / "x.log"
    path.write_text("Epoch 1/1\n5/5 [=====] - 1s 200ms/step - loss: 0.5\n")
    assert labkit.logs.read(str(path)).run.metrics["loss"] == 0.5


@pytest.mark.parametrize("first, second, expected", [
    ("graphcore/student-xiaoruiDong-spring2024-mnist_0.03_10_32.log",
     "graphcore/upstream-spring2024-mnist_poptorch-sample-output.log", [("test_accuracy", 98.59), ("test_accuracy", 96.85)]),
    ("sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-1stlog.log",
     "sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log", [("compile_s", 626), ("e2e_train_time", 470.3965759277344)]),
    ("groq/upstream-spring2024-bert_tiny-sample-output.log",
     "groq/student-kloiks-spring2024-bert_tiny-dummy-input.log", [("groq_e2e_ips", 17147.76), ("groq_e2e_ips", 17725.57)]),
])
def test_two_real_logs_concatenated_give_two_runs(testbed_logs, first, second, expected):
    data = (testbed_logs / first).read_bytes() + b"\n" + (testbed_logs / second).read_bytes()
    runs = labkit.logs.read(data).runs
    assert [(key, run.metrics.get(key)) for (key, _), run in zip(expected, runs)] == expected
    assert len(runs) == 2


def test_public_api():
    assert sorted(labkit.logs.__all__) == sorted(["read", "LogReport", "NoRunError", "record", "table", "FORMATS",
                                                  "reader_for"])
    assert labkit.logs.FORMATS == ("graphcore", "cerebras", "sambanova", "groq", "keras", "openai")


def test_run_for_picks_the_exercise_a_notebook_wants(testbed_logs):
    report = labkit.logs.read(testbed_logs / "graphcore/upstream-spring2024-bert-demo_tiny_128-4ipu-sample-output.log")
    assert report.run_for("graphcore/bert").metrics["throughput"] == 749.6
    assert report.run_for("graphcore") is report.run
    with pytest.raises(labkit.logs.NoRunError, match="no graphcore/mnist run in this log .it holds graphcore/bert"):
        report.run_for("graphcore/mnist")


def test_cerebras_compile_failure_is_failed():
    run = labkit.logs.read(CASES / "cerebras-failed.log").run
    assert run.status == "failed" and run.params["batch_size"] == 4096
    assert "insufficient memory" in " ".join(run.notes)


def test_nan_loss_in_cerebras_and_sambanova_is_diverged():
    cerebras = ("2024-04-05 16:17:26,961 INFO:   | Train Device=CSX, Step=100, Loss=9.48438, Rate=4959.81 samples/sec, "
                "GlobalRate=4959.81 samples/sec\n2024-04-05 16:17:48,106 INFO:   | Train Device=CSX, Step=200, Loss=nan, "
                "Rate=4889.48 samples/sec, GlobalRate=4900.50 samples/sec\n")
    assert labkit.logs.read(cerebras).run.status == "diverged"
    samba = ("Model:  BertLarge\nSLURM_NTASKS=4\n2024-04-09 17:47:26,741 - trainer - Process ID 7 - info     - "
             "epoch:0|local_step:1|global_step:1|average_loss:nan|step_loss:nan|step_ns_loss:0.6\n")
    run = labkit.logs.read(samba).run
    assert run.status == "diverged" and run.exercise == "sambanova/bert_large"


def test_sambanova_traceback_before_metrics_is_failed():
    samba = ("Model:  BertLarge\nRUN\nSLURM_NTASKS=4\nRUN COMMAND: srun python transformers_hook.py run -b 256\n"
             "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nRuntimeError: RDU not found\n")
    run = labkit.logs.read(samba).run
    assert run.status == "failed" and "before printing e2e_train_time" in " ".join(run.notes)


def test_utf16_and_bom_logs_from_windows_are_read(tmp_path, testbed_logs):
    data = (testbed_logs / "groq/student-kloiks-spring2024-bert_tiny-dummy-input.log").read_text(encoding="utf-8")
    utf16 = tmp_path / "powershell.log"
    utf16.write_bytes(data.encode("utf-16"))  # with its byte-order mark, as PowerShell writes
    bom = tmp_path / "notepad.log"
    bom.write_bytes(b"\xef\xbb\xbf" + data.encode("utf-8"))
    for path in (utf16, bom):
        run = labkit.logs.read(path).run
        assert run.metrics["groq_e2e_ips"] == 17725.57
    assert labkit.logs.read(data.encode("utf-16")).run.metrics["cpu_e2e_ips"] == 482.40
