"""Homework tests: the graded homework exercise (labkit/testbeds/homework), on a realistic class,
end to end, and its evidence. Grading itself is tested in tests/grading, whose set-up (the
repository on graded kernels' PYTHONPATH, bubblewrap where the machine allows) these tests share.
"""

from __future__ import annotations

from tests.grading.conftest import strongest_level  # noqa: F401  (a fixture, shared with the grader's tests)
