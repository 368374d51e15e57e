"""Where datasets live, and the lock that keeps concurrent runs from corrupting them.

The cache directory is, in order: the ``data_dir`` parameter, ``$LABKIT_DATA_DIR``, then the
user's cache directory (``$XDG_CACHE_HOME/labkit``, ``~/Library/Caches/labkit`` on macOS,
``~/.cache/labkit`` elsewhere). d2l hard-codes ``../data``; a notebook run from another
directory, or by papermill, must find the same files.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

__all__ = ["data_dir", "locked"]

ENV_VAR = "LABKIT_DATA_DIR"


def user_cache_dir() -> Path:
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
    return user_cache_dir() / dataset if dataset else user_cache_dir()


@contextmanager
def locked(directory: Union[str, os.PathLike], name: str = ".labkit.lock", timeout: float = 600) -> Iterator[None]:
    """Hold an inter-process lock on ``directory`` (created if needed).

    Eight notebooks started at once on a cold cache must not download into, or extract over,
    each other's half-written files.
    """
    from filelock import FileLock

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with FileLock(str(directory / name), timeout=timeout):
        yield
