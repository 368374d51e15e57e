"""Where a student's kernel runs (``levels``, ``launcher``, ``landlock``, ``cgroups``, ``uids``,
``levels_report``), and how the grader's trusted code keeps clear of a submission (``trusted_python``,
``submission_reads``). Imports nothing: the launcher loads ``landlock.py`` by its path before every kernel.
"""
