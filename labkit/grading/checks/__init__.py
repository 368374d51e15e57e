"""What a submission is graded on: ``rubric`` (the YAML file), ``evidence`` (what the checks share),
the check types (``records``, ``answers``), ``verify`` (trusted recomputation) and ``duplicates``.
"""
