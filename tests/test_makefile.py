"""`make test` fails when pytest collected nothing (exit 5), instead of reporting success.

    .venv/bin/python -m pytest tests/test_makefile.py -q
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("pytest_status, make_fails", [(5, True), (0, False)])
def test_no_tests_collected_fails(pytest_status, make_fails):
    venv = Path(sys.executable).parent.parent
    # PY stands in for pytest with its exit status; -o: do not reinstall the virtualenv.
    result = subprocess.run(
        ["make", "--no-print-directory", "-o", str(venv / ".labkit-installed"), "test",
         "VENV={}".format(venv), "PY=sh -c 'exit {}' pytest".format(pytest_status), "MAKE=true"],
        cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    assert (result.returncode != 0) == make_fails, result.stdout
    said = "make test: pytest collected no tests: 0 passed, 0 failed" in result.stdout.splitlines()
    assert said == make_fails, result.stdout
