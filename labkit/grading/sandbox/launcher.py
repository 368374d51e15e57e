"""Apply resource limits, drop privileges, then exec a command (the student's kernel).

The grader puts this launcher between the sandbox (bubblewrap / unshare) and the kernel:

    python -I -S labkit/grading/sandbox/launcher.py --die-with-parent --cgroup /sys/fs/cgroup/pids/labkit-grade/r1 -- bwrap ... -- \
    python -I -S labkit/grading/sandbox/launcher.py --memory 2147483648 --nproc 64 --fsize 67108864 --cpu 690 --die-with-parent \
        --uid 61003 --gid 61003 -- python -m ipykernel_launcher -f kernel.json

Limits are rlimits, so they hold for every process the kernel starts; as root it switches to the
run's private uid (Linux does not enforce ``RLIMIT_NPROC`` for root) with ``PR_SET_NO_NEW_PRIVS``.
``--cgroup`` stages run before the sandbox, since inside bubblewrap /sys is read-only. What each
level gives: docs/grading.md, "Isolation levels". Import-light: it runs before every kernel.
"""

from __future__ import annotations

import argparse
import ctypes  # imported before the uid switch: the interpreter's files may be unreadable after it
import importlib.util
import os
import resource
import sys
from typing import List, Optional

PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
SIGKILL = 9


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where there is none (not Linux: nothing to set)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        return False
    return True


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m labkit.grading.sandbox.launcher")
    parser.add_argument("--memory", type=int, help="RLIMIT_DATA in bytes (memory written, not libraries mapped)")
    parser.add_argument("--nproc", type=int, help="RLIMIT_NPROC (processes and threads of the uid)")
    parser.add_argument("--fsize", type=int, help="RLIMIT_FSIZE in bytes (largest file written)")
    parser.add_argument("--cpu", type=int, help="RLIMIT_CPU in seconds")
    parser.add_argument("--uid", type=int, help="switch to this uid (needs root)")
    parser.add_argument("--gid", type=int, help="switch to this gid (needs root)")
    parser.add_argument("--cgroup", action="append", default=[], metavar="DIR",
                        help="join this cgroup (its cgroup.procs) first; may repeat")
    parser.add_argument("--die-with-parent", action="store_true",
                        help="SIGKILL this process when its parent dies (PR_SET_PDEATHSIG), after the uid switch")
    parser.add_argument("--parent", type=int, help="with --die-with-parent: the pid expected as parent")
    parser.add_argument("--landlock", action="store_true",
                        help="confine files with Landlock before exec (fail if the kernel has none)")
    parser.add_argument("--landlock-read", action="append", default=[], metavar="PATH",
                        help="with --landlock: may be read and executed (besides /usr, /lib*, public /etc...)")
    parser.add_argument("--landlock-write", action="append", default=[], metavar="PATH",
                        help="with --landlock: may be read and written")
    parser.add_argument("--landlock-deny", action="append", default=[], metavar="PATH",
                        help="with --landlock: never readable, even below a --landlock-read folder")
    parser.add_argument("--landlock-tcp", action="store_true",
                        help="with --landlock: no TCP connect or bind (Landlock ABI 4+)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given after --")

    for folder in args.cgroup:  # join before anything else: children inherit the cgroup
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    # RLIMIT_DATA, not RLIMIT_AS: a CUDA build of torch maps about 6 GB of libraries (VmPeak) for
    # 1 GB resident, so an address-space cap starves an honest re-run long before a memory hog.
    # RLIMIT_DATA counts what a process can write (heap, anonymous maps, thread stacks).
    for which, value in ((resource.RLIMIT_DATA, args.memory), (resource.RLIMIT_FSIZE, args.fsize),
                         (resource.RLIMIT_CPU, args.cpu), (resource.RLIMIT_NPROC, args.nproc)):
        if value is not None and value > 0:
            hard = resource.getrlimit(which)[1]  # a lower hard limit stays
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
            resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core dumps of a crashed kernel
    if args.landlock:  # before the uid switch: the rules' folders are opened while we can reach them
        # landlock.py beside this file, loaded by its path: no ``labkit`` is importable here (and none
        # from a submission may be)
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock.py")
        spec = importlib.util.spec_from_file_location("_labkit_landlock", path)
        landlock = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(landlock)  # type: ignore[union-attr]
        try:
            landlock.restrict(args.landlock_read, args.landlock_write, args.landlock_deny, args.landlock_tcp)
        except OSError as exc:
            print("labkit grade: Landlock was asked for and failed, the kernel is not started: {}".format(exc),
                  file=sys.stderr)
            return 126
    if args.uid is not None and os.geteuid() == 0:
        gid = args.gid if args.gid is not None else args.uid
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(args.uid, args.uid, args.uid)
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    # SIGKILL this process (and so the kernel it becomes) when its parent dies; set last: it survives exec
    # but a uid switch clears it. --parent closes the race of a parent that died before the call.
    if args.die_with_parent and _prctl(PR_SET_PDEATHSIG, SIGKILL) and args.parent not in (None, os.getppid()):
        os._exit(137)  # an orphan must not start the kernel
    # ipykernel exits when its parent pid changes; inside a PID namespace the grader's pid
    # means nothing, and the sandbox already ends the kernel with its grader.
    os.environ.pop("JPY_PARENT_PID", None)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print("labkit grade: cannot start {}: {}".format(command[0], exc), file=sys.stderr)
        return 127
    return 0  # pragma: no cover - exec does not return


if __name__ == "__main__":
    sys.exit(main())
