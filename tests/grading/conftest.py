"""Grading tests: bubblewrap is installed at set-up where the machine allows (root + apt)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

collect_ignore_glob = ["*.ipynb"]

# The toy exercise the tests grade lives in this repository's `tests` package: graded kernels
# (which keep the grader's PYTHONPATH, and see it read-only inside the sandbox) must import it.
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [_ROOT] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != _ROOT])


def ensure_bubblewrap() -> str:
    """Install bubblewrap if missing (idempotent; root with apt-get only). Returns why not, or ''."""
    if shutil.which("bwrap"):
        return ""
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "bubblewrap is not installed and this user cannot install it (needs root and apt-get)"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for attempt in ([["apt-get", "install", "-y", "-q", "bubblewrap"]],
                    [["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "bubblewrap"]]):
        ok = all(subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=600).returncode == 0 for cmd in attempt)
        if ok and shutil.which("bwrap"):
            return ""
    return "apt-get install bubblewrap failed"


@pytest.fixture(scope="session")
def strongest_level() -> str:
    """The strongest isolation level here, after trying to install bubblewrap."""
    ensure_bubblewrap()
    from labkit.grading import sandbox

    sandbox._PROBED.clear()
    return sandbox.best_level()


def needs_bwrap(level: str) -> None:
    if level != "bwrap":
        pytest.skip("needs bubblewrap isolation (no network, hidden siblings); this machine offers only "
                    "'{}': bwrap missing or not permitted here".format(level))
