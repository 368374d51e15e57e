"""Batch grading of homework notebooks: rubric, sandboxed execution, gradebook, feedback.

    labkit grade SUBMISSIONS --rubric FILE --out DIR [--workers N] [--timeout S] [--memory GB] [--reproduce]

See docs/grading.md. Modules: ``rubric`` (the YAML format and its checks), ``sandbox``,
``confine`` and ``landlock`` (isolation levels, limits, file confinement without root), ``runner`` (one submission in a fresh sandboxed
kernel), ``jobs`` (its worker process), ``batch`` (a class, in parallel, resumable),
``isolated`` and ``contain`` (trusted processes import nothing from, and read nothing outside,
a submission), ``recompute``, ``gradebook``, ``feedback``, ``class_data`` and ``class_page`` (``DIR/class.html``), ``cli``.
Kept import-light: ``confine`` (and the ``landlock`` it loads) runs before every student kernel.
"""
