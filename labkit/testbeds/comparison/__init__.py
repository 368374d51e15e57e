"""The IPU-vs-GPU data-parallel scaling study (notebooks/comparison/ipu_vs_gpu.ipynb).

    labkit run notebooks/comparison/ipu_vs_gpu.ipynb runs/scaling.ipynb -p replicas '[1, 2]' -p device cpu

docs/architecture.md lists its modules; ``reference/`` holds the published IPU-POD16/A100 table
and a 2-core CPU example, with their provenance.
"""

from labkit.testbeds.comparison.exercise import plan, run_exercise
from labkit.testbeds.comparison.metrics import METRICS
from labkit.testbeds.comparison.report import show
from labkit.testbeds.comparison.spec import SPEC

__all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show"]
