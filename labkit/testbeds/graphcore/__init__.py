"""Graphcore: the PopTorch MNIST exercise, on an IPU or anywhere PyTorch runs.

Notebook: ``notebooks/graphcore/mnist.ipynb``. From a shell:

    papermill notebooks/graphcore/mnist.ipynb out.ipynb -p epochs 20
    srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb    # on the testbed

From Python (the notebook's five steps):

    from labkit.testbeds import graphcore
    config = graphcore.SPEC.validate({"epochs": 1})
    graphcore.plan(config); run = graphcore.run_exercise(config); graphcore.show(run)

From a parameter to the loop: ``SPEC.from_notebook`` -> ``exercise.run_exercise`` (or the log it reads)
-> ``train.train``, whose body is the epoch loop, the test pass and the record.

Modules, one concern each: ``spec`` (parameters: ``SPEC``), ``metrics`` (``METRICS``; ``BERT_METRICS``
for the BERT demo's log), ``exercise`` (the notebook's plan and run steps, and reading a log),
``report`` (its show step and the network table), ``placement`` (where it runs, in which precision),
``train`` (the loop, and each step on plain PyTorch), ``ipu`` (each step through PopTorch), ``model``
(the network), ``record`` (the record both paths make), ``training_bars`` (the epoch and step bars),
``verdict`` (near-chance notes), ``log`` (the testbed log reader, ``GraphcoreReader``).
"""

from labkit.testbeds.graphcore.exercise import plan, run_exercise
from labkit.testbeds.graphcore.metrics import METRICS
from labkit.testbeds.graphcore.report import model_summary, show
from labkit.testbeds.graphcore.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "model_summary"]
