"""The module's homework: gather your runs from the testbeds, compare them; one module per offering.

    from labkit.testbeds.homework import fall2024       # the 2024 notebook (notebooks/homework/ai_testbeds.ipynb)
    from labkit.testbeds.homework import fall2025       # the 2025 notebook: the same steps, its own SPEC
    from labkit.testbeds import homework                # 2024 hand-ins: the package gives them fall2024's names

docs/architecture.md lists its modules. The grader (:mod:`labkit.grading`) reads the same
evidence again; it imports this package, never the other way round.
"""

from labkit.testbeds.homework import fall2025  # noqa: F401  (registers the 2025 homework)
from labkit.testbeds.homework.fall2024 import (METRICS, SPEC, TESTBEDS, comparison, nothing_yet, overview, plan, plot,
                                               record_runs, run_exercise, runs_for, runs_of, show, show_testbed)

__all__ = ["SPEC", "METRICS", "TESTBEDS", "plan", "run_exercise", "show", "show_testbed", "record_runs", "runs_for",
           "runs_of", "comparison", "plot", "overview", "nothing_yet"]
