"""Atomic file replacement, written once: readers see the old file or the new one, never half.

    write_atomic("out/summary.md", text)                  # str (UTF-8) or bytes
    produce_atomic("out/plot.png", fig.savefig)           # code that writes to a path it is given
    replace_atomic("out/run.running.ipynb", "out/run.ipynb")   # a file finished by other code

The first two write a temporary in the target's own folder (a rename across file systems is not
atomic), fsync it, ``os.replace`` it over the target, then fsync the folder so the rename itself
survives a crash. On any error the temporary is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path
from typing import Callable, Union

__all__ = ["write_atomic", "produce_atomic", "replace_atomic", "FILE_MODE"]

#: Files written here are readable by others, as ``open(path, "w")`` under the usual umask makes them.
FILE_MODE = 0o644

PathLike = Union[str, "os.PathLike[str]"]


def write_atomic(path: PathLike, content: Union[str, bytes]) -> None:
    """Replace ``path`` with ``content`` (text is written as UTF-8, line endings untouched)."""
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    produce_atomic(path, lambda temporary: Path(temporary).write_bytes(data))


def produce_atomic(path: PathLike, produce: Callable[[str], object]) -> None:
    """Call ``produce(temporary)`` to make a file or folder, then move it to ``path`` atomically.

    The temporary's name ends with the target's name, so code that picks a format from the
    extension (``savefig``, ``torch.onnx.export``) sees the same one. A folder may be produced
    only where ``path`` does not exist yet (``os.replace`` will not replace a full folder).
    """
    final = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(final)
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, ".tmp-{}-{}-{}".format(os.getpid(), uuid.uuid4().hex[:8],
                                                            os.path.basename(final)))
    try:
        produce(temporary)
        if os.path.isfile(temporary):
            os.chmod(temporary, FILE_MODE)
        replace_atomic(temporary, final)
    except BaseException:
        _remove(temporary)
        raise


def replace_atomic(finished: PathLike, path: PathLike) -> None:
    """Move a finished file or folder, made by other code in ``path``'s folder, over ``path``:
    its content is flushed to disk first and the rename after, so a crash leaves one or the other."""
    _sync_tree(os.fspath(finished))
    os.replace(finished, path)
    _sync_folder(os.path.dirname(os.path.abspath(os.fspath(path))))


def _sync_tree(path: str) -> None:
    """fsync a file, or every file of a folder and the folder itself, before the rename."""
    if os.path.isdir(path):
        for root, _, names in os.walk(path):
            for name in names:
                _sync_file(os.path.join(root, name))
            _sync_folder(root)
    else:
        _sync_file(path)


def _sync_file(path: str) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _sync_folder(folder: str) -> None:
    # Some file systems refuse fsync on a folder; the data itself is already on disk then.
    with contextlib.suppress(OSError):
        handle = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)
