"""The GroqFlow path, driven against a fake groqflow that speaks GroqFlow's API (see tests/fakes/README.md)."""

from __future__ import annotations

import pytest

from labkit.testbeds.groq import backends
from labkit.testbeds.groq.backends import BackendError
from labkit.testbeds import groq
from labkit.testbeds.groq.report import make_run
from tests.fakes import groqnode
from tests.groq.conftest import embedding_classifier


def _config(tiny_dirs, **values):
    values.setdefault("model", str(tiny_dirs["classifier"]))
    values.setdefault("max_seq_length", 16)
    values.setdefault("num_samples", 6)
    return groq.SPEC.validate(values)


def test_groq_is_found_through_groqflows_chip_count(fake_groqflow):
    assert backends.groq_chips()[0] == 1
    assert "groq" in backends.resolve_backends("auto")


def test_no_groqchip_means_no_groq_backend(fake_groqflow, monkeypatch):
    groqnode.set_cards(fake_groqflow / "node", 0)
    assert "groq" not in backends.resolve_backends("auto")
    with pytest.raises(ValueError, match="'groq' is not available here: groqflow is installed but no GroqChip"):
        backends.resolve_backends("groq")


def test_the_proof_points_method_on_groq(fake_groqflow, tiny_dirs, capsys):
    from groqflow.groqmodel import groqmodel as fake

    config = _config(tiny_dirs, backends="cpu,groq")
    loaded = groq.load_model(config)
    data = groq.load_data(config, loaded)
    engines = groq.build(config, loaded)
    gmodel = engines["groq"].gmodel
    assert gmodel.state.expected_input_shapes == {"input_ids": (1, 16), "attention_mask": (1, 16)}
    result = groq.evaluate(config, loaded, data, engines, repetitions=3)
    # predictions in one run_abunch call; then GroqFlow's own latency figures, as the proof point asks for them
    assert gmodel.calls == ["run_abunch", "estimate_performance", "benchmark"]
    assert result.latency["groq"]["end_to_end"] == fake.FAKE_MEASURED_LATENCY_S
    assert result.latency["groq"]["on_chip"] == pytest.approx(fake.FAKE_TOTAL_CYCLES / 9e8)
    table = result.table.set_index("Source")
    assert table.loc["groq", "on-chip latency (ms)"] == "0.03 ms"
    assert table.loc["groq", "end-to-end latency (ms)"] == "0.06 ms"
    assert table.loc["groq", "end-to-end IPS"] == "16666.67 IPS"
    assert table.loc["cpu", "on-chip latency (ms)"] == "--" and table.loc["cpu", "on-chip IPS"] == "--"
    assert result.latency_table.set_index("Source").loc["groq", "in GroqFlow's table"].startswith("compile-time")
    # FP16 on the "chip" still gives the CPU's labels on these inputs, and the differences are reported
    assert result.disagreements["groq"] == [] and 0 < result.max_difference["groq"] < 1e-2
    assert result.parity.iloc[0]["disagreements"] == 0
    run = make_run(config, loaded, data, result)
    assert run.source == "testbed"
    assert run.metrics["groq_onchip_latency_ms"] == pytest.approx(0.03)
    assert run.metrics["groq_e2e_latency_ms"] == pytest.approx(0.06)
    assert run.units["groq_e2e_latency_ms"] == "ms" and run.metrics["cpu_accuracy"] == result.scores["cpu"] * 100
    shown = groq.table_from_runs([run]).set_index("Source")
    assert shown.loc["groq", "on-chip latency (ms)"] == pytest.approx(0.03)
    assert shown.loc["cpu", "on-chip latency (ms)"] == "--"
    assert "No inputs received for benchmark" in capsys.readouterr().out


def test_custom_text_and_a_new_length_on_groq(fake_groqflow, tiny_dirs, capsys):
    config = _config(tiny_dirs, backends="groq", custom_text=["a good film", "an awful plot"])
    loaded = groq.load_model(config)
    engines = groq.build(config, loaded)
    table = groq.custom(config, loaded, engines)
    assert list(table["backend"]) == ["cpu", "groq", "cpu", "groq"]
    assert set(table["agrees with cpu"]) == {"yes"}
    assert engines["groq"].gmodel.calls == ["run", "run"]
    lines = groq.shape_lesson(config, loaded, engines)
    assert any(line.startswith("groq: compiled for 16 tokens") for line in lines)
    # the homework: another sequence length; GroqFlow sees the new shape and rebuilds
    longer = _config(tiny_dirs, backends="groq", max_seq_length=32)
    groq.build(longer, loaded)
    out = capsys.readouterr().out
    assert "Input shape of model" in out and "(1, 32)" in out


def test_a_wrong_shape_is_refused_by_the_groq_model(fake_groqflow, tiny_dirs):
    config = _config(tiny_dirs, backends="groq")
    loaded = groq.load_model(config)
    engines = groq.build(config, loaded)
    from labkit.testbeds.groq import evalsets

    with pytest.raises(BackendError, match=r"Model built to always take input of shape \{'attention_mask': \(1, 16\)"):
        engines["groq"](evalsets.dummy_inputs("classification", 8))


def _big_model():
    """51.2M parameters (an embedding of 400,000 x 128): more than one GroqChip holds."""
    return embedding_classifier(400000, 128)


def test_a_model_for_two_chips_on_a_node_with_two_says_so_in_one_sentence(fake_groqflow, capsys):
    from groqflow.groqmodel import groqmodel as fake

    groqnode.set_cards(fake_groqflow / "node", 2)
    model, dummy = _big_model()
    engine = backends.GroqEngine(model, "classification", dummy, label="big")
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("groq: ")]
    assert said == ["groq: groqit() built labkit_big for 2 GroqChips: GroqFlow gives each chip at most 50M "
                    "parameters and uses a power of 2 chips, and the model has 51.2M parameters."]
    assert engine.chips == 2
    engine.benchmark(dummy)
    # GroqFlow's estimate covers the pipeline of both chips: twice one stage's cycles
    assert engine.on_chip_latency_s == pytest.approx(2 * fake.FAKE_TOTAL_CYCLES / 9e8)


def test_a_model_for_two_chips_on_a_node_with_one_is_refused_before_it_runs(fake_groqflow):
    model, dummy = _big_model()
    with pytest.raises(BackendError) as raised:
        backends.GroqEngine(model, "classification", dummy, label="big")
    assert str(raised.value) == (
        "groq: groqit() built labkit_big for 2 GroqChips: GroqFlow gives each chip at most 50M parameters and uses "
        "a power of 2 chips, and the model has 51.2M parameters. This node has 1 (1 GroqChip(s) found), so the "
        "model cannot run here.")


def test_groqflow_itself_refuses_to_run_a_build_for_more_chips_than_the_node_has(fake_groqflow, capfd):
    """What labkit says before it runs: GroqModel's own ModelRuntimeError at the first run."""
    from groqflow import groqit
    import onnxflow.common.exceptions as exp

    model, dummy = _big_model()
    gmodel = groqit(model, dummy, build_name="big")
    assert gmodel.state.num_chips_used == 2
    with pytest.raises(exp.ModelRuntimeError):
        gmodel.run(dummy)
    assert ("Trying to execute a model compiled for 2 GroqChip processors but this machine only has 1 GroqChip "
            "processors available.") in capfd.readouterr().err
