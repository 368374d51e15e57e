"""What a submission is graded on: ``rubric`` (the YAML file, and the checks that read the notebook),
``evidence`` (what the checks share), ``records`` (the checks that read recorded runs, and trusted
recomputation) and ``duplicates``.
"""
