"""The IPU-vs-GPU data-parallel scaling study (notebooks/comparison/ipu_vs_gpu.ipynb).

    labkit run notebooks/comparison/ipu_vs_gpu.ipynb runs/scaling.ipynb -p replicas '[1, 2]' -p device cpu

    from labkit.testbeds import comparison
    config = comparison.SPEC.validate({"replicas": [1, 2], "device": "cpu"})
    comparison.plan(config); run = comparison.run_exercise(config); comparison.show(run)

Modules: ``spec`` (the notebook's parameters: ``SPEC``), ``metrics`` (``METRICS``), ``exercise`` (the
notebook's plan and run steps), ``report`` (its show step, speed-up tables and plots), ``models``
(the CNNs trained: small, representative), ``study`` (measuring throughput over replicas and
micro-batch sizes, the reference tables), ``replicas`` (the processes or IPU replicas that train),
``reference/`` (the published IPU-POD16/A100 table and a 2-core CPU example, with their provenance).
"""

from labkit.testbeds.comparison.exercise import plan, run_exercise
from labkit.testbeds.comparison.metrics import METRICS
from labkit.testbeds.comparison.report import show
from labkit.testbeds.comparison.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show"]
