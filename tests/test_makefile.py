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


def _make(python: str, target: str = "test", *variables: str) -> subprocess.CompletedProcess:
    """`make TARGET` with ``python`` as PY, in this virtualenv (-o: not reinstalled)."""
    venv = Path(sys.executable).parent.parent
    return subprocess.run(
        ["make", "--no-print-directory", "-o", str(venv / ".labkit-installed"), target,
         "VENV={}".format(venv), "PY=" + python, "MAKE=true"] + list(variables),
        cwd=str(ROOT), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("pytest_status, make_fails", [(5, True), (0, False)])
def test_no_tests_collected_fails(pytest_status, make_fails):
    # PY stands in for pytest with its exit status.
    result = _make("sh -c 'exit {}' pytest".format(pytest_status))
    assert (result.returncode != 0) == make_fails, result.stdout
    said = "make test: pytest collected no tests: 0 passed, 0 failed" in result.stdout.splitlines()
    assert said == make_fails, result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("target", ["test", "test-prerelease"])
@pytest.mark.parametrize("side_by_side, timing", [(1, 0), (0, 1), (0, 0)])
def test_both_pytest_passes_run_and_either_failing_fails_make(tmp_path, target, side_by_side, timing):
    """make test (and make test-prerelease, when a newer release is there to test) runs the tests side
    by side, then the timing ones apart from them; a failure in the first must not hide the second's
    results, and a failure in either fails the target."""
    calls = tmp_path / "calls"
    # Each pytest stand-in notes its marker expression and exits as told; cpu_kernels.py, pip and
    # tests/newer_than_venv.py (0: something newer to test) exit 0, pip list naming one package.
    fake = ("sh -c 'echo \"$$*\" >> {calls}; case \"$$*\" in *\"not timing\"*) exit {a};; *\"-m timing\"*) exit {b};; "
            "*\"pip list\"*) echo nbclient 0;; esac' pytest").format(calls=calls, a=side_by_side, b=timing)
    result = _make(fake, target, "PRERELEASE={}".format(tmp_path / "prerelease"))
    passes = [line for line in calls.read_text().splitlines() if "-m pytest" in line]
    assert len(passes) == 2 and "not timing" in passes[0] and "-n " in passes[0] and "-m timing" in passes[1], passes
    assert (result.returncode != 0) == bool(side_by_side or timing), result.stdout
