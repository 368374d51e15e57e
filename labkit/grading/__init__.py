"""Batch grading of homework notebooks (docs/grading.md): ``cli`` (``labkit grade``), ``batch`` (a class,
in parallel, resumable, each submission in a worker process here or on a Parsl node), ``runner`` (the
worker's code), ``recompute`` (trusted recomputation); and the packages ``sandbox``, ``checks`` (the
rubric) and ``reports`` (gradebook, feedback, class page, ``labkit class``).
"""
