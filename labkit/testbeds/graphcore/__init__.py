"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb``. From a shell:

    papermill notebooks/graphcore/mnist.ipynb out.ipynb -p epochs 20
    srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb    # on the testbed

From Python (the notebook's five steps):

    from labkit.testbeds import graphcore
    config = graphcore.SPEC.validate({"epochs": 1})
    graphcore.plan(config); run = graphcore.run_exercise(config); graphcore.show(run)

Modules, one concern each: ``spec`` (parameters), ``device`` (where it runs), ``exercise`` (the
notebook's plan, run and show steps), ``run`` (training or reading the log: :func:`run_mnist`),
``portable`` + ``train`` (the PyTorch path), ``ipu`` (PopTorch), ``model`` (the network),
``result`` (the record both paths make), ``progress_bars``, ``verdict`` (near-chance notes),
``log`` (the testbed log reader), ``metrics`` (the table of metrics), ``report`` (the network table).
"""

from labkit.testbeds.graphcore.device import POPTORCH_HELP, choose_device
from labkit.testbeds.graphcore.exercise import plan, run_exercise, show
from labkit.testbeds.graphcore.report import model_summary
from labkit.testbeds.graphcore.result import MnistResult
from labkit.testbeds.graphcore.run import run_mnist
from labkit.testbeds.graphcore.metrics import MNIST_METRICS
from labkit.testbeds.graphcore.spec import SPEC, MNIST_SPEC

__all__ = ["SPEC", "MNIST_SPEC", "plan", "run_exercise", "show", "MNIST_METRICS", "MnistResult", "run_mnist",
           "choose_device", "model_summary", "POPTORCH_HELP"]
