"""What a submission is graded on: the rubric and its checks.

``rubric`` (the YAML file, checked when loaded), ``evidence`` (what a submission gave the
grader, a check, its result, picking the runs a check looks at), ``records`` and ``answers``
(the check types), ``verify`` (a record counts only when trusted recomputation agrees) and
``duplicates`` (evidence two students both handed in).
"""
