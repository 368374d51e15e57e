"""The module's homework (notebooks/homework/ai_testbeds.ipynb): gather your runs, compare them.

    from labkit.testbeds import homework
    runs = homework.runs_for(config, "graphcore")       # logs/graphcore/ and runs/graphcore/
    homework.record_runs("graphcore", runs)             # records graphcore_1, graphcore_2, ...
    homework.show("graphcore", runs)                    # table + plot, or what to run when there is nothing

Modules: ``spec`` (the notebook's parameters and what is compared for each testbed), ``gather`` (a
student's runs from testbed logs, lab-book notebooks and sweeps), ``evidence`` (trusted reading of
those notebooks and sweep folders), ``where`` (the label of where a run ran), ``report`` (the table
and plot). The grader (:mod:`labkit.grading`) reads the same evidence again; it imports this
package, never the other way round.
"""

from labkit.testbeds.homework.gather import record_runs, runs_for, runs_from_lab_book, runs_from_logs
from labkit.testbeds.homework.report import comparison, nothing_yet, plot, show
from labkit.testbeds.homework.spec import HOMEWORK_SPEC, TESTBEDS

__all__ = ["HOMEWORK_SPEC", "TESTBEDS", "runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs",
           "comparison", "plot", "show", "nothing_yet"]
