"""A stand-in for PopTorch (Graphcore's PyTorch for IPUs) that speaks the part of its documented
API labkit uses: the MNIST exercise (labkit/testbeds/graphcore/ipu.py) and the scaling study's IPU
replicas (labkit/testbeds/comparison/replicas.py). PopTorch's API is documented in the PopTorch
User Guide (https://docs.graphcore.ai/projects/poptorch-user-guide/, "Options",
"poptorch.DataLoader", "trainingModel", "inferenceModel").

    monkeypatch.syspath_prepend(str(tests.fakes.POPTORCH)); import poptorch

It runs on the CPU with torch and behaves as PopTorch does where labkit depends on it:

- ``Options()`` with chainable ``deviceIterations(n)``, ``replicationFactor(n)``,
  ``outputMode(mode)`` and ``randomSeed(seed)``;
- ``DataLoader(options, dataset, batch_size=...)``: ``batch_size`` is the micro-batch; each item
  it yields is a combined batch of batch_size x deviceIterations x replicationFactor samples;
- ``trainingModel(model, options, optimizer=...)``: called with a combined batch it makes
  deviceIterations optimizer steps; in each, every replica takes its micro-batch and the
  replicas' gradients are averaged (what replication does on IPUs); with ``OutputMode.All`` it
  returns every micro-batch's outputs and losses, else only the last's;
- one model may be attached to the IPUs at a time (``compile()`` or the first call attaches),
  so ``inferenceModel`` fails until the training model has called ``detachFromDevice()``;
- ``ipuHardwareIsAvailable()`` is True (tests patch it to say otherwise).

Every call is logged in ``CALLS`` as text (``"deviceIterations(10)"``,
``"DataLoader(batch_size=8, combined=80)"``) so tests can check labkit drove PopTorch the
documented way, in the documented order.
"""

import enum

import torch

__version__ = "3.3.0+fake"
CALLS = []
_attached = []


class OutputMode(enum.Enum):
    Final = 0
    All = 1
    Sum = 2
    EveryN = 3


class Options:
    def __init__(self):
        self.device_iterations = 1
        self.replication_factor = 1
        self.output_mode = OutputMode.Final
        self.seed = None
        CALLS.append("Options")

    def deviceIterations(self, n):
        self.device_iterations = int(n)
        CALLS.append("deviceIterations({})".format(n))
        return self

    def replicationFactor(self, n):
        self.replication_factor = int(n)
        CALLS.append("replicationFactor({})".format(n))
        return self

    def outputMode(self, mode):
        assert isinstance(mode, OutputMode)
        self.output_mode = mode
        CALLS.append("outputMode({})".format(mode.name))
        return self

    def randomSeed(self, seed):
        self.seed = seed
        return self


class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, options, dataset, batch_size=1, shuffle=False, drop_last=True, **kwargs):
        assert isinstance(options, Options), "poptorch.DataLoader takes the Options first"
        self.options = options
        combined = batch_size * options.device_iterations * options.replication_factor
        CALLS.append("DataLoader(batch_size={}, combined={})".format(batch_size, combined))
        super().__init__(dataset, batch_size=combined, shuffle=shuffle, drop_last=drop_last, **kwargs)


def ipuHardwareIsAvailable(num_ipus=1):
    return True


class _Wrapped:
    def __init__(self, model, options, optimizer=None):
        self.model = model
        self.options = options or Options()
        self.optimizer = optimizer
        self.attached = False
        self.compiled = False

    def _attach(self):
        if not self.attached:
            if _attached:
                raise RuntimeError("Failed to acquire the IPUs: they are still attached to another model "
                                   "(call detachFromDevice() first)")
            _attached.append(self)
            self.attached = True

    def compile(self, *args):
        self._attach()
        self.compiled = True
        CALLS.append("{}.compile".format(type(self).__name__))

    def detachFromDevice(self):
        CALLS.append("{}.detachFromDevice".format(type(self).__name__))
        if self in _attached:
            _attached.remove(self)
        self.attached = False


class _TrainingModel(_Wrapped):
    def __call__(self, data, labels):
        self._attach()
        iterations, replicas = self.options.device_iterations, self.options.replication_factor
        micro = data.shape[0] // (iterations * replicas)
        outputs, losses = [], []
        self.model.train()
        for i in range(iterations):
            self.optimizer.zero_grad()
            for r in range(replicas):
                lo = (i * replicas + r) * micro
                out, loss = self.model(data[lo:lo + micro], labels[lo:lo + micro])
                (loss / replicas).backward()  # the replicas' gradients are averaged
                outputs.append(out.detach())
                losses.append(loss.detach().reshape(1))
            self.optimizer.step()
        if self.options.output_mode == OutputMode.All:
            return torch.cat(outputs), torch.cat(losses)
        return outputs[-1], losses[-1]

    def copyWeightsToHost(self):
        CALLS.append("trainingModel.copyWeightsToHost")


class _InferenceModel(_Wrapped):
    def __call__(self, data):
        self._attach()
        self.model.eval()
        with torch.no_grad():
            return self.model(data)


def trainingModel(model, options=None, optimizer=None):
    CALLS.append("trainingModel")
    assert isinstance(optimizer, torch.optim.Optimizer)
    return _TrainingModel(model, options, optimizer)


def inferenceModel(model, options=None):
    CALLS.append("inferenceModel")
    wrapped = _InferenceModel(model, options)
    if _attached:
        raise RuntimeError("Failed to acquire the IPUs: they are still attached to another model")
    return wrapped
