"""The module's homework: gather your runs from the testbeds, compare them; one module per offering.

    from labkit.testbeds.homework import fall2024       # the 2024 notebook (notebooks/homework/ai_testbeds.ipynb)
    from labkit.testbeds.homework import fall2025       # the 2025 notebook: the same steps, its own SPEC
    from labkit.testbeds import homework                # 2024 hand-ins: the package gives them fall2024's names

Modules: ``fall2024`` and ``fall2025`` (each offering whole: its notebook's ``SPEC``, its sections
``TESTBEDS``, its overview ``METRICS`` and its ``HOMEWORK``), ``homeworks`` (what a Homework and a
Section are, and the registry of every offering: which one a config, record or runs belong to; none
named is 2024's), ``exercise`` (the notebook's plan and run steps), ``gather`` (a student's runs
from testbed logs, lab-book notebooks and sweeps), ``evidence`` (trusted reading of those notebooks
and sweep folders), ``hardware`` (the label of where a run ran), ``report`` (the tables and plots),
``endpoints`` (2025: each inference endpoint's figures), ``metrics`` (the overview record's table).
The grader (:mod:`labkit.grading`) reads the same evidence again; it imports this package, never the
other way round.
"""

# The package gives the 2024 notebook (and the 2024 hand-ins the grader re-runs) its names, and
# imports every offering so that the registry (homeworks.HOMEWORKS) is whole whichever module runs.
from labkit.testbeds.homework import fall2025  # noqa: F401  (registers the 2025 homework)
from labkit.testbeds.homework.fall2024 import (METRICS, SPEC, TESTBEDS, comparison, nothing_yet, overview, plan, plot,
                                               record_runs, run_exercise, runs_for, runs_of, show, show_testbed)

__all__ = ["SPEC", "METRICS", "TESTBEDS", "plan", "run_exercise", "show", "show_testbed", "record_runs", "runs_for",
           "runs_of", "comparison", "plot", "overview", "nothing_yet"]
