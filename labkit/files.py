"""Atomic file replacement, written once: readers see the old file or the new one, never half.

    write_atomic("out/summary.md", text)                  # str (UTF-8) or bytes
    produce_atomic("out/plot.png", fig.savefig)           # code that writes to a path it is given
    replace_atomic("out/run.running.ipynb", "out/run.ipynb")   # a file finished by other code
    temporary_beside("out/run.ipynb")                     # where other code may write one to finish so
    with exclusive("out/run.ipynb", "labkit run"): ...    # one writer of a path at a time
    regular_file(path, "log_path")                        # refuse a FIFO, device or folder unopened

The first two write a temporary in the target's own folder (a rename across file systems is not
atomic), fsync it, ``os.replace`` it over the target, then fsync the folder so the rename itself
survives a crash. On any error the temporary is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import uuid
from pathlib import Path
from typing import Callable, Iterator, Union

from labkit.errors import LabkitError

__all__ = ["write_atomic", "produce_atomic", "replace_atomic", "temporary_beside", "exclusive", "regular_file", "FILE_MODE",
           "Busy", "NotAFile"]

#: Files written here are readable by others, as ``open(path, "w")`` under the usual umask makes them.
FILE_MODE = 0o644

PathLike = Union[str, "os.PathLike[str]"]


class Busy(LabkitError, RuntimeError):
    """Another process holds the path this one would write (:func:`exclusive`)."""

    shown_as = "Busy"


class NotAFile(LabkitError, ValueError):
    """A path given as a file is a folder, a FIFO, a device or a socket (:func:`regular_file`)."""

    shown_as = "NotAFile"
    #: What the path is, in words ("a FIFO (named pipe)"), for a message that names the path its own way.
    kind = ""


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
    temporary = temporary_beside(final)
    try:
        produce(temporary)
        if os.path.isfile(temporary):
            os.chmod(temporary, FILE_MODE)
        replace_atomic(temporary, final)
    except BaseException:
        _remove(temporary)
        raise


def temporary_beside(path: PathLike) -> str:
    """A name for a temporary in ``path``'s folder (made if missing), ending with ``path``'s name so that
    code which picks a format from the extension sees the same one; hidden, and unique to this process."""
    final = os.path.abspath(os.fspath(path))
    folder = os.path.dirname(final)
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, ".tmp-{}-{}-{}".format(os.getpid(), uuid.uuid4().hex[:8], os.path.basename(final)))


def replace_atomic(finished: PathLike, path: PathLike) -> None:
    """Move a finished file or folder, made by other code in ``path``'s folder, over ``path``:
    its content is flushed to disk first and the rename after, so a crash leaves one or the other."""
    _sync_tree(os.fspath(finished))
    os.replace(finished, path)
    _sync_folder(os.path.dirname(os.path.abspath(os.fspath(path))))


@contextlib.contextmanager
def exclusive(path: PathLike, command: str) -> Iterator[None]:
    """Hold ``path`` for one writer: raise :class:`Busy`, naming ``command``, while another holds it.

    The lock is an ``flock`` on ``.<name>.lock`` beside ``path``; the kernel drops it when the holder
    exits, however it exits, so a crashed writer never leaves the path locked. The lock file stays
    (removing it would let a third writer lock a fresh file while the second holds the old one).
    """
    final = os.path.abspath(os.fspath(path))
    folder, name = os.path.split(final)
    os.makedirs(folder, exist_ok=True)
    lock = os.path.join(folder, "." + name + ".lock")
    fd = os.open(lock, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy("another `{}` is writing {}; wait for it to finish or stop it".format(
                command, final)) from None
        yield
    finally:
        os.close(fd)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def regular_file(path: PathLike, what: str) -> Path:
    """Return ``path`` if it is a regular file (a link to one counts); else raise, without opening it
    (a read from a FIFO blocks until a writer comes, which may be never): ``FileNotFoundError`` or
    :class:`NotAFile`, each naming ``what`` and the path."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError("{} {}: no such file".format(what, os.fspath(path))) from None
    for test, kind in _KINDS:
        if test(mode):
            refused = NotAFile("{} {}: is {}, not a regular file".format(what, os.fspath(path), kind))
            refused.kind = kind
            raise refused
    return Path(path)


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
