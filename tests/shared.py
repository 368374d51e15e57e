"""Where the tests find ``../shared``: the real MNIST and the real testbed logs, in one place.

    LABKIT_SHARED=/path/to/shared pytest tests/logs      # a shared folder that is elsewhere

``$LABKIT_SHARED`` when it is set, else the ``shared`` folder beside this checkout
(``<repo>/../shared``); MNIST is ``$LABKIT_DATA_DIR`` when that is set. Tests take the session
fixtures of tests/conftest.py (``shared``, ``testbed_logs``, ``mnist_dir``), which skip with a
message naming LABKIT_SHARED (or LABKIT_DATA_DIR) when the folder is missing; helpers that run outside pytest (the fake SambaFlow, the classroom builder) call
``require`` here, which raises the same message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

__all__ = ["REPO", "shared_dir", "real_logs", "real_mnist", "mnist_folder", "missing_message", "require"]

REPO = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """``$LABKIT_SHARED``, else ``<repo>/../shared``; it may not exist (see ``require``)."""
    env = os.environ.get("LABKIT_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def real_logs(testbed: Optional[str] = None) -> Path:
    """The real testbed logs (``fixtures/testbed-logs``), or one testbed's folder of them."""
    logs = shared_dir() / "fixtures" / "testbed-logs"
    return logs / testbed if testbed else logs


def real_mnist() -> Path:
    """The real MNIST IDX files."""
    return shared_dir() / "data" / "mnist"


def mnist_folder() -> Path:
    """The MNIST the tests train on: ``$LABKIT_DATA_DIR`` when it is set (the folder labkit itself reads; a
    lent GPU machine gets a copy there, and no ``../shared``), else :func:`real_mnist`."""
    env = os.environ.get("LABKIT_DATA_DIR")
    return Path(env) if env else real_mnist()


def missing_message(path: Path) -> str:
    if os.environ.get("LABKIT_DATA_DIR") and path == mnist_folder():
        return "{} not found: LABKIT_DATA_DIR names it; set it to a folder with the MNIST IDX files".format(path)
    return "{} not found: set LABKIT_SHARED to the shared folder (real MNIST, real testbed logs), " \
           "or put it beside the checkout as {}".format(path, REPO.parent / "shared")


def require(path: Path) -> Path:
    """``path`` when it is a folder or file, else FileNotFoundError saying how to provide it."""
    if not path.exists():
        raise FileNotFoundError(missing_message(path))
    return path
