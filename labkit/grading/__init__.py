"""Batch grading of homework notebooks: rubric, sandboxed execution, gradebook, feedback.

    labkit grade SUBMISSIONS --rubric FILE --out DIR [--workers N] [--timeout S] [--memory GB] [--reproduce]

See docs/grading.md. The grading itself: ``cli`` (``labkit grade``), ``batch`` (a class, in
parallel, resumable), ``worker`` (one submission's worker process, started, watched, collected),
``parsl_executor`` (the same workers as Parsl tasks), ``runner`` (the worker's own code: one
submission in a fresh sandboxed kernel), ``recompute`` (the trusted process a rubric's
``recompute: labkit.grading.recompute:from_evidence`` runs). Three packages around it:
``sandbox`` (where a student's kernel runs, and how trusted code keeps clear of the submission),
``checks`` (the rubric and its checks), ``reports`` (gradebook, feedback, summary, Canvas CSV,
the class page and ``labkit class``).
"""
