"""The exercise's parameters and its reading of testbed logs."""

from __future__ import annotations

import pytest

from labkit.params import ParameterError
from labkit.testbeds import groq
from tests.shared import missing_message, real_logs

LOGS = real_logs("groq")


def _problems(**values):
    with pytest.raises(ParameterError) as err:
        groq.SPEC.validate(values)
    return str(err.value)


def test_defaults_are_the_proof_points():
    config = groq.SPEC.validate({})
    assert (config.model, config.max_seq_length, config.batch_size) == ("M-FAC/bert-tiny-finetuned-sst2", 128, 1)
    assert config.num_samples is None and config.custom_text is None and config.backends == "auto"


def test_bad_lengths_are_refused():
    assert "max_seq_length = 0: too small; allowed: an int >= 2" in _problems(max_seq_length=0)
    assert "max_seq_length = 1024" in _problems(max_seq_length=1024) and "at most 512 tokens" in _problems(max_seq_length=1024)


def test_unknown_model_offline_is_refused_with_the_local_choices(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = _problems(model="someone/unknown-model")
    assert "hub is unreachable" in message and "sentence-transformers/all-MiniLM-L6-v2" in message


def test_backends_naming_something_absent_or_unknown():
    assert "unknown backend 'ipu'" in _problems(backends="cpu,ipu")
    assert "'groq' is not available here" in _problems(backends="groq")


def test_similarity_needs_two_custom_sentences_and_a_log_must_exist(tmp_path):
    assert "at least 2 sentences" in _problems(model="sentence-transformers/all-MiniLM-L6-v2", custom_text=["one"])
    assert "no such file" in _problems(log_path=str(tmp_path / "missing.log"))
    assert "empty sentence" in _problems(custom_text=["fine", "  "])


@pytest.mark.skipif(not LOGS.is_dir(), reason=missing_message(LOGS))
def test_the_course_log_gives_groqflows_table():
    table = groq.log_table(str(LOGS / "upstream-spring2024-bert_tiny-sample-output.log")).set_index("Source")
    assert table.loc["cpu", "Accuracy"] == 77.47 and table.loc["groq", "Accuracy"] == 77.47
    assert table.loc["cpu", "end-to-end latency (ms)"] == 2.29
    assert table.loc["groq", "on-chip latency (ms)"] == 0.03 and table.loc["cpu", "on-chip IPS"] == "--"
    minilm = groq.log_table(str(LOGS / "upstream-spring2024-minilmv2-sample-output.log"))
    assert "Spearman Rank Correlation Coefficient" in minilm.columns and set(minilm["exercise"]) == {"groq/minilm"}


@pytest.mark.parametrize("kind", ["classifier", "encoder"])
def test_batches_larger_than_one_score_every_sample_once(tiny_dirs, kind):
    pytest.importorskip("onnxruntime")
    values = {"model": str(tiny_dirs[kind]), "max_seq_length": 32, "num_samples": 6, "batch_size": 4,
              "backends": "cpu,onnxruntime"}
    if kind == "encoder":
        values["custom_text"] = ["a man plays guitar", "the man plays a guitar", "the cat sleeps"]
    config = groq.SPEC.validate(values)
    loaded = groq.load_model(config)
    data = groq.load_data(config, loaded)
    engines = groq.build(config, loaded)
    rows = 4 if kind == "classifier" else 8
    assert engines["onnxruntime"].build.input_shape == "{} x 32 (fixed)".format(rows)
    result = groq.evaluate(config, loaded, data, engines, repetitions=2)
    assert [len(p) for p in result.predictions.values()] == [6, 6]
    assert result.disagreements["onnxruntime"] == []
    if kind == "classifier":
        assert result.scores["onnxruntime"] == result.scores["cpu"]
    else:  # a random encoder's similarities are all close together: compare them, not their ranks
        assert result.predictions["onnxruntime"] == pytest.approx(result.predictions["cpu"], abs=1e-4)
    assert any("filled up with 2 copies" in n for n in result.notes)
    if kind == "encoder":
        table = groq.custom(config, loaded, engines)
        assert len(table) == 3 * 2 and set(table["agrees with cpu"]) == {"yes"}  # 3 pairs x 2 backends


@pytest.mark.skipif(not LOGS.is_dir(), reason="course logs not present")
def test_log_path_goes_through_the_five_steps_like_a_run_made_here(capsys):
    log = LOGS / "upstream-spring2024-bert_tiny-sample-output.log"
    config = groq.SPEC.validate({"log_path": str(log)})
    plan = groq.plan(config)
    assert plan.path == "log" and str(plan).startswith("Where: reads the GroqFlow log at " + str(log))
    run = groq.run_exercise(config)  # nothing is loaded, built or run here
    assert run.source == "log" and run.metrics["cpu_accuracy"] == 77.47 and run.details is None
    (table,) = groq.show(run)  # outside a kernel: what it would show
    assert list(table["Source"]) == ["cpu", "groq"] and table.set_index("Source").loc["groq", "Accuracy"] == 77.47
    assert groq.show_latency(run) == [] and groq.custom(config.replace(custom_text=["Fine."]), run) is None
    assert capsys.readouterr().out.count("This run was read from a log: nothing ran here") == 2
