"""Where the real testbed logs are: $LABKIT_SHARED, else <repo>/../shared, else /work/shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = Path(__file__).resolve().parent / "cases"


def shared_dir() -> Path:
    env = os.environ.get("LABKIT_SHARED")
    candidates = ([Path(env)] if env else []) + [REPO.parent / "shared", Path("/work/shared")]
    for candidate in candidates:
        if (candidate / "fixtures" / "testbed-logs").is_dir():
            return candidate
    return candidates[0]


FIXTURES = shared_dir() / "fixtures" / "testbed-logs"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(FIXTURES))
    return FIXTURES
