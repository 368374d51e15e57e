"""Where a student's kernel runs, and how the grader's trusted code keeps clear of a submission.

The kernel's side: ``levels`` (the isolation levels, their limits and the command that launches
a kernel at each), ``launcher`` (the stage that sets the limits, Landlock and the run's uid,
then execs the kernel; run as ``python -I -S launcher.py``), ``landlock`` (file confinement
without root), ``cgroups`` (one process and memory cap per run), ``uids`` (a private uid per
concurrent run), ``levels_report`` (what ``labkit grade --check`` prints). The trusted side:
``trusted_python`` (trusted Python started so that no submission shadows its imports) and
``submission_reads`` (what trusted code may read of a submission). Kept import-light: the
launcher loads ``landlock.py`` by its path before every student kernel, and this package
imports nothing.
"""
