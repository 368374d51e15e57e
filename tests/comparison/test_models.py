"""The scaling study's models: the representative one has exactly the study's parameter counts."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from labkit.params import ParameterError
from labkit.testbeds.comparison import SPEC, models as scaling_models, replicas, study as scaling


def test_representative_model_has_the_studys_counts_and_its_frozen_half_stays_frozen():
    torch.manual_seed(0)
    model = scaling_models.build("representative")
    assert scaling_models.parameter_counts(model) == (8922155, 4512347, 4409808)
    frozen = {name: p.detach().clone() for name, p in model.named_parameters() if not p.requires_grad}
    trained = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    images, labels = replicas.synthetic_images(16, seed=1)
    optimizer.zero_grad()
    F.cross_entropy(model(images), labels).backward()
    optimizer.step()
    params = dict(model.named_parameters())
    assert all(torch.equal(params[name], value) and params[name].grad is None for name, value in frozen.items())
    assert any(not torch.equal(params[name], value) for name, value in trained.items())
    assert model(images).shape == (16, 10)


def test_small_model_is_all_trained():
    total, trainable, frozen = scaling_models.parameter_counts(scaling_models.build("small"))
    assert total == trainable == 9098 and frozen == 0


def test_each_models_description_gives_its_built_parameter_count():
    for name, description in scaling_models.MODELS.items():
        total = scaling_models.parameter_counts(scaling_models.build(name))[0]
        first_count = re.search(r"\d{1,3}(?:,\d{3})+", description).group()
        assert first_count == "{:,}".format(total), (name, description)


def test_model_parameter_is_checked_by_the_spec():
    assert SPEC.validate({}).model == "representative"
    assert SPEC.validate({"model": "small"}).model == "small"
    with pytest.raises(ParameterError) as info:
        SPEC.validate({"model": "resnet"})
    assert "model = 'resnet'" in str(info.value) and "'representative', 'small'" in str(info.value)
    with pytest.raises(ValueError, match="model = 'resnet': unknown; allowed: 'representative', 'small'"):
        scaling.study([1], [10], device="cpu", model="resnet")
