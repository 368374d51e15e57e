"""Bad parameters for the Cerebras exercise: clear errors naming the parameter, nothing run."""

from __future__ import annotations

import pytest

from labkit.params import ParameterError
from labkit.testbeds.cerebras import bert_large
from labkit.testbeds.cerebras.bert_large.spec import MAX_STEPS


def problems(**values):
    with pytest.raises(ParameterError) as info:
        bert_large.SPEC.validate(values)
    return str(info.value)


def test_defaults_are_the_courses():
    config = bert_large.SPEC.validate({})
    assert (config.batch_size, config.max_steps, config.log_steps, config.max_seq_length) == (1024, 1000, 100, 128)
    assert (config.model_size, config.target, config.seed, config.log_path) == ("large", "auto", 0, None)


def test_batch_size_zero():
    text = problems(batch_size=0)
    assert "batch_size = 0" in text and "too small" in text and ">= 1" in text


def test_absurd_max_steps():
    text = problems(max_steps=10**9)
    assert "max_steps = 1000000000" in text and "<= {}".format(MAX_STEPS) in text


def test_log_steps_beyond_max_steps():
    text = problems(max_steps=50, log_steps=100)
    assert "log_steps = 100" in text and "more than max_steps = 50" in text


def test_micro_batch_must_divide_the_batch():
    assert "micro_batch_size = 300" in problems(batch_size=1024, micro_batch_size=300)
    assert bert_large.SPEC.validate({"batch_size": 1024, "micro_batch_size": 256}).micro_batch_size == 256


def test_unknown_target_and_size_suggest_the_right_one():
    assert "target = 'csx'" in problems(target="csx") and "'CSX'" in problems(target="csx")
    assert "did you mean 'CSX'" in problems(target="CXS")
    assert "did you mean 'tiny'" in problems(model_size="tiny ")


def test_missing_log_path(tmp_path):
    missing = tmp_path / "mytest.log"
    text = problems(log_path=str(missing))
    assert "log_path" in text and "no such file" in text


def test_missing_comparison_log(tmp_path):
    text = problems(compare_logs=[str(tmp_path / "bs512.log")])
    assert "compare_logs" in text and "bs512.log" in text and "no such file" in text


def test_bad_comparison_batch_sizes():
    assert "compare_batch_sizes" in problems(compare_batch_sizes=[512, 0])
    assert "compare_batch_sizes" in problems(compare_batch_sizes=["512"])


def test_a_hopeless_portable_run_is_refused_before_it_starts():
    # BERT-Large, batch 1024, 1000 steps on this CPU: days. Refused with the way out.
    with pytest.raises(ParameterError) as info:
        bert_large.plan(bert_large.SPEC.validate({"target": "cpu"}))
    text = str(info.value)
    assert "model_size = 'large'" in text and "allow_long_run=True" in text and "log_path" in text
    small = bert_large.SPEC.validate({"target": "cpu", "model_size": "tiny", "batch_size": 32, "max_steps": 100,
                                         "log_steps": 10})
    assert bert_large.plan(small).path == "portable"
    assert bert_large.plan(bert_large.SPEC.validate({"target": "cpu", "allow_long_run": True})).path == "portable"


def test_comparison_runs_after_a_log_are_checked_too(cerebras_logs):
    from .conftest import STUDENT_LOGS

    config = bert_large.SPEC.validate({"log_path": str(STUDENT_LOGS[1024]), "compare_batch_sizes": [512],
                                          "target": "cpu"})
    with pytest.raises(ParameterError, match="allow_long_run"):
        bert_large.compare(config, bert_large.plan(config))  # BERT-Large at 512 on this CPU: refused, not started
