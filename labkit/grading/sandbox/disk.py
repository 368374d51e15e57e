"""A submission's disk share: the folder its kernel writes (its copy of the submission, its connection files)
and the kernel's log hold at most ``Limits.disk_bytes`` (``labkit grade --disk MB``).

As root the share is a file system of its own: a sparse ext4 image of the share's size (plus room for the
file system's own blocks) in the run's folder, loop-mounted ``nosuid,nodev``, so a write past it fails with
ENOSPC and the grading disk never holds more of it than that. Where no image can be mounted (not root, no
loop device, ``LABKIT_DISK_MOUNT=off``) the share is a plain folder. Either way :meth:`Share.watch` measures
it every :data:`POLL_S` seconds and stops the run once it holds more than the share; a plain folder can
overshoot by what the kernel writes in that time (``RLIMIT_FSIZE`` still caps each file).

Before a batch starts, :func:`check_space` refuses it in one sentence when the file systems that will hold
the run folders and the output folder have less free space than ``--workers`` shares and their margins.
What each level enforces, and how: docs/grading.md, "A disk share per submission".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from contextlib import suppress
from typing import Callable, Dict, List, Optional, Tuple

from labkit.errors import LabkitError

__all__ = ["Share", "NotEnoughSpace", "POLL_S", "MIB", "OUT_MARGIN", "folder_bytes", "check_space", "space_needed",
           "remove_run_folder", "unmount_below", "mountable"]

MIB = 1 << 20
#: How often a running share is measured (seconds).
POLL_S = 0.2
#: A file counts at least this much in a folder that is measured by walking it: a million empty files are a
#: million inodes on the grading disk, not nothing.
_SMALLEST_FILE = 4096
#: Free space the output folder needs beyond the runs: state, gradebook, feedback pages, class page.
OUT_MARGIN = 16 * MIB


class NotEnoughSpace(LabkitError, RuntimeError):
    """A batch would not fit on the disks it writes (:func:`check_space`); nothing was run."""


def _room(limit: int) -> int:
    """What the share's own file system needs for itself beyond ``limit``: inodes, folders, a little slack."""
    return max(4 * MIB, limit // 32)


def folder_bytes(folder: str) -> int:
    """The disk ``folder`` holds (its allocated blocks, each file or link at least 4 KiB); links not followed."""
    total = 0
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            with suppress(OSError):  # removed meanwhile
                total += max(os.lstat(os.path.join(top, name)).st_blocks * 512, _SMALLEST_FILE)
    return total


class Share:
    """The folder ``path`` (made here) where one run's kernel may write, limited to ``limit`` bytes (0: no limit).

    ``log``: a file the kernel writes through an inherited descriptor outside the folder (its stdout), counted too.
    """

    def __init__(self, path: str, limit: int, log: Optional[str] = None):
        self.path = path
        self.limit = int(limit or 0)
        self.log = log
        self.image = path + ".img"
        self.mounted = False
        self._empty = 0  # what a mounted file system holds for itself before the kernel writes
        self.peak = 0
        self.over = False
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def open(self) -> "Share":
        """Make the folder; as root, mount a file system of the share's size on it."""
        os.makedirs(self.path, mode=0o711, exist_ok=True)
        if self.limit and mountable():
            self.mounted = _mount_image(self.path, self.image, self.limit + _room(self.limit))
            self._empty = self.used() if self.mounted else 0
        os.chmod(self.path, 0o711)  # the run's uid passes through to its folders, lists nothing here
        return self

    def used(self) -> int:
        """Bytes the share holds now (the kernel's log included)."""
        if self.mounted:
            stats = os.statvfs(self.path)
            used = (stats.f_blocks - stats.f_bfree) * stats.f_frsize - self._empty
        else:
            used = folder_bytes(self.path)
        if self.log:
            with suppress(OSError):
                used += os.lstat(self.log).st_blocks * 512
        return used

    def measure(self) -> bool:
        """Measure now; whether the share has held more than its limit (then or before)."""
        with suppress(OSError):
            used = self.used()
            self.peak = max(self.peak, used)
            self.over = self.over or bool(self.limit and used > self.limit)
        return self.over

    def watch(self, stop: Callable[[], None]) -> None:
        """Measure every :data:`POLL_S` s in a thread; call ``stop()`` (kill the run) whenever it is over.
        Without a limit nothing is watched (:meth:`measure` at the end still gives the peak)."""
        if not self.limit:
            return

        def loop() -> None:
            while not self._done.wait(POLL_S):
                if self.measure():
                    stop()
        self._thread = threading.Thread(target=loop, name="disk share", daemon=True)
        self._thread.start()

    def stop_watching(self) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(10)

    def reason(self) -> str:
        """The row's and the feedback's sentence for a run over its share."""
        return ("used more than {} of disk in its run folder; the limit is {} a submission "
                "(labkit grade --disk)").format(_size(self.limit), _size(self.limit))

    def close(self) -> None:
        """Stop watching and unmount; the folder's files go with the image (the run folder is removed later)."""
        self.stop_watching()
        if self.mounted:
            _unmount(self.path)
            self.mounted = False
        with suppress(OSError):
            os.unlink(self.image)


def mountable() -> bool:
    """Whether shares are mounted here (root, ``mkfs.ext4`` and ``mount``, not ``LABKIT_DISK_MOUNT=off``);
    a mount that still fails (no loop device) leaves that run's share watched."""
    return (os.geteuid() == 0 and os.environ.get("LABKIT_DISK_MOUNT", "").lower() not in ("0", "off", "no", "false")
            and bool(shutil.which("mkfs.ext4")) and bool(shutil.which("mount")))


def _mount_image(folder: str, image: str, size: int) -> bool:
    """A sparse ext4 image of ``size`` bytes, loop-mounted on ``folder``; False (nothing left) where that fails."""
    try:
        fd = os.open(image, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o600)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
        # no journal, no reserved blocks, lazy inode tables: made in milliseconds, every block the kernel's
        mkfs = ["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard", image]
        for command in (mkfs, ["mount", "-o", "loop,nosuid,nodev", image, folder]):
            subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.SubprocessError):
        with suppress(OSError):
            os.unlink(image)
        return False
    with suppress(OSError):
        os.rmdir(os.path.join(folder, "lost+found"))
    return True


def _unmount(folder: str) -> None:
    for command in (["umount", folder], ["umount", "-l", folder]):  # lazily when a process still holds it
        with suppress(OSError, subprocess.SubprocessError):
            if subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=60).returncode == 0:
                return


def _mount_points() -> List[str]:
    try:
        with open("/proc/self/mountinfo", "rb") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    points = []
    for line in lines:
        fields = line.split(b" ")
        if len(fields) > 4:  # octal escapes for space, tab, newline, backslash
            points.append(os.fsdecode(re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), fields[4])))
    return points


def unmount_below(folder: str) -> None:
    """Unmount every file system mounted at or below ``folder`` (shares a killed worker left), deepest first."""
    real = os.path.realpath(folder).rstrip(os.sep) + os.sep
    for point in sorted((p for p in _mount_points() if (p.rstrip(os.sep) + os.sep).startswith(real)),
                        key=len, reverse=True):
        _unmount(point)


def remove_run_folder(folder: str) -> None:
    """Remove a run's folder (or a grader's folder of runs) whatever shares are still mounted in it."""
    if os.path.isdir(folder):
        unmount_below(folder)
    shutil.rmtree(folder, ignore_errors=True)


def _size(n: float) -> str:
    return "{:.1f} MB".format(n / MIB) if n < 10 * MIB else "{:.0f} MB".format(n / MIB)


def space_needed(limit: int, fsize: int, output: int) -> int:
    """Free space one run needs where the run folders are: its share (and its file system's room), the
    kernel's log (at most one file), the notebook kept and its executed copy."""
    share = limit + _room(limit) if limit else 0
    log = min(fsize, limit) if fsize and limit else (fsize or limit)  # no file is larger than the share
    return share + log + 2 * output


def _existing(path: str) -> str:
    path = os.path.abspath(path)
    while not os.path.exists(path):
        path = os.path.dirname(path)
    return path


def check_space(out_dir: str, workers: int, limit: int, fsize: int, output: int, runs: Optional[str] = None) -> None:
    """Raise :class:`NotEnoughSpace` when the run folders' file system (``runs``, the temporary folder) or the
    output folder's has less free space than ``workers`` runs need (:func:`space_needed`) and the outputs."""
    runs = runs or tempfile.gettempdir()
    per_run = space_needed(limit, fsize, output)
    needs: Dict[int, Tuple[List[str], int]] = {}
    for folder, need in ((runs, workers * per_run), (out_dir, OUT_MARGIN)):
        device = os.stat(_existing(folder)).st_dev
        names, total = needs.get(device, ([], 0))
        needs[device] = (names + [folder], total + need)
    for names, need in needs.values():
        stats = os.statvfs(_existing(names[0]))
        free = stats.f_bavail * stats.f_frsize
        if free < need:
            where = " and ".join("{} ({})".format(n, "the run folders" if n == runs else "the output folder")
                                 for n in names)
            raise NotEnoughSpace(
                "not enough free space to grade: {} has {} free and needs {} ({} worker{} x {} each: a disk share "
                "of {} (--disk), the kernel's log and the executed notebook{}); free some space, lower --workers or "
                "--disk, or set TMPDIR to a larger disk".format(
                    where, _size(free), _size(need), workers, "s" if workers != 1 else "", _size(per_run),
                    _size(limit) if limit else "none", ", plus {} for the gradebook".format(_size(OUT_MARGIN))
                    if out_dir in names else ""))
