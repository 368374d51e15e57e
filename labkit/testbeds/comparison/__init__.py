"""The IPU-vs-GPU data-parallel scaling study (notebooks/comparison/ipu_vs_gpu.ipynb).

    labkit run notebooks/comparison/ipu_vs_gpu.ipynb runs/scaling.ipynb -p replicas '[1, 2]' -p device cpu

    from labkit.testbeds import comparison
    config = comparison.SPEC.validate({"replicas": [1, 2], "device": "cpu"})
    comparison.plan(config); run = comparison.run_exercise(config); comparison.show(run)

Modules: ``spec`` (the notebook's parameters), ``exercise`` (the notebook's plan, run and show steps), ``models`` (the CNNs trained: small, representative),
``study`` (measuring throughput over replicas and micro-batch sizes, the reference tables),
``report`` (speed-up tables and plots), ``reference/`` (the published IPU-POD16/A100 table and a
2-core CPU example, with their provenance).
"""

from labkit.testbeds.comparison.exercise import plan, run_exercise, show
from labkit.testbeds.comparison.spec import SCALING_SPEC, SPEC

__all__ = ["SPEC", "SCALING_SPEC", "plan", "run_exercise", "show"]
