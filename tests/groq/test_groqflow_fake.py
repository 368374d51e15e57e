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


def test_an_op_the_groqchip_compiler_does_not_support_fails_the_build(fake_groqflow):
    """groqflow export.CheckOnnxCompatibility: the SDK's analyzer lists an unsupported op, a StageError."""
    groqnode.set_unsupported_ops(fake_groqflow / "node", ["Gather"])
    model, dummy = embedding_classifier(100, 8)
    with pytest.raises(BackendError) as raised:
        backends.GroqEngine(model, "classification", dummy, label="small")
    assert str(raised.value) == (
        "groq: groqit() could not build labkit_small: GroqFlow raised StageError: You model contains ONNX "
        "operation(s) that are not supported by Groq Compiler: Gather Please replace these operation(s) in your "
        "model or contact sales@groq.com to request improved operation support in Groq Compiler.")
    log = (fake_groqflow / "groqflow-cache" / "labkit_small" / "log_check_compatibility.txt").read_text()
    assert "Unsupported ops: Gather" in log and "Model has 1 unsupported ops" in log


def test_a_cached_build_is_rebuilt_when_the_model_dtype_config_or_version_changed(fake_groqflow, capsys):
    """onnxflow ignition.validate_cached_model and groqflow ignition._validate_cached_model."""
    import json

    import torch
    from groqflow import groqit

    model, dummy = embedding_classifier(100, 8)
    groqit(model, dummy, build_name="m")
    capsys.readouterr()
    groqit(model, dummy, build_name="m")
    assert 'Build "m" found in cache. Loading it!' in capsys.readouterr().out
    with torch.no_grad():
        model.head.bias += 1.0  # new weights, same architecture
    groqit(model, dummy, build_name="m")
    out = " ".join(capsys.readouterr().out.split())
    assert "decided to rebuild for the following reasons:" in out and 'Model "m" changed since the last time' in out
    assert "You are building multiple different models in the same script" in out
    same = {k: v.to(torch.int32) for k, v in dummy.items()}  # int64 is int32 after the FP16 conversion: the same
    groqit(model, same, build_name="m")
    assert 'Build "m" found in cache' in capsys.readouterr().out
    as_float = dict(dummy, attention_mask=dummy["attention_mask"].float())
    groqit(model, as_float, build_name="m")
    assert 'Input data type of model "m" changed from' in capsys.readouterr().out
    groqit(model, as_float, build_name="m", compiler_flags=["--large-program"])
    assert ('build_model() argument "compiler_flags" for build m changed from [] to [\'--large-program\'] since the '
            'last build.') in " ".join(capsys.readouterr().out.split())
    state_file = fake_groqflow / "groqflow-cache" / "m" / "state.json"
    state = json.loads(state_file.read_text())
    state_file.write_text(json.dumps(dict(state, groqflow_version="4.2.1")))
    groqit(model, as_float, build_name="m", compiler_flags=["--large-program"])
    out = " ".join(capsys.readouterr().out.split())
    assert ("Your build m was previously built against GroqFlow version 4.2.1, however you are now using GroqFlow "
            "version 4.3.1.") in out and "found in cache" not in out


def test_a_fault_on_the_chips_is_one_sentence_and_stderr_is_given_back(fake_groqflow, capfd):
    """GroqModel._execute_locally: the SDK's program fails, a ModelRuntimeError whose message GroqFlow
    prints into log_execute.txt, as it leaves sys.stderr there."""
    import sys

    model, dummy = embedding_classifier(100, 8)
    engine = backends.GroqEngine(model, "classification", dummy, label="small")
    groqnode.chip_fault(fake_groqflow / "node", "tsp runtime: the GroqChip stopped responding")
    stderr = sys.stderr
    with pytest.raises(BackendError) as raised:
        engine.run_dataset([dummy, dummy])
    log = fake_groqflow / "groqflow-cache" / "labkit_small" / "log_execute.txt"
    assert str(raised.value) == ("groq: GroqModel.run_abunch: GroqFlow raised ModelRuntimeError: Failed while trying "
                                 "to run GroqChips locally. Refer to {} for details.".format(log))
    assert sys.stderr is stderr
    assert "the GroqChip stopped responding" in capfd.readouterr().err  # the program's own stderr: the screen


def test_groqflow_leaves_stderr_in_the_execute_log_when_the_chips_fail(fake_groqflow):
    import sys

    from groqflow import groqit
    import onnxflow.common.exceptions as exp

    model, dummy = embedding_classifier(100, 8)
    gmodel = groqit(model, dummy, build_name="small")
    groqnode.chip_fault(fake_groqflow / "node", "tsp runtime: fault")
    stderr = sys.stderr
    try:
        with pytest.raises(exp.ModelRuntimeError) as raised:
            gmodel.run(dummy)
        left = sys.stderr
    finally:
        sys.stderr = stderr
    assert str(raised.value) == "" and left is not stderr
    left.log_file.flush()
    assert "Error: Failed while trying to run GroqChips locally." in (
        fake_groqflow / "groqflow-cache" / "small" / "log_execute.txt").read_text()
