"""The portable MNIST path keeps the IPU run's semantics, checked against a straightforward
reference loop written the obvious way (micrograd's habit: compare with an independent
implementation, not with frozen numbers)."""

import numpy as np
import pytest
import torch

from labkit.data import load_mnist
from labkit.testbeds import graphcore
from labkit.testbeds.graphcore.model import Network
from labkit.testbeds.graphcore.train import to_tensor, train

CPU = torch.device("cpu")


def _train(**params):
    return train(graphcore.SPEC.validate(dict(params, device="cpu")), CPU, verbose=False).details


@pytest.fixture(scope="module")
def mnist():
    data = load_mnist(download=False, allow_sample=False)  # the real MNIST from ../shared
    assert data.source == "full"
    return data


def reference_weights(images, labels, *, steps, batch_size, device_iterations, lr, seed):
    """SGD on micro-batches in the order a seeded shuffle gives, the plain way."""
    torch.manual_seed(seed)
    model = Network()
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    x = (torch.tensor(images, dtype=torch.float32) / 255.0 - 0.1307) / 0.3081
    x = x.unsqueeze(1)
    y = torch.tensor(labels, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    for i in range(steps * device_iterations):
        idx = order[i * batch_size:(i + 1) * batch_size]
        loss = loss_fn(model(x[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.state_dict()


def test_weights_equal_a_reference_loop_after_a_few_steps(mnist):
    # Two steps of 25 micro-batches: 50 weight updates. Channels-last convolutions round
    # differently from the reference's, and more updates amplify that (torch 2.4: 8e-4 after 150).
    images, labels = mnist.train_images[:400], mnist.train_labels[:400]
    result = _train(epochs=1, batch_size=8, device_iterations=25, learning_rate=0.05, seed=7, max_train_samples=400,
                    max_test_samples=80)
    history = result.history
    assert history.steps_per_epoch == 2 and len(history.steps) == 2
    expected = reference_weights(images, labels, steps=2, batch_size=8, device_iterations=25, lr=0.05, seed=7)
    for name, value in result.model.state_dict().items():
        torch.testing.assert_close(value.contiguous(), expected[name], rtol=1e-4, atol=1e-5, msg=name)
    # and training moved them: the comparison is not between two untouched initialisations
    torch.manual_seed(7)
    initial = Network().state_dict()
    assert not torch.allclose(initial["layer3.weight"], expected["layer3.weight"])


def test_a_default_epoch_has_the_150_steps_an_ipu_log_shows(mnist):
    # batch_size 8 x device_iterations 50 = 400 samples a step; 60,000 / 400 = 150
    assert len(mnist.train_labels) // (8 * 50) == 150


def test_last_incomplete_step_is_dropped():
    history = _train(epochs=2, batch_size=4, device_iterations=8, learning_rate=0.01, max_train_samples=130,
                     max_test_samples=80).history
    assert history.steps_per_epoch == 4 and history.samples_per_epoch == 128
    assert [s.epoch for s in history.steps] == [1] * 4 + [2] * 4
    assert history.warmup_seconds > 0 and history.steady_samples == 7 * 32


def test_test_accuracy_is_the_mean_of_per_batch_accuracies(mnist):
    result = _train(epochs=1, device_iterations=5, max_train_samples=40, max_test_samples=250, seed=3)
    images, labels = mnist.test_images[:250], mnist.test_labels[:250]
    network = result.model.eval()
    x = to_tensor(images, CPU)
    with torch.no_grad():
        per_batch = [(network(x[b * 80:(b + 1) * 80]).argmax(1).numpy() == labels[b * 80:(b + 1) * 80]).mean() * 100
                     for b in range(3)]  # 250 samples: three full batches, the last 10 dropped
    assert result.run.metrics["test_accuracy"] == pytest.approx(round(np.mean(per_batch), 4))
    assert result.run.metrics["test_throughput"] > 0


def test_the_accuracy_line_says_when_it_was_measured_on_the_shipped_sample(tmp_path, capsys, monkeypatch):
    """`make lab` shows this one line in a terminal; offline it is the sample's, and the line says so."""
    monkeypatch.delenv("LABKIT_DATA_DIR", raising=False)
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path / "cache"))
    config = graphcore.SPEC.validate(dict(device="cpu", epochs=1, data_dir=str(tmp_path / "empty"),
                                          device_iterations=5, max_train_samples=200, max_test_samples=100))
    run = train(config, CPU, verbose=True)
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Accuracy on test set")]
    assert said == ["Accuracy on test set: {:0.2f}% (labkit's shipped sample of 100 test digits: not comparable "
                    "with full MNIST)".format(run.metrics["test_accuracy"])]
