"""A stand-in for PopTorch that speaks the part of its documented API the MNIST exercise uses.

It runs on the CPU with torch and behaves as PopTorch does where labkit depends on it:
``Options().deviceIterations(n)`` returns the options; a ``DataLoader`` yields
``batch_size x device_iterations`` samples per step; a ``trainingModel`` makes one SGD update
per micro-batch and, with ``OutputMode.All``, returns every micro-batch's outputs and losses
(else only the last's); one model may be attached to the (single) IPU at a time, so
``inferenceModel`` fails until the training model has called ``detachFromDevice()``.
Every call is logged in ``CALLS`` so tests can check the order.
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
        self.output_mode = OutputMode.Final
        self.seed = None
        CALLS.append("Options")

    def deviceIterations(self, n):
        self.device_iterations = int(n)
        CALLS.append("deviceIterations({})".format(n))
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
        CALLS.append("DataLoader(batch_size={})".format(batch_size))
        super().__init__(dataset, batch_size=batch_size * options.device_iterations, shuffle=shuffle,
                         drop_last=drop_last, **kwargs)


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
                raise RuntimeError("Failed to acquire 1 IPU: the IPU is still attached to another model "
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
        n = self.options.device_iterations
        micro = data.shape[0] // n
        outputs, losses = [], []
        self.model.train()
        for i in range(n):
            out, loss = self.model(data[i * micro:(i + 1) * micro], labels[i * micro:(i + 1) * micro])
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            outputs.append(out.detach())
            losses.append(loss.detach().reshape(1))
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
        raise RuntimeError("Failed to acquire 1 IPU: the IPU is still attached to another model")
    return wrapped
