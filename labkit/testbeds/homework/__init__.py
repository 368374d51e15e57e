"""The module's homework (notebooks/homework/ai_testbeds.ipynb): gather your runs, compare them.

    from labkit.testbeds import homework
    runs = homework.runs_for(config, "graphcore")       # logs/graphcore/ and runs/graphcore/
    homework.show("graphcore", runs)                    # table + plot, or what to run when there is nothing

Modules: ``gather`` (the spec, the testbeds compared, a student's runs from logs, notebooks and
sweeps), ``evidence`` (trusted reading of lab-book notebooks and sweep folders), ``where`` (the
label of where a run ran). The grader (:mod:`labkit.grading`) reads the same evidence again; it
imports this package, never the other way round.
"""

from labkit.testbeds.homework.gather import (HOMEWORK_SPEC, TESTBEDS, comparison, nothing_yet, plot, record_runs,
                                             runs_for, runs_from_lab_book, runs_from_logs, show)

__all__ = ["HOMEWORK_SPEC", "TESTBEDS", "runs_for", "runs_from_logs", "runs_from_lab_book", "record_runs",
           "comparison", "plot", "show", "nothing_yet"]
