"""BERT-Large and LLaMA on labkit.accelerator's policy, as far as a CPU shows it: the precision and
micro-batch a plan chooses and the run records, accumulation in the real run, the measured estimate
behind the time shown and the 2-hour refusal (the CUDA side runs in tests/gpu on a GPU)."""

from __future__ import annotations

import pytest

from labkit import bert, llm
from labkit.params import ParameterError
from labkit.testbeds.cerebras import bert_large, llama2_7b
from labkit.testbeds.cerebras.bert_large.portable import step_plan

MICRO = {"model_size": "micro", "batch_size": 8, "max_steps": 4, "log_steps": 2, "max_seq_length": 32,
         "target": "cpu"}


def test_micro_batch_size_takes_an_int_auto_or_none_and_must_divide_the_batch():
    assert bert_large.SPEC.validate(dict(MICRO, micro_batch_size="auto")).micro_batch_size == "auto"
    assert bert_large.SPEC.validate(dict(MICRO, micro_batch_size=2)).micro_batch_size == 2
    with pytest.raises(ParameterError, match="micro_batch_size = 3"):
        bert_large.SPEC.validate(dict(MICRO, micro_batch_size=3))
    with pytest.raises(ParameterError, match="micro_batch_size = 'big'.*an int or 'auto'"):
        bert_large.SPEC.validate(dict(MICRO, micro_batch_size="big"))
    with pytest.raises(ParameterError, match="precision = 'fp16'"):
        bert_large.SPEC.validate(dict(MICRO, precision="fp16"))


def test_a_cpu_plan_at_auto_reads_as_before_and_auto_is_the_whole_batch_in_fp32():
    chosen = bert_large.plan(bert_large.SPEC.validate(dict(MICRO, micro_batch_size="auto")))
    assert chosen.lines()[:2] == ["Where: the portable BERT on cpu ({})".format(chosen.where.split("(", 1)[1][:-1]),
                                  "Why: target='cpu' was asked for"]
    assert (chosen.steps.precision.name, chosen.steps.micro_batch.size, chosen.steps.launch) == ("fp32", 8, "eager")
    assert "encoder layer" in chosen.steps.measured and chosen.steps.seconds_per_sample > 0


def test_an_asked_precision_and_micro_batch_show_in_the_plan_and_the_run_records_them():
    config = bert_large.SPEC.validate(dict(MICRO, precision="bf16", micro_batch_size=2))
    chosen = bert_large.plan(config)
    assert chosen.where.endswith(" in bf16")
    assert "precision='bf16': bf16 autocast" in chosen.why and "micro-batch 2 x 4 accumulated" in chosen.why
    printed = []
    run = bert_large.run_portable(config, chosen.device, echo=printed.append, progress=False, steps=chosen.steps)
    assert run.params["precision"] == "bf16"
    assert (run.environment["micro_batch"], run.environment["accumulation"]) == (2, 4)
    assert any("Gradient accumulation: 4 micro-batches of 2 per step." in line for line in printed)
    assert any("the CS-2 trains in mixed precision" in note for note in run.notes)


def test_the_estimate_is_measured_here_and_scales_with_the_samples():
    config = bert_large.SPEC.validate(dict(MICRO, model_size="tiny", max_seq_length=64))
    one = step_plan(config, "cpu").seconds(config.batch_size * config.max_steps)
    assert one > 0
    assert step_plan(config.replace(max_steps=8), "cpu").seconds(config.batch_size * 8) == pytest.approx(2 * one)
    steps = bert.plan_steps("tiny", 64, 8, "cpu")
    assert steps.seconds(8 * 4) == pytest.approx(one)
    with pytest.raises(ParameterError, match=r"would take about \d+ days \(measured here: one large encoder layer"):
        bert_large.plan(bert_large.SPEC.validate({"target": "cpu"}))


def test_bert_flops_a_sequence_is_the_yardsticks_formula():
    # ../shared/gpu/reference.py: 6 x parameters x length + 12 x layers x hidden x length^2
    model = bert.build_model("micro", 32, seed=0)
    cfg = model.config
    expected = 6 * bert.count_parameters(model) * 32 + 12 * cfg.num_hidden_layers * cfg.hidden_size * 32 ** 2
    assert bert.flops_per_sequence("micro", 32) == pytest.approx(expected, rel=0.01)


def test_llama_auto_stays_small_on_a_cpu_and_the_plan_is_measured():
    config = llama2_7b.SPEC.validate({"device": "cpu", "batch_size": 2, "steps": 3, "sequence_length": 32})
    chosen = llama2_7b.plan(config)
    assert chosen.steps.model_size == llama2_7b.spec.PORTABLE_SIZE and not chosen.steps.checkpointing
    assert chosen.lines()[1] == "Why: device='cpu' was asked for"
    assert chosen.steps.seconds_per_step > 0 and "small" in chosen.steps.measured


def test_the_llama_plan_counts_autocasts_bf16_weights_and_retries_7b_with_checkpointing_before_small():
    # An H200 as torch reports it (143,771 MiB); the notebook's default batch of 8 x 128 tokens.
    from labkit.accelerator import DeviceInfo

    h200 = DeviceInfo("cuda", "NVIDIA H200", (9, 0), 143771 * 2 ** 20)
    h100 = DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", (9, 0), 81559 * 2 ** 20)
    params = llm.parameter_count("7b", 2048)
    for checkpointing in (False, True):
        bf16 = llm.training_memory_bytes("7b", 2048, 8, 128, checkpointing, "bf16")
        assert bf16 - llm.training_memory_bytes("7b", 2048, 8, 128, checkpointing, "fp32") == 2 * params
    # 8 x 128 fits without checkpointing by the arithmetic; should the probe run out of memory, 7b is
    # tried again with checkpointing before any smaller preset, and the Why line says so.
    assert llm.device_plan.attempts("7b", 2048, 8, 128, h200, "bf16") == (
        (False, ""), (True, "without it 7b ran out of memory in its probe step"))
    # a batch whose activations do not fit: checkpointing alone, and the figure that decided it
    ((on, why),) = llm.device_plan.attempts("7b", 2048, 64, 128, h200, "bf16")
    needs = llm.training_memory_bytes("7b", 2048, 64, 128, False, "bf16")
    assert on and needs > 0.9 * h200.memory_bytes and why == (
        "without it 7b needs about {:.0f} GB to train, more than 90% of {}".format(needs / 1e9, h200.describe()))
    assert llm.device_plan.attempts("7b", 2048, 8, 128, h100, "bf16") == ()
    assert llm.device_plan.attempts("small", 2048, 8, 128, h100, "bf16") == ((False, ""), (True, (
        "without it small ran out of memory in its probe step")))
    assert llm.device_plan.attempts("7b", 2048, 8, 128, DeviceInfo("cpu", "x86_64"), "fp32") == ((False, ""),)


def test_llama_7b_fits_an_h200_with_checkpointing_and_not_an_80_gb_gpu_by_its_memory_estimate():
    # What plan_llama decides from before building anything (the H200 measured 108-109 GB at 2048 tokens).
    h200, h100 = 150.0e9, 85.0e9  # total_memory torch reports for them
    with_checkpoints = llm.training_memory_bytes("7b", 2048, 8, 128, True)
    assert llm.training_memory_bytes("7b", 2048, 8, 128, False) > with_checkpoints
    assert 0.9 * h100 < with_checkpoints < 0.9 * h200
    assert llm.training_memory_bytes("small", 2048, 8, 128, False) < 0.01 * h100
