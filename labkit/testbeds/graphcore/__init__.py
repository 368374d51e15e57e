"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb``. From a shell:

    papermill notebooks/graphcore/mnist.ipynb out.ipynb -p epochs 20
    srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb    # on the testbed

From Python:

    from labkit.testbeds import graphcore
    result = graphcore.run_mnist(graphcore.MNIST_SPEC.validate({"epochs": 1}))
"""

from labkit.testbeds.graphcore.run import (MNIST_SPEC, POPTORCH_HELP, PRIMARY_METRICS, MnistResult, choose_device,
                                           model_summary, run_mnist)

__all__ = ["MNIST_SPEC", "PRIMARY_METRICS", "MnistResult", "run_mnist", "choose_device", "model_summary", "POPTORCH_HELP"]
