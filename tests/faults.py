"""Faults made for real, for the tests that prove nothing finished is lost.

    with small_disk(tmp_path / "disk", kib=300) as folder:   # a tmpfs: writes past 300 KiB fail ENOSPC
        fill(folder)                                          # ... or leave it nearly full
    with fifo(tmp_path / "run.log") as pipe:                  # a real FIFO nobody writes to
        ...; assert pipe.readers == 0                         # no reader ever opened it
    with read_only(tmp_path / "out"): ...                     # a folder even root cannot write in

A tmpfs or a read-only bind mount needs root (CI and the course's machines run the suite as root);
elsewhere the test skips and says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import signal
import threading
from pathlib import Path
from typing import Iterator, Optional

import pytest

__all__ = ["small_disk", "fill", "fifo", "Fifo", "read_only", "bounded"]


@contextlib.contextmanager
def small_disk(folder: Path, kib: int = 300) -> Iterator[Path]:
    """Mount a tmpfs of ``kib`` KiB on ``folder`` (made if missing) for the block; unmount after."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is made with a tmpfs, which needs root (CI runs as root)")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size={}k".format(kib), "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip("could not mount a tmpfs here: {}".format(mounted.stderr.strip()))
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system under ``folder`` until at most ``leave`` bytes are free; return the filler."""
    filler = folder / ".filler"
    with open(filler, "wb") as f:
        chunk = b"\0" * 4096
        try:
            while True:
                stats = os.statvfs(folder)
                free = stats.f_bavail * stats.f_frsize
                if free <= leave:
                    break
                f.write(chunk[:max(1, min(len(chunk), free - leave))])
                f.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


class Fifo:
    """A real FIFO (``os.mkfifo``) that no process writes to: code that opens it to read would wait for
    ever. A watcher gives each reader that opens it an end of file at once and counts it in ``readers``,
    so a test of code that must refuse the FIFO unopened fails on ``readers`` instead of hanging."""

    def __init__(self, path: Path):
        self.path = path
        self.readers = 0
        os.mkfifo(str(path))
        self._done = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()

    def __str__(self) -> str:
        return str(self.path)

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            try:  # without O_NONBLOCK this open would itself wait for a reader
                handle = os.open(str(self.path), os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno not in (errno.ENXIO, errno.ENOENT):  # ENXIO: no reader has it open
                    raise
                continue
            self.readers += 1
            os.close(handle)  # the reader sees an end of file

    def close(self) -> None:
        self._done.set()
        self._watcher.join()


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Fifo]:
    """A :class:`Fifo` at ``path`` for the block; its watcher stops after."""
    made = Fifo(path)
    try:
        yield made
    finally:
        made.close()


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """Make ``folder`` (made if missing) read-only for the block, for root too (chmod does not stop root):
    a read-only bind mount of it over itself; unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("a read-only folder is made with a bind mount, which needs root (CI runs as root)")
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip("could not bind-mount {} here: {}".format(folder, mounted.stderr.strip()))
    try:
        remounted = subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], capture_output=True, text=True)
        if remounted.returncode != 0:
            pytest.skip("could not make a bind mount read-only here: {}".format(remounted.stderr.strip()))
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def bounded(*command: str, limit_s: float = 240, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Run ``command`` with labkit from this checkout in a session of its own; kill it and every process
    it started (a kernel) if it outlives ``limit_s``, so a test of a hang fails instead of hanging."""
    repo = str(Path(__file__).resolve().parent.parent)
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=None if cwd is None else str(cwd), env=dict(os.environ, PYTHONPATH=repo),
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)
