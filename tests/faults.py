"""Faults made for real, for the tests that prove nothing finished is lost.

    with small_disk(tmp_path / "disk", kib=300) as folder:   # a tmpfs: writes past 300 KiB fail ENOSPC
        fill(folder)                                          # ... or leave it nearly full
    with read_only(tmp_path / "out"):                         # a read-only bind mount: EROFS, root too
        ...

A tmpfs needs root (CI and the course's machines run the suite as root); elsewhere the test skips
and says so.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

__all__ = ["small_disk", "fill", "read_only"]


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


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """Make ``folder`` (made if missing) read-only for the block, for root too: a read-only bind mount of
    itself (``chmod`` does not stop root). Skips where mounts are not permitted."""
    if os.geteuid() != 0:
        pytest.skip("a read-only folder that holds for root is a bind mount, which needs root (CI runs as root)")
    folder.mkdir(parents=True, exist_ok=True)
    bound = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True, text=True)
    if bound.returncode != 0:
        pytest.skip("could not bind-mount a folder here: {}".format(bound.stderr.strip()))
    try:
        remounted = subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], capture_output=True, text=True)
        if remounted.returncode != 0:
            pytest.skip("could not make a bind mount read-only here: {}".format(remounted.stderr.strip()))
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
