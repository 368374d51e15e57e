"""Every real testbed log in ../shared/fixtures/testbed-logs is read, and the numbers that its
SOURCES.md lists for it come out.

    PYTHONPATH=$PWD python -m pytest tests/logs/test_fixtures.py -q

The expected values below are copied from SOURCES.md (which was written by reading the files
by eye), not from labkit's output.
"""

from __future__ import annotations

import re

import pytest

import labkit.logs


# file -> list of runs; each run: exercise, status, params (subset), metrics (subset), and
# words that must appear in its notes. Numbers compare with a relative tolerance of 1e-9.
EXPECTED = {
    # -- Graphcore ------------------------------------------------------------------------
    "graphcore/upstream-spring2024-mnist_poptorch-sample-output.log": [
        dict(exercise="graphcore/mnist", status="complete", params={"job_id": 10671, "epochs": 10},
             metrics={"test_accuracy": 96.85, "total_train_time": 77}),
    ],
    "graphcore/upstream-spring2024-bert-demo_tiny_128-4ipu-sample-output.log": [
        dict(exercise="graphcore/bert", status="complete",
             params={"job_id": 20279, "global_batch_size": 16, "device_iterations": 1, "training_steps": 150,
                     "ipus": 4, "config": "demo_tiny_128"},
             metrics={"compile_s": 97.88873339025304, "total_loss": 7.389, "mlm_loss": 7.008, "nsp_loss": 0.380,
                      "mlm_acc": 0.161, "nsp_acc": 0.875, "throughput": 749.6, "training_time_s": 3.297,
                      "last_step": 149},
             notes=["not training"]),
    ],
    "graphcore/student-sarora39-spring2024-mnist-b8-lr3-e20-diverged.log": [
        # Near chance but not diverged: the loss hovers at 2.38 (above ln 10: saturated outputs),
        # never NaN nor 10x its start. The file name says "diverged"; labkit.divergence does not.
        dict(exercise="graphcore/mnist", status="complete",
             params={"job_id": 20926, "epochs": 20, "batch_size": 8, "learning_rate": 3.0},
             metrics={"test_accuracy": 10.10, "total_train_time": 196, "first_epoch_time": 31, "train_compile_time": 22},
             notes=["near chance", "did not diverge", "lower the learning rate", "learning rate 3", "file name", "31 s = about 9 s of steady training + 22 s of graph compilation"]),
    ],
    "graphcore/student-xiaoruiDong-spring2024-mnist_0.03_10_32.log": [
        dict(exercise="graphcore/mnist", status="complete",
             params={"epochs": 10, "learning_rate": 0.03, "batch_size": 32},
             metrics={"test_accuracy": 98.59, "total_train_time": 87}, notes=["file name"]),
    ],
    "graphcore/student-kloiks-spring2024-mnist-bs12-e20-lr0.01.log": [
        dict(exercise="graphcore/mnist", status="complete",
             params={"job_id": 20610, "epochs": 20, "batch_size": 12, "learning_rate": 0.01},
             # tqdm's "9.34s/it", not the clock's 03:06 / 20 = 9.3
             metrics={"test_accuracy": 98.88, "total_train_time": 186, "mean_epoch_time": 9.34,
                      "train_compile_time": 23, "test_compile_time": 14},
             notes=["first epoch includes", "tqdm's s/it figure"]),
    ],
    "graphcore/student-tnguyen2211-fall2024-mnist-two-runs.log": [
        dict(exercise="graphcore/mnist", status="complete", params={"job_id": 28011, "epochs": 10},
             metrics={"test_accuracy": 98.38, "total_train_time": 109}),
        dict(exercise="graphcore/mnist", status="complete", params={"job_id": 28012, "epochs": 10},
             metrics={"test_accuracy": 97.82, "total_train_time": 86, "train_compile_time": 0}, notes=["cache"]),
    ],
    # -- Cerebras -------------------------------------------------------------------------
    "cerebras/upstream-spring2024-bert-large-MSL128-sample-output.log": [
        dict(exercise="cerebras/bert_large", status="complete", params={"batch_size": 1024},
             metrics={"steps": 1000, "final_loss": 7.125, "last_rate": 1246.55, "global_rate": 1112.94,
                      "samples": 1024000, "train_seconds": 1025.603128781},
             environment={"compile_hash": "cs_9514045510034748708"}, series_len={"loss": 10},
             notes=["samples/s"]),
    ],
    "cerebras/upstream-fall2024-gptj-6B-sample-output-last-section.log": [
        dict(exercise="cerebras/gptj", status="complete",
             metrics={"steps": 200, "final_loss": 8.375, "last_rate": 19.80, "global_rate": 19.80,
                      "samples": 13200, "train_seconds": 1316.022207736969},
             environment={"device": "xla:0"}, series_len={"loss": 2}, notes=["file name"]),
    ],
    "cerebras/upstream-spring2024-gpt2-small-sample-output.log": [
        dict(exercise="cerebras/gpt2", status="incomplete", params={"batch_size": 112},
             metrics={"steps": 11200, "final_loss": 3.32812, "last_rate": 493.04, "global_rate": 494.08},
             environment={"compile_hash": "cs_1852078805518656824"}, series_len={"loss": 112},
             notes=["cut short", "queueing"]),
    ],
    "cerebras/student-sarora39-spring2024-bert-large-bs2048.log": [
        dict(exercise="cerebras/bert_large", status="complete", params={"batch_size": 2048},
             metrics={"steps": 1000, "final_loss": 7.14844, "last_rate": 5178.19, "global_rate": 5689.40,
                      "samples": 2048000, "train_seconds": 359.967711699, "min_rate": 4485.30,
                      "max_rate": 9958.29},
             notes=["swings"]),
    ],
    "cerebras/student-xiaoruiDong-spring2024-bert-large-bs512.log": [
        dict(exercise="cerebras/bert_large", status="complete", params={"batch_size": 512},
             metrics={"steps": 1000, "final_loss": 7.125, "last_rate": 2907.14, "global_rate": 2937.72,
                      "samples": 512000, "train_seconds": 174.285041622}),
    ],
    "cerebras/student-kloiks-spring2024-bert-large-bs1024.log": [
        dict(exercise="cerebras/bert_large", status="complete", params={"batch_size": 1024},
             metrics={"steps": 1000, "final_loss": 7.08594, "last_rate": 4830.85, "global_rate": 4884.95,
                      "samples": 1024000, "train_seconds": 209.623264503, "compile_cached": True},
             environment={"compile_hash": "cs_9465229803081323743"}, notes=["reused"]),
    ],
    # -- SambaNova ------------------------------------------------------------------------
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-1stlog.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 43717, "log_kind": "compile+submit"},
             metrics={"compile_s": 626, "duration_s": 626, "compile_skipped": False},
             environment={"date": "11/21/24", "time": "22:10", "sambaflow": "1.19.1-44"},
             notes=["never training", "output directory"]),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log": [
        dict(exercise="sambanova/bert_large", status="complete",
             params={"ntasks": 16, "ntasks_per_node": 16, "nodes": 1, "job_id": 43717, "batch_size": 256,
                     "max_seq_length": 128},
             metrics={"e2e_train_time": 470.3965759277344, "training_sequences_per_second": 562855.7977443167,
                      "final_loss": 8.254241943359375, "duration_s": 501},
             absent_metrics=["throughput_check", "training_samples_per_second"], notes=["tokens per second"]),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-32tasks-1stlog-failed.log": [
        dict(exercise="sambanova/bert_large", status="failed", metrics={"compile_s": 620, "submitted": False},
             absent_metrics=["duration_s"], absent_params=["job_id"], notes=["no training happened"]),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-1stlog.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 43720},
             metrics={"compile_s": 620, "duration_s": 620}),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-2ndlog.log": [
        dict(exercise="sambanova/bert_large", status="complete",
             params={"ntasks": 8, "ntasks_per_node": 16, "job_id": 43720},
             metrics={"e2e_train_time": 479.74279952049255, "training_sequences_per_second": 275945.1942422435,
                      "final_loss": 8.308189392089844},
             absent_metrics=["duration_s"], notes=["at least 560000", "not a training failure"]),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-8pernode-1stlog.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 43721},
             metrics={"compile_s": 619, "duration_s": 619}),
    ],
    "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-8pernode-2ndlog.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"ntasks": 8, "ntasks_per_node": 8,
                                                                          "job_id": 43721},
             metrics={"e2e_train_time": 455.1042366027832, "training_sequences_per_second": 290884.3938439188,
                      "final_loss": 8.308196067810059},
             notes=["not a training failure"]),
    ],
    "sambanova/sveldman-spring2024-BertLarge_HW_compile_log_base.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 30451},
             metrics={"compile_s": 780, "duration_s": 781}),
    ],
    "sambanova/sveldman-spring2024-BertLarge_HW_compile_log_changed.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 30458},
             metrics={"duration_s": 1, "compile_skipped": True}, absent_metrics=["compile_s"],
             notes=["compiled PEF"]),
    ],
    "sambanova/student-anil-bilgin-spring2024-bertlarge-ntasks32-run.log": [
        dict(exercise="sambanova/bert_large", status="complete",
             params={"ntasks": 32, "ntasks_per_node": 16, "nodes": 2, "job_id": 30852},
             metrics={"e2e_train_time": 466.73263239860535, "training_sequences_per_second": 1134548.654287714,
                      "final_loss": 8.228178024291992, "training_samples_per_second": 8863.661361622766,
                      "compile_skipped": True},
             notes=["at most 620000"]),
    ],
    "sambanova/student-xiaoruiDong-spring2024-bertlarge-ntasks4-run.log": [
        dict(exercise="sambanova/bert_large", status="complete",
             params={"ntasks": 4, "ntasks_per_node": 4, "job_id": 30942},
             metrics={"e2e_train_time": 433.93007254600525, "training_sequences_per_second": 152539.231981859,
                      "final_loss": 8.350452423095703, "training_samples_per_second": 1191.7127498582734},
             notes=["at least 560000"]),
    ],
    "sambanova/student-sarora39-spring2024-bertlarge-ntasks16-run.log": [
        dict(exercise="sambanova/bert_large", status="complete",
             params={"ntasks": 16, "ntasks_per_node": 16, "nodes": 1, "job_id": 30735},
             metrics={"e2e_train_time": 449.95112800598145, "training_sequences_per_second": 588431.5507182823,
                      "final_loss": 8.251630783081055, "training_samples_per_second": 4597.121489986581,
                      "duration_s": 488},
             absent_metrics=["throughput_check"]),
    ],
    "sambanova/student-drapi222-fall2024-bertlarge-32tasks-compile.log": [
        dict(exercise="sambanova/bert_large", status="complete", params={"job_id": 43641},
             metrics={"compile_s": 588, "duration_s": 588}),
    ],
    # -- Groq -----------------------------------------------------------------------------
    "groq/upstream-spring2024-bert_tiny-sample-output.log": [
        dict(exercise="groq/bert_tiny", status="complete", params={"build_name": "bert_tiny"},
             metrics={"cpu_accuracy": 77.47, "cpu_e2e_latency_ms": 2.29, "cpu_e2e_ips": 436.88,
                      "groq_accuracy": 77.47, "groq_e2e_latency_ms": 0.06, "groq_e2e_ips": 17147.76,
                      "groq_onchip_latency_ms": 0.03, "groq_onchip_ips": 32358.97, "build_cached": False},
             notes=["compile time"]),
    ],
    "groq/upstream-spring2024-minilmv2-sample-output.log": [
        dict(exercise="groq/minilm", status="complete",
             metrics={"cpu_spearman": 0.8203, "cpu_e2e_latency_ms": 65.67, "cpu_e2e_ips": 15.23,
                      "groq_spearman": 0.8204, "groq_e2e_latency_ms": 0.47, "groq_e2e_ips": 2144.87,
                      "groq_onchip_latency_ms": 0.38, "groq_onchip_ips": 2620.58}),
    ],
    "groq/student-sarora39-spring2024-bert_tiny-custom-input.log": [
        dict(exercise="groq/bert_tiny", status="complete", params={"build_name": "bert_tiny_custom"},
             metrics={"cpu_accuracy": 77.47, "cpu_e2e_latency_ms": 4.10, "cpu_e2e_ips": 243.63,
                      "groq_accuracy": 77.47, "groq_e2e_latency_ms": 0.08, "groq_e2e_ips": 12762.62,
                      "groq_onchip_latency_ms": 0.04, "groq_onchip_ips": 23391.20}),
    ],
    "groq/student-xiaoruiDong-spring2024-bert_test-cached-build.log": [
        dict(exercise="groq/bert_tiny", status="complete", params={"build_name": "bert_test"},
             metrics={"cpu_accuracy": 77.47, "cpu_e2e_latency_ms": 2.27, "cpu_e2e_ips": 441.39,
                      "groq_e2e_latency_ms": 0.05, "groq_e2e_ips": 18288.90, "groq_onchip_latency_ms": 0.03,
                      "groq_onchip_ips": 37576.72, "build_cached": True},
             notes=["cache"]),
    ],
    "groq/student-kloiks-spring2024-bert_tiny-dummy-input.log": [
        dict(exercise="groq/bert_tiny", status="complete", params={"build_name": "bert_tiny_modified"},
             metrics={"cpu_accuracy": 77.47, "cpu_e2e_latency_ms": 2.07, "cpu_e2e_ips": 482.40,
                      "groq_e2e_latency_ms": 0.06, "groq_e2e_ips": 17725.57, "groq_onchip_latency_ms": 0.03,
                      "groq_onchip_ips": 37576.72, "build_cached": True}),
    ],
    "groq/student-drapi222-fall2024-minilmv2-custom-input-terminal-session.log": [
        dict(exercise="groq/minilm", status="complete", params={"build_name": "minilmv2"},
             metrics={"cpu_spearman": 0.8203, "cpu_e2e_latency_ms": 65.35, "cpu_e2e_ips": 15.30,
                      "groq_spearman": 0.8203, "groq_e2e_latency_ms": 0.48, "groq_e2e_ips": 2065.11,
                      "groq_onchip_latency_ms": 0.41, "groq_onchip_ips": 2460.74, "build_cached": False}),
        dict(exercise="groq/minilm", status="complete", params={"build_name": "minilmv2"},
             metrics={"cpu_e2e_latency_ms": 64.70, "cpu_e2e_ips": 15.46, "groq_e2e_latency_ms": 0.48,
                      "groq_e2e_ips": 2072.15, "groq_onchip_ips": 2460.74, "build_cached": True}),
        dict(exercise="groq/minilm", status="complete", params={"build_name": "minilmv2_custom"},
             metrics={"cpu_e2e_latency_ms": 66.55, "cpu_e2e_ips": 15.03, "groq_e2e_latency_ms": 0.48,
                      "groq_e2e_ips": 2064.04, "groq_onchip_ips": 2460.74, "build_cached": False}),
    ],
}

# Slurm stdout files: no run, only the pointer to the job's BertLarge.out.
POINTERS = {
    "sambanova/sveldman-spring2024-slurm-30451.log": "/home/datascientist38/BertLarge/040424.04/BertLarge.out",
    "sambanova/tstabrawa-fall2024-slurm-43715.log": "/home/stabrawa/BertLarge/112124.21/BertLarge.out",
    "sambanova/tstabrawa-fall2024-slurm-43716.log": "/home/stabrawa/BertLarge/112124.22/BertLarge.out",
    "sambanova/tstabrawa-fall2024-slurm-43717.log": "/home/stabrawa/BertLarge/112124.22/BertLarge.out",
    "sambanova/tstabrawa-fall2024-slurm-43720.log": "/home/stabrawa/BertLarge/112124.23/BertLarge.out",
    "sambanova/tstabrawa-fall2024-slurm-43721.log": "/home/stabrawa/BertLarge/112124.23/BertLarge.out",
}
SESSION = "sambanova/tstabrawa-fall2024-HW7-sambanova-shell-session.txt"


def _close(actual, expected):
    if isinstance(expected, bool) or isinstance(expected, str):
        return actual == expected
    return isinstance(actual, (int, float)) and not isinstance(actual, bool) and \
        actual == pytest.approx(expected, rel=1e-9, abs=1e-12)


def check_run(run, want):
    assert run.source == "log"
    assert run.exercise == want["exercise"]
    assert run.status == want["status"], run.notes
    for key, value in want.get("params", {}).items():
        assert key in run.params, (key, run.params)
        assert _close(run.params[key], value), (key, run.params[key], value)
    for key, value in want.get("metrics", {}).items():
        assert key in run.metrics, (key, run.metrics)
        assert _close(run.metrics[key], value), (key, run.metrics[key], value)
    for key, value in want.get("environment", {}).items():
        assert run.environment.get(key) == value, (key, run.environment)
    for key, length in want.get("series_len", {}).items():
        assert len(run.series[key]["x"]) == len(run.series[key]["y"]) == length
    for key in want.get("absent_metrics", []):
        assert key not in run.metrics, key
    for key in want.get("absent_params", []):
        assert key not in run.params, key
    text = " ".join(run.notes).lower()
    for words in want.get("notes", []):
        assert words.lower() in text, (words, run.notes)


def test_every_fixture_has_expectations(testbed_logs):
    on_disk = {str(p.relative_to(testbed_logs)) for p in testbed_logs.rglob("*") if p.is_file() and p.name != "SOURCES.md"}
    assert on_disk == set(EXPECTED) | set(POINTERS) | {SESSION}


def test_sources_md_numbers_are_the_ones_asserted(testbed_logs):
    """Each bold number SOURCES.md gives for a file is among the values asserted for it."""
    sources = (testbed_logs / "SOURCES.md").read_text(encoding="utf-8")
    checked = 0
    for row in sources.splitlines():
        m = re.match(r"\| `([^`]+)` \|", row)
        if not m:
            continue
        matches = [k for k in EXPECTED if k.endswith("/" + m.group(1))]
        if len(matches) != 1:
            continue
        key_numbers_cell = row.split(" | ")[3]
        asserted = [v for run in EXPECTED[matches[0]] for part in ("params", "metrics")
                    for v in run.get(part, {}).values() if not isinstance(v, (bool, str))]
        for bold in re.findall(r"\*\*([^*]+)\*\*", key_numbers_cell):
            for text in re.findall(r"(?<![\w.])\d[\d,]*(?:\.\d+)?", bold):
                value = float(text.replace(",", ""))
                assert any(v == pytest.approx(value, rel=1e-6) for v in asserted), (matches[0], bold)
                checked += 1
    assert checked >= 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_numbers(testbed_logs, name):
    report = labkit.logs.read(testbed_logs / name)
    assert report.format == name.split("/")[0]
    assert len(report.runs) == len(EXPECTED[name]), [r.to_dict() for r in report.runs]
    for run, want in zip(report.runs, EXPECTED[name]):
        check_run(run, want)
    assert report.run is report.runs[-1]
    assert not any("could not be read" in n for n in report.notes), report.notes


@pytest.mark.parametrize("name", sorted(POINTERS))
def test_slurm_pointer_files_have_no_run_but_the_pointer(testbed_logs, name):
    report = labkit.logs.read(testbed_logs / name)
    assert report.format == "sambanova"
    assert report.runs == []
    assert report.pointers == [POINTERS[name]]
    assert "output directory" in " ".join(report.notes)
    with pytest.raises(labkit.logs.NoRunError, match="no run found"):
        report.run


def test_shell_session_shows_cached_pef_twice_and_the_task_counts(testbed_logs):
    report = labkit.logs.read(testbed_logs / SESSION)
    runs = report.runs
    assert report.format == "sambanova"
    assert len(runs) == 7  # ./BertLarge.sh was run seven times (twice stopped by a cached PEF)
    assert [r.metrics.get("compile_skipped") for r in runs].count(True) == 2
    assert all(r.params["log_kind"] == "submission" and r.status == "incomplete" for r in runs)
    tasks = [(r.params.get("ntasks"), r.params.get("ntasks_per_node")) for r in runs if "ntasks" in r.params]
    assert (32, 16) in tasks and (8, 16) in tasks and (8, 8) in tasks
    rejected = [r for r in runs if r.params.get("ntasks") == 32]
    assert rejected and all("rejects this job at submission" in " ".join(r.notes) for r in rejected)


def test_sambanova_throughput_is_tokens_and_flat_time(testbed_logs):
    """training_sequences_per_second = ntasks x batch x steps x msl / e2e, and e2e stays flat."""
    names = ["sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log",
             "sambanova/tstabrawa-fall2024-HW7-BertLarge-8tasks-2ndlog.log",
             "sambanova/student-xiaoruiDong-spring2024-bertlarge-ntasks4-run.log"]
    runs = [labkit.logs.read(testbed_logs / n).run for n in names]
    for run in runs:
        p, m = run.params, run.metrics
        tokens = p["ntasks"] * p["batch_size"] * p["steps_this_run"] * p["max_seq_length"] / m["e2e_train_time"]
        assert tokens == pytest.approx(m["training_sequences_per_second"], rel=1e-6)
        assert "tokens per second" in " ".join(run.notes)
        assert m["ranks_seen"] == p["ntasks"]  # every rank wrote to the log
    times = [r.metrics["e2e_train_time"] for r in runs]
    assert max(times) / min(times) < 1.15  # 4, 8 and 16 tasks: flat wall time
    rates = [r.metrics["training_sequences_per_second"] for r in runs]
    assert rates[0] / rates[2] == pytest.approx(16 / 4, rel=0.15)  # throughput scales with ntasks


def test_slurm_pointer_is_followed_to_a_copied_training_log(testbed_logs, tmp_path):
    slurm = tmp_path / "slurm-43717.out"
    slurm.write_bytes((testbed_logs / "sambanova/tstabrawa-fall2024-slurm-43717.log").read_bytes())
    (tmp_path / "112124.22").mkdir()
    (tmp_path / "112124.22" / "BertLarge.out").write_bytes(
        (testbed_logs / "sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log").read_bytes())
    report = labkit.logs.read(slurm)
    assert report.run.metrics["e2e_train_time"] == pytest.approx(470.3965759277344)
    assert "pointer" in report.run.notes[0] and "slurm-43717.out" in report.run.notes[0]
    assert labkit.logs.read(slurm, follow=False).runs == []


def test_cerebras_series_hold_every_train_line(testbed_logs):
    gptj = labkit.logs.read(testbed_logs / "cerebras/upstream-fall2024-gptj-6B-sample-output-last-section.log").run
    assert gptj.series["rate"] == {"x": [100, 200], "y": [19.81, 19.80], "x_label": "step"}
    assert gptj.series["global_rate"]["y"] == [19.81, 19.80]
    assert gptj.series["loss"]["y"][-1] == 8.375
    gpt2 = labkit.logs.read(testbed_logs / "cerebras/upstream-spring2024-gpt2-small-sample-output.log").run
    assert gpt2.series["loss"]["x"] == list(range(100, 11201, 100))
    bert = labkit.logs.read(testbed_logs / "cerebras/upstream-spring2024-bert-large-MSL128-sample-output.log").run
    assert bert.series["global_rate"]["y"][0] == 974.00 and bert.series["global_rate"]["y"][-1] == 1112.94
    # Queue, compile and run phases from the time stamps (03:00:06.793 compile start ... 03:35:51.746 done).
    assert bert.metrics["compile_queue_s"] == pytest.approx(10.026)  # 03:00:08.492 -> 03:00:18.518 first poll
    assert bert.metrics["compile_s"] + bert.metrics["compile_queue_s"] == pytest.approx(892.759)  # 03:00:06.793 -> 03:14:59.552
    assert bert.metrics["run_wall_s"] == pytest.approx(1025.651)  # 03:18:46.095 -> 03:35:51.746
