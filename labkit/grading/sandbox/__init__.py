"""Where a student's kernel runs (``levels``, ``launcher``, ``landlock``, ``slots``: a run's uid and
cgroups), and how the grader's trusted code keeps clear of a submission (``trusted``). Imports nothing:
the launcher loads ``landlock.py`` by its path before every kernel.
"""
