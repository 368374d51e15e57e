"""A fake ``poptorch`` for tests: the subset of PopTorch's documented API that labkit.testbeds.comparison.study uses.

- ``Options()`` with chainable ``deviceIterations(n)``, ``replicationFactor(n)``, ``outputMode(mode)``;
- ``OutputMode.All``;
- ``DataLoader(options, dataset, batch_size=..., shuffle=..., drop_last=...)``: ``batch_size`` is the
  micro-batch; each item it yields is a *combined* batch of
  batch_size x deviceIterations x replicationFactor samples, as PopTorch's DataLoader does;
- ``trainingModel(model, options, optimizer=...)``: calling it with a combined batch runs
  deviceIterations optimizer steps; in each, every replica takes its micro-batch and the gradients
  are averaged over replicas (what replication does on IPUs); returns the model's outputs for every
  micro-batch (OutputMode.All): (outputs, losses);
- ``.detachFromDevice()``; ``ipuHardwareIsAvailable()``.

It runs on the CPU with torch. It records what it was asked for in ``CALLS`` so tests can check
labkit drove PopTorch the documented way.
"""

from __future__ import annotations

import enum

import torch

__version__ = "3.3.0+fake"
CALLS = []


class OutputMode(enum.Enum):
    All = "all"
    Final = "final"
    Sum = "sum"


class Options:
    def __init__(self):
        self.device_iterations = 1
        self.replication_factor = 1
        self.output_mode = OutputMode.Final

    def deviceIterations(self, n):
        self.device_iterations = int(n)
        return self

    def replicationFactor(self, n):
        self.replication_factor = int(n)
        return self

    def outputMode(self, mode):
        self.output_mode = mode
        return self


def ipuHardwareIsAvailable(num_ipus=1):
    return True


class DataLoader(torch.utils.data.DataLoader):
    def __init__(self, options, dataset, batch_size=1, shuffle=False, num_workers=0, drop_last=True, **kwargs):
        combined = batch_size * options.device_iterations * options.replication_factor
        CALLS.append(("DataLoader", batch_size, combined))
        super().__init__(dataset, batch_size=combined, shuffle=shuffle, num_workers=num_workers,
                         drop_last=drop_last, **kwargs)


class _Training:
    def __init__(self, model, options, optimizer):
        self.model, self.options, self.optimizer = model, options, optimizer
        self.attached = True
        CALLS.append(("trainingModel", options.replication_factor, options.device_iterations))

    def __call__(self, x, y):
        if not self.attached:
            raise RuntimeError("the model was detached from the IPU")
        replicas, iterations = self.options.replication_factor, self.options.device_iterations
        micro = len(x) // (replicas * iterations)
        outputs, losses = [], []
        for i in range(iterations):
            self.optimizer.zero_grad()
            for r in range(replicas):
                lo = (i * replicas + r) * micro
                out, loss = self.model(x[lo:lo + micro], y[lo:lo + micro])
                (loss / replicas).backward()  # replicas' gradients averaged
                outputs.append(out.detach())
                losses.append(loss.detach())
            self.optimizer.step()
        return torch.cat(outputs), torch.stack(losses)

    def detachFromDevice(self):
        self.attached = False


def trainingModel(model, options=None, optimizer=None):
    return _Training(model, options or Options(), optimizer)
