"""Test-wide settings: text progress bars, and the real MNIST from ../shared when present."""

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

os.environ.setdefault("LABKIT_PROGRESS", "text")
if (SHARED / "data" / "mnist").is_dir():
    os.environ.setdefault("LABKIT_DATA_DIR", str(SHARED / "data" / "mnist"))

import pytest


@pytest.fixture(scope="session")
def shared():
    """../shared beside the checkout: the real MNIST and the real testbed logs."""
    if not SHARED.is_dir():
        pytest.skip("../shared is not beside this checkout")
    return SHARED
