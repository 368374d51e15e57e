"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb``. From a shell:

    papermill notebooks/graphcore/mnist.ipynb out.ipynb -p epochs 20
    srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb    # on the testbed

From Python (the notebook's five steps):

    from labkit.testbeds import graphcore
    config = graphcore.SPEC.validate({"epochs": 1})
    graphcore.plan(config); run = graphcore.run_exercise(config); graphcore.show(run)

From a parameter to the loop: ``SPEC.from_notebook`` -> ``exercise.run_exercise`` -> ``train.train``.
The modules, one concern each: docs/graphcore.md.
"""

from labkit.testbeds.graphcore.exercise import plan, run_exercise
from labkit.testbeds.graphcore.metrics import METRICS
from labkit.testbeds.graphcore.report import model_summary, show
from labkit.testbeds.graphcore.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "model_summary"]
