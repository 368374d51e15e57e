"""labkit's cache directory (its rule: docs/architecture.md, ``labkit/data/``) and the lock that keeps
concurrent runs from corrupting it. A dataset's directory never depends on the working directory: a
notebook run from another directory, or by papermill, must find the same files (d2l's ``../data`` does not).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

__all__ = ["cache_dir", "data_dir", "locked", "CACHE_ENV_VAR", "ENV_VAR"]

ENV_VAR = "LABKIT_DATA_DIR"
CACHE_ENV_VAR = "LABKIT_CACHE_DIR"


def cache_dir() -> Path:
    """Where labkit keeps what it downloads or builds."""
    if os.environ.get(CACHE_ENV_VAR):
        return Path(os.environ[CACHE_ENV_VAR]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "labkit"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "labkit"
    return Path.home() / ".cache" / "labkit"


def data_dir(explicit: Optional[Union[str, os.PathLike]] = None, dataset: str = "") -> Path:
    """The directory a dataset is read from (and downloaded into)."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    return cache_dir() / dataset if dataset else cache_dir()


@contextmanager
def locked(directory: Union[str, os.PathLike], name: str = ".labkit.lock", timeout: float = 600) -> Iterator[None]:
    """Hold an inter-process lock on ``directory`` (created if needed): eight notebooks started at once
    on a cold cache must not download into, or extract over, each other's half-written files."""
    from filelock import FileLock

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / name), timeout=timeout):
        yield
