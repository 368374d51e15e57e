"""The MNIST exercise's parameters: their defaults, ranges and the checks that span two of them."""

from __future__ import annotations

from labkit.accelerator import PRECISIONS
from labkit.params import PATH, Config, Param, Spec, existing_file, usable_directory

__all__ = ["SPEC", "EXERCISE"]

EXERCISE = "graphcore/mnist"


def _fits_one_step(config: Config):
    step = config.batch_size * config.device_iterations
    if config.max_train_samples is not None and config.max_train_samples < step:
        return ("max_train_samples",
                "fewer samples than one step of batch_size x device_iterations = {} x {} = {}; "
                "allowed: at least {}, or lower batch_size or device_iterations".format(
                    config.batch_size, config.device_iterations, step, step))
    return None


def _fits_one_test_batch(config: Config):
    if config.max_test_samples is not None and config.max_test_samples < config.test_batch_size:
        return ("max_test_samples", "fewer samples than one test batch (test_batch_size = {}); allowed: at least {}".format(
            config.test_batch_size, config.test_batch_size))
    return None


SPEC = Spec(
    EXERCISE,
    Param("learning_rate", float, 0.03, "SGD learning rate (no momentum)", min=0, min_exclusive=True, max=100),
    Param("epochs", int, 10, "passes over the training set", min=1, max=1000),
    Param("batch_size", int, 8, "micro-batch size: samples per weight update", min=1, max=60000),
    Param("test_batch_size", int, 80, "samples per test batch", min=1, max=10000),
    Param("device_iterations", int, 50, "micro-batches per step (PopTorch deviceIterations)", min=1, max=60000),
    Param("device", str, "auto", "where to train", choices=("auto", "ipu", "cuda", "mps", "cpu")),
    Param("precision", str, "auto", "arithmetic on a GPU: 'auto' is TF32 on an Ampere or newer GPU (this small "
          "network's steps are launch-bound), fp32 elsewhere", choices=PRECISIONS),
    Param("seed", int, 0, "seeds weights, shuffling and dropout", min=0, max=2**32 - 1),
    Param("max_train_samples", int, None, "use only this many training samples", optional=True, min=1),
    Param("max_test_samples", int, None, "use only this many test samples", optional=True, min=1),
    Param("data_dir", PATH, None, "where MNIST is staged or cached", optional=True, check=usable_directory),
    Param("log_path", PATH, None, "read this testbed log instead of training", optional=True, check=existing_file),
    checks=[_fits_one_step, _fits_one_test_batch],
)
