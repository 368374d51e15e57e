"""The fake PopTorch is as strict as PopTorch's source (tests/fakes/poptorch/poptorch.py cites the
file and function of each behaviour): errors of its types and messages, where it raises them."""

import pytest
import torch

from tests.fakes import import_poptorch


class WithLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Linear(4, 3)

    def forward(self, x, y):
        out = self.model(x)
        return out, torch.nn.functional.cross_entropy(out, y)


def _data(n):
    return torch.randn(n, 4), torch.randint(0, 3, (n,))


@pytest.fixture
def poptorch(monkeypatch):
    return import_poptorch(monkeypatch, system_ipus=4)


def _training(poptorch, options=None):
    model = WithLoss()
    return poptorch.trainingModel(model, options, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))


def test_a_model_that_never_compiled_cannot_be_detached(poptorch):
    model = _training(poptorch)
    with pytest.raises(poptorch.Error) as error:
        model.detachFromDevice()
    assert error.value.message == "Model has not been compiled or has been destroyed."
    assert str(error.value) == "'poptorch_py_error': Model has not been compiled or has been destroyed."
    with pytest.raises(poptorch.Error, match="Model has not been compiled"):
        model.copyWeightsToHost()
    model.compile(*_data(4))
    model.detachFromDevice()
    with pytest.raises(poptorch.Error, match="Device is not attached"):
        model.detachFromDevice()
    model.attachToDevice()
    with pytest.raises(poptorch.Error, match="Device is already attached"):
        model.attachToDevice()


def test_a_replica_count_not_a_power_of_2_fails_at_compile(poptorch):
    options = poptorch.Options().replicationFactor(3)
    model = _training(poptorch, options)  # wrapping raises nothing
    with pytest.raises(poptorch.Error) as error:
        model(*_data(6))
    assert error.value.type == "poptorch_cpp_error" and error.value.message == (
        "The model specifies the use of 3 IPUs, however PopTorch must reserve a minimum of 4 in order to allow the "
        "model to run, because PopTorch must reserve a power of 2 or maximum of 64 IPUs per process. Please "
        "reconfigure your model to use a different number of IPUs or set poptorch.Options().autoRoundNumIPUs(True).")
    assert str(error.value).startswith("In poptorch/popart_compiler/source/CompilerImpl.cpp:")
    assert not model.isCompiled() and not poptorch._held
    rounded = _training(poptorch, poptorch.Options().replicationFactor(3).autoRoundNumIPUs(True))
    rounded(*_data(6))
    assert poptorch._held[rounded] == 4  # reserved, one unused


def test_options_freeze_once_a_dataloader_or_a_model_used_them(poptorch):
    options = poptorch.Options().deviceIterations(2)
    poptorch.DataLoader(options, torch.utils.data.TensorDataset(*_data(8)), batch_size=2)
    for change in (lambda: options.deviceIterations(4), lambda: options.outputMode(poptorch.OutputMode.All),
                   lambda: options.randomSeed(1), lambda: options.Training.gradientAccumulation(2)):
        with pytest.raises(AttributeError, match="^Can't modify frozen Options$"):
            change()
    fresh = poptorch.Options()
    _training(poptorch, fresh)
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        fresh.replicationFactor(2)
    with pytest.raises(AssertionError, match="Unexpected type"):
        poptorch.Options().deviceIterations(2.0)


def test_output_mode_is_an_int_enum_and_default_depends_on_the_model(poptorch):
    assert issubclass(poptorch.OutputMode, int)
    assert [(m.name, int(m)) for m in poptorch.OutputMode] == [
        ("Final", 0), ("EveryN", 1), ("All", 2), ("Sum", 3), ("Default", 4)]
    options = poptorch.Options().deviceIterations(3)
    training = _training(poptorch, options)
    assert options.output_mode == poptorch.OutputMode.Default  # the user's options: untouched, frozen
    out, loss = training(*_data(6))  # Default is Final for training: the last iteration only
    assert out.shape == (2, 3) and loss.shape == (1,)
    training.detachFromDevice()
    every = _training(poptorch, poptorch.Options().deviceIterations(3).outputMode(poptorch.OutputMode.All))
    out, loss = every(*_data(6))
    assert out.shape == (6, 3) and loss.shape == (3,)
    every.detachFromDevice()
    inference = poptorch.inferenceModel(torch.nn.Linear(4, 3), poptorch.Options().deviceIterations(3))
    assert inference(torch.randn(6, 4)).shape == (6, 3)  # Default is All for inference


def test_attaching_fails_at_compile_not_when_wrapping(poptorch, monkeypatch):
    holder = _training(poptorch, poptorch.Options().replicationFactor(4))
    holder(*_data(8))  # holds the system's 4 IPUs
    waiting = poptorch.inferenceModel(torch.nn.Linear(4, 3))  # no error here
    with pytest.raises(poptorch.Error) as error:
        waiting.compile(torch.randn(2, 4))
    assert error.value.message == "Failed to acquire 1 IPU(s)" and not waiting.isCompiled()
    too_many = _training(poptorch, poptorch.Options().replicationFactor(8))
    with pytest.raises(poptorch.Error) as error:
        too_many(*_data(8))
    assert error.value.message == ("Failed to acquire 8 IPU(s)\nNo device found on the system with 8 IPUs: the "
                                   "configuration needs changing")
    monkeypatch.setattr(poptorch, "SYSTEM_IPUS", 0)
    assert not poptorch.ipuHardwareIsAvailable()
    with pytest.raises(poptorch.Error, match="No IPU detected in the system"):
        poptorch.inferenceModel(torch.nn.Linear(4, 3)).compile(torch.randn(2, 4))


def test_compilation_shows_the_graph_compilation_bar_on_stderr(poptorch, capfd):
    _training(poptorch).compile(*_data(4))
    err = capfd.readouterr().err
    assert "Graph compilation: 100%" in err and "100/100" in err


def test_a_combined_batch_larger_than_the_data_gives_no_batch(poptorch):
    options = poptorch.Options().deviceIterations(2).replicationFactor(2)
    options.Training.gradientAccumulation(2)
    loader = poptorch.DataLoader(options, torch.utils.data.TensorDataset(*_data(30)), batch_size=4)
    assert loader.combinedBatchSize == 32 and len(loader) == 0 and list(loader) == []  # no error either


def test_inputs_must_match_those_compiled(poptorch):
    model = _training(poptorch, poptorch.Options().deviceIterations(2))
    model(*_data(4))
    with pytest.raises(poptorch.Error, match=r"Shape mismatch for args\[0\]"):
        model(*_data(8))
    with pytest.raises(AssertionError, match="Invalid batch dimension"):
        _training(poptorch, poptorch.Options().deviceIterations(2)).compile(*_data(3))


def test_a_model_is_wrapped_for_training_once(poptorch):
    model = WithLoss()
    poptorch.trainingModel(model)
    with pytest.raises(RuntimeError, match="Model has already been wrapped in 'poptorch.trainingModel'"):
        poptorch.trainingModel(model)


class WithDropout(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5))

    def forward(self, x, y=None):
        out = self.model(x)
        return out if y is None else (out, torch.nn.functional.cross_entropy(out, y))


def test_a_model_is_traced_in_the_mode_its_owner_left_it(poptorch):
    # trainingModel's docstring: "You may need to call model.train() on your model before you call
    # this function": an eval()'d model trains without its dropout, and wrapping changes no mode
    model = WithDropout().eval()
    x, y = _data(8)
    with torch.no_grad():
        expected = model(x)
    training = poptorch.trainingModel(model, poptorch.Options().outputMode(poptorch.OutputMode.All),
                                      optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    out, _ = training(x, y)
    assert torch.allclose(out, expected)  # the first step's outputs come before its update
    assert not model.training and not model.model[1].training
    training.destroy()
    # an inference model does not eval() the model either: PopART's inference drops the dropout
    trained = WithDropout().train()
    inference = poptorch.inferenceModel(trained)
    assert torch.equal(inference(x), inference(x))
    assert trained.training and trained.model[1].training


def test_random_seed_seeds_torch_on_the_host(poptorch):
    # python/options.py, Options.randomSeed: torch.manual_seed(random_seed)
    poptorch.Options().randomSeed(7)
    drawn = torch.rand(5)
    torch.manual_seed(7)
    assert torch.equal(drawn, torch.rand(5))


def _reference_weights(data, steps, lr):
    torch.manual_seed(3)
    model = WithLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        optimizer.zero_grad()
        model(*data)[1].backward()
        optimizer.step()
    return model.model.weight.detach().clone()


def test_copy_weights_to_host_brings_back_the_devices_weights(poptorch):
    data = _data(4)
    trained = _reference_weights(data, steps=3, lr=0.1)
    torch.manual_seed(3)
    model = WithLoss()
    weight = model.model.weight  # held apart from the model: PopTorch's parameter hook is not mirrored
    training = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    for _ in range(3):
        training(*data)
    with torch.no_grad():
        weight.zero_()  # whatever the host's copy became, the device holds the trained weights
    training.copyWeightsToHost()
    assert torch.allclose(weight, trained) and not torch.equal(weight, torch.zeros_like(weight))


def test_the_device_keeps_the_weights_it_compiled_with(poptorch):
    layer = torch.nn.Linear(4, 3)
    inference = poptorch.inferenceModel(layer)
    x = torch.randn(2, 4)
    before = inference(x)
    with torch.no_grad():
        layer.weight.zero_()  # the host's copy only: nothing copies it to the device
    assert torch.equal(inference(x), before)


def test_reading_the_wrapped_model_or_detaching_copies_the_weights_back(poptorch):
    data = _data(4)
    trained, thrice = _reference_weights(data, steps=2, lr=0.1), _reference_weights(data, steps=3, lr=0.1)
    torch.manual_seed(3)
    model = WithLoss()
    training = poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    training(*data)
    training(*data)
    assert torch.allclose(dict(model.named_parameters())["model.weight"], trained)  # PoptorchModel.__getattribute__
    training(*data)
    training.detachFromDevice()  # "Read all the states back before detaching"
    assert torch.allclose(model.model.weight, thrice)
    training.destroy()
    assert type(model) is WithLoss
