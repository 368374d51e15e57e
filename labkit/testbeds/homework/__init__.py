"""The module's homework (notebooks/homework/ai_testbeds.ipynb): gather your runs, compare them.

    from labkit.testbeds import homework
    config = homework.SPEC.from_notebook(globals())
    homework.plan(config)                               # which logs and lab-book runs are where
    run = homework.run_exercise(config)                 # every testbed's runs: logs/<testbed>/, runs/<testbed>/
    homework.show(run)                                  # one row per testbed
    homework.record_runs("graphcore", run)              # records graphcore_1, graphcore_2, ...
    homework.show_testbed("graphcore", run)             # table + plot, or what to run when there is nothing

The 2025 homework (notebooks/homework/ai_testbeds_2025.ipynb) has the same steps under
``from labkit.testbeds.homework import fall2025``; every function here serves both, and finds
which homework it works for from the config's spec or the overview Run (``years``).

Modules: ``spec`` (the notebook's parameters and what is compared for each testbed; ``spec_2025``
for 2025, ``years`` the registry of both), ``exercise``
(the notebook's plan and run steps), ``gather`` (a
student's runs from testbed logs, lab-book notebooks and sweeps), ``evidence`` (trusted reading of
those notebooks and sweep folders), ``where`` (the label of where a run ran), ``report`` (the table
and plot). The grader (:mod:`labkit.grading`) reads the same evidence again; it imports this
package, never the other way round.
"""

from labkit.testbeds.homework.exercise import plan, run_exercise
from labkit.testbeds.homework.gather import record_runs, runs_for, runs_from_lab_book, runs_from_logs, runs_of
from labkit.testbeds.homework.report import comparison, nothing_yet, overview, plot, show, show_testbed
from labkit.testbeds.homework.spec import HOMEWORK_2024, HOMEWORK_SPEC, SPEC, TESTBEDS
from labkit.testbeds.homework.spec_2025 import HOMEWORK_2025
from labkit.testbeds.homework.years import HOMEWORKS, homework_of

__all__ = ["SPEC", "HOMEWORK_SPEC", "plan", "run_exercise", "show", "show_testbed", "overview", "runs_of", "TESTBEDS",
           "runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs", "comparison", "plot", "nothing_yet",
           "HOMEWORK_2024", "HOMEWORK_2025", "HOMEWORKS", "homework_of"]
