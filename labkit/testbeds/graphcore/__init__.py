"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb`` (on the testbed: ``srun --ipus=1 papermill
notebooks/graphcore/mnist.ipynb out.ipynb``; elsewhere docs/running.md). From a parameter to the loop:
``SPEC.from_notebook`` -> ``exercise.run_exercise`` -> ``train.train``. The modules, one concern each:
docs/graphcore.md.
"""

from labkit.testbeds.graphcore.exercise import plan, run_exercise
from labkit.testbeds.graphcore.metrics import METRICS
from labkit.testbeds.graphcore.report import model_summary, show
from labkit.testbeds.graphcore.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "model_summary"]
