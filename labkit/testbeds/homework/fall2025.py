"""The 2025 homework (notebooks/homework/ai_testbeds_2025.ipynb): the CS-3 and the inference service.

    from labkit import results
    from labkit.testbeds.homework import fall2025
    config = fall2025.SPEC.from_notebook(globals())
    fall2025.plan(config)                      # which logs and lab-book runs are in logs/ and runs/
    run = fall2025.run_exercise(config)        # both sections' runs gathered: a labkit.results.Run
    fall2025.show(run)                         # one row per testbed: how many runs, where they ran
    results.record(run)
    fall2025.record_runs("cerebras", run)      # records cerebras_1, cerebras_2, ...
    fall2025.show_testbed("cerebras", run)     # table, notes and GlobalRate, tokens/s against batch size

The same functions as :mod:`labkit.testbeds.homework` (they serve both years, by the config's
spec); this module gives the 2025 notebook its own ``SPEC`` (:mod:`.spec_2025`).
"""

from __future__ import annotations

from functools import partial

from labkit.testbeds.homework import report
from labkit.testbeds.homework.exercise import plan, run_exercise
from labkit.testbeds.homework.gather import record_runs, runs_for, runs_of
from labkit.testbeds.homework.report import overview, show, show_testbed
from labkit.testbeds.homework.spec_2025 import COURSE_BATCH_SIZE, HOMEWORK_2025, MIN_PROMPTS, SPEC, TESTBEDS

# The 2025 sections by default (the shared functions default to 2024's, which notebooks handed in
# before 2025 rely on): what to run when there is nothing yet, a section's table and its plot.
nothing_yet = partial(report.nothing_yet, homework=HOMEWORK_2025)
comparison = partial(report.comparison, homework=HOMEWORK_2025)
plot = partial(report.plot, homework=HOMEWORK_2025)

__all__ = ["SPEC", "HOMEWORK_2025", "TESTBEDS", "COURSE_BATCH_SIZE", "MIN_PROMPTS", "plan", "run_exercise", "show",
           "show_testbed", "record_runs", "runs_for", "runs_of", "comparison", "plot", "overview", "nothing_yet"]
