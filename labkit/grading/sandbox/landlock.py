"""Landlock (Linux 5.13+): a process confines itself, and every process it starts, without root.

What a confined kernel may still do, per ABI: docs/grading.md, "Isolation levels". The calls
are the kernel's three syscalls through ``ctypes``, standard library only (and labkit's error
base where importable): the launcher (``python -I -S``) loads this file by its path.
``LABKIT_LANDLOCK=off`` makes :func:`abi_version` report 0, as a kernel without Landlock does.
"""

from __future__ import annotations

import ctypes
import glob
import os
import platform
import stat
import struct
from typing import Iterable, List, Optional, Sequence

try:
    from labkit.errors import LabkitError
except ImportError:  # loaded by its path in the kernel's launcher (python -I -S launcher.py): no labkit there
    class LabkitError(Exception):  # type: ignore[no-redef]
        """A stand-in: the launcher only catches OSError."""

__all__ = ["abi_version", "restrict", "inside", "READ", "LandlockError"]

# landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: the same numbers on every
# architecture that got them through the unified syscall table.
_SYSCALLS = dict.fromkeys(("x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "s390x"), (444, 445, 446))
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# Filesystem rights (include/uapi/linux/landlock.h), the ABI that brought each.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_ABI1_FS = (1 << 13) - 1  # EXECUTE ... MAKE_SYM
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_LATER_FS = ((2, REFER), (3, TRUNCATE), (5, IOCTL_DEV))  # (the ABI that brought it, the right)
_FILE_ONLY = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a rule on a non-folder may grant
READ = EXECUTE | READ_FILE | READ_DIR
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6

#: Read-only system folders a Python kernel needs (those that exist); /etc is filtered (below).
SYSTEM_READ = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/proc", "/sys")
#: Devices a kernel may read and write (NVIDIA and DRI devices are added where they exist, for the GPU).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class LandlockError(LabkitError, OSError):
    """Landlock is missing here, or the kernel refused a ruleset."""


def _libc() -> Optional[ctypes.CDLL]:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        return libc
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return None


def abi_version() -> int:
    """The Landlock ABI this kernel offers (0: none, or disabled, or ``LABKIT_LANDLOCK=off``)."""
    if os.environ.get("LABKIT_LANDLOCK", "").lower() in ("0", "off", "no", "false"):
        return 0
    numbers = _SYSCALLS.get(platform.machine())
    libc = _libc()
    if numbers is None or libc is None:
        return 0
    version = libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return int(version) if version > 0 else 0


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or below it (both already real paths)."""
    folder = folder.rstrip(os.sep) + os.sep
    return (path.rstrip(os.sep) + os.sep).startswith(folder)


def _minus(path: str, deny: Sequence[str], out: List[str], listed: Optional[List[str]] = None,
           top: bool = True) -> None:
    """``path`` into ``out``, or, when a denied path lies below it, its children but the way to it.

    ``path`` asked for by name (``top``) stays granted even inside a denied folder. A folder split
    so goes to ``listed``: Python's importer lists the folders on ``sys.path`` (names, not bytes).
    """
    if not top and any(inside(path, d) for d in deny):
        return
    if not any(inside(d, path) and d != path for d in deny):
        out.append(path)
        return
    try:
        names = os.listdir(path)
    except OSError:
        return
    if listed is not None:
        listed.append(path)
    for name in names:
        _minus(os.path.join(path, name), deny, out, listed, top=False)


def _private_under(top: str) -> List[str]:
    """Files and folders below ``top`` other users may not read (``/etc/shadow``, ``/etc/ssl/private``)."""
    found = []
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            if not mode & stat.S_IROTH or (stat.S_ISDIR(mode) and not mode & stat.S_IXOTH):
                found.append(path)
        dirs[:] = [d for d in dirs if os.path.join(folder, d) not in found]
    return found


def system_read_paths() -> List[str]:
    """The system folders a kernel reads: /usr, /lib*, /proc, /sys, and /etc minus what only root reads."""
    paths = [p for p in SYSTEM_READ if os.path.exists(p)]
    _minus("/etc", _private_under("/etc"), paths)
    return paths


def _add_rule(libc: ctypes.CDLL, number: int, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:  # gone, or unreadable to us: nothing to grant
        return
    try:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            rights &= _FILE_ONLY
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)  # packed: u64 + s32
        if libc.syscall(number, ruleset, _RULE_PATH_BENEATH, attr, ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), "landlock_add_rule({}): {}".format(
                path, os.strerror(ctypes.get_errno())))
    finally:
        os.close(fd)


def restrict(read: Iterable[str], write: Iterable[str], deny: Sequence[str] = (),
             deny_tcp: bool = False) -> int:
    """Confine this process from now on (it keeps its open files); return the ABI used.

    ``read`` minus ``deny`` and :func:`system_read_paths` may be read and executed, ``write`` also
    written, :data:`DEVICES` used. :class:`LandlockError` when Landlock is missing.
    """
    abi = abi_version()
    libc = _libc()
    if abi < 1 or libc is None:
        raise LandlockError("this kernel has no Landlock (Linux 5.13+ with landlock in its LSM list)")
    create, add, restrict_self = _SYSCALLS[platform.machine()]
    fs = _ABI1_FS | sum(right for since, right in _LATER_FS if abi >= since)
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if deny_tcp and abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scoped), 24)
    ruleset = libc.syscall(create, attr, ctypes.c_size_t(24 if abi >= 6 else 16), ctypes.c_uint32(0))
    if ruleset < 0:
        raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset: " + os.strerror(ctypes.get_errno()))
    try:
        denied = [os.path.realpath(d) for d in deny if d]
        readable: List[str] = []
        listed: List[str] = []
        for path in list(read) + system_read_paths():
            if path:
                _minus(os.path.realpath(path), denied, readable, listed)
        for path in listed:
            _add_rule(libc, add, ruleset, path, READ_DIR)
        for path in dict.fromkeys(readable):
            _add_rule(libc, add, ruleset, path, READ & fs)
        for path in list(DEVICES) + glob.glob("/dev/nvidia*") + glob.glob("/dev/dri"):
            _add_rule(libc, add, ruleset, path, (READ_FILE | WRITE_FILE | IOCTL_DEV) & fs)
        for path in write:
            if path:
                _add_rule(libc, add, ruleset, os.path.realpath(path), fs)
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)  # required by landlock_restrict_self without CAP_SYS_ADMIN
        if libc.syscall(restrict_self, ruleset, ctypes.c_uint32(0)) != 0:
            raise LandlockError(ctypes.get_errno(), "landlock_restrict_self: " + os.strerror(ctypes.get_errno()))
    finally:
        os.close(ruleset)
    return abi
