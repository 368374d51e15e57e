"""Start N processes as the ranks of one job and follow them to the end: the one launcher of
SambaNova's portable data-parallel ranks and of the scaling study's replicas.

    def worker(rank, steps):                     # module level, so that a fresh process can import it
        rank.join_group("gloo")                  # torch.distributed, through the parent's rendezvous
        rank.report("step", 1, 0.25)             # -> on_message(rank.rank, "step", (1, 0.25)) in the parent
        return {"rank": rank.rank, "of": rank.world_size}

    outcome = rank_launcher.launch(worker, 2, args=(10,), on_message=print)
    outcome.results                              # {0: {"rank": 0, "of": 2}, 1: {"rank": 1, "of": 2}}

- rendezvous: the parent holds a ``torch.distributed.TCPStore`` on a port the OS picks and keeps
  its socket, so launches side by side never collide;
- interrupts: Kernel -> Interrupt reaches every process of the kernel's group, so each rank
  ignores SIGINT and the parent decides (``stop_on_interrupt``: see :func:`launch`);
- failures: a rank that raises (its traceback comes back), dies, exits without a result, or a
  launch past its ``timeout`` raises :class:`RanksFailed` and stops the other ranks;
- no process is left behind: on every way out the ranks are joined, then terminated, then killed.
"""

from __future__ import annotations

import datetime
import queue as queue_module
import signal
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from labkit.errors import LabkitError

__all__ = ["Rank", "RanksOutcome", "RanksFailed", "launch", "STORE_TIMEOUT_S"]

#: How long a rank waits for the others at the rendezvous.
STORE_TIMEOUT_S = 300

#: Message kinds the launcher keeps for itself; a worker's own kinds go to ``on_message``.
_RESULT, _ERROR = "__result__", "__error__"


class RanksFailed(LabkitError, RuntimeError):
    """A rank raised, died or did not finish in time; the message says which and why."""


@dataclass
class RanksOutcome:
    """What the ranks returned, by rank (all of them unless ``interrupted``)."""

    results: Dict[int, Any] = field(default_factory=dict)
    interrupted: bool = False


@dataclass
class Rank:
    """What a worker gets as its first argument: its rank, the world size, a way to report to
    the parent while it runs, and the way into the process group."""

    rank: int
    world_size: int
    port: int
    _messages: Any = field(repr=False)

    def report(self, kind: str, *payload: Any) -> None:
        """Send ``(kind, payload)`` to the parent's ``on_message`` (picklable values only)."""
        self._messages.put((kind, self.rank) + payload)

    def join_group(self, backend: str) -> None:
        """``torch.distributed.init_process_group(backend)`` through the parent's store."""
        import torch.distributed as dist

        store = dist.TCPStore("127.0.0.1", self.port, is_master=False,
                              timeout=datetime.timedelta(seconds=STORE_TIMEOUT_S))
        dist.init_process_group(backend, store=store, rank=self.rank, world_size=self.world_size)


def _run_rank(target: Callable[..., Any], rank: int, world_size: int, port: int, messages: Any,
              args: Tuple[Any, ...]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt does
    try:
        result = target(Rank(rank, world_size, port, messages), *args)
    except BaseException:  # report, then let the process fail
        messages.put((_ERROR, rank, traceback.format_exc()))
        raise
    messages.put((_RESULT, rank, result))


def launch(target: Callable[..., Any], world_size: int, args: Tuple[Any, ...] = (), *, start: str = "spawn",
           preload: Sequence[str] = (), on_message: Optional[Callable[[int, str, Tuple[Any, ...]], None]] = None,
           timeout: Optional[float] = None, stop_on_interrupt: bool = False,
           what: str = "The ranks", finishing: Optional[Callable[[], bool]] = None) -> RanksOutcome:
    """Run ``target(rank, *args)`` in ``world_size`` processes and gather what each returns.

    ``target`` must be importable by name (a module-level function). ``start="forkserver"``
    (Linux, macOS; spawn elsewhere) starts one clean server (no threads, no CUDA) that imports
    ``preload`` once and forks each rank from there, so a sweep of launches pays slow imports
    once; ``"spawn"`` gives every rank a fresh interpreter. ``on_message(rank, kind,
    payload)`` is called in the parent for each ``rank.report(kind, *payload)``. With
    ``stop_on_interrupt``, a first interrupt stops the ranks, unless ``finishing()`` says they have
    done their work and only their results are still to come (they are waited for), and the
    outcome is ``interrupted``; without it the ranks run on (a caller inside
    ``interrupts.graceful()`` lets them finish) and an interrupt raised here stops them. Raises
    :class:`RanksFailed` ("<what> failed: rank 1 failed: <traceback>") when a rank fails or
    nothing is finished after ``timeout`` seconds.
    """
    import torch.distributed as dist
    import torch.multiprocessing as mp

    from labkit import interrupts

    store = dist.TCPStore("127.0.0.1", 0, world_size=None, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=STORE_TIMEOUT_S))
    forkserver = start == "forkserver" and "forkserver" in mp.get_all_start_methods()
    context = mp.get_context("forkserver" if forkserver else "spawn")
    # the server starts once per process: an empty list must not undo another caller's preload
    if forkserver and preload:
        context.set_forkserver_preload(list(preload))
    messages = context.Queue()
    procs = [context.Process(target=_run_rank, args=(target, rank, world_size, store.port, messages, tuple(args)),
                             daemon=True) for rank in range(world_size)]
    outcome = RanksOutcome()
    failure: Optional[str] = None
    stop = interrupts.graceful() if stop_on_interrupt else None
    try:
        _start_with_interrupts_held(procs)
        if stop is not None:
            stop.__enter__()
        deadline = None if timeout is None else time.monotonic() + timeout
        while len(outcome.results) < world_size and failure is None and not (
                stop is not None and stop.requested and not (finishing is not None and finishing() and not stop.at_once)):
            try:
                kind, rank, *payload = messages.get(timeout=0.5)
            except queue_module.Empty:
                failure = _check_alive(procs, outcome.results, messages, deadline, timeout)
                continue
            if kind == _RESULT:
                outcome.results[rank] = payload[0]
            elif kind == _ERROR:
                failure = "rank {} failed:\n{}".format(rank, payload[0])
            elif on_message is not None:
                on_message(rank, kind, tuple(payload))
    except KeyboardInterrupt as exc:
        if stop is None or not stop.interrupted_by(exc):
            raise
    finally:
        if stop is not None:
            stop.__exit__()
        finished = len(outcome.results) == world_size and failure is None
        _stop_all(procs, grace=30 if finished else 0)
        messages.close()
        del store
    outcome.interrupted = stop is not None and stop.requested and len(outcome.results) < world_size
    if failure is not None:
        raise RanksFailed("{} failed: {}".format(what, failure))
    return outcome


def _start_with_interrupts_held(procs: List[Any]) -> None:
    """Start the rank processes with SIGINT blocked, a mask they inherit through fork and exec.

    An interrupt goes to the kernel's whole process group, and a rank still starting (before
    :func:`_run_rank` ignores SIGINT) would die of it with status 1. Blocked, the signal stays
    pending in the rank until it ignores SIGINT, and here until the mask is lifted.
    """
    held = hasattr(signal, "pthread_sigmask")  # Windows has no process groups to fear
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if held else None
    try:
        for proc in procs:
            proc.start()
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _check_alive(procs: List[Any], results: Dict[int, Any], messages: Any, deadline: Optional[float],
                 timeout: Optional[float]) -> Optional[str]:
    """Why the launch cannot finish (a rank died, exited with no result, time is up), or None."""
    for rank, proc in enumerate(procs):
        if proc.exitcode not in (None, 0):
            return "rank {} exited with status {}".format(rank, proc.exitcode)
    if all(proc.exitcode == 0 for proc in procs) and len(results) < len(procs):
        time.sleep(0.5)  # a result sent just before its rank exited may still be on its way
        if messages.empty():
            missing = [r for r in range(len(procs)) if r not in results]
            return "rank {} exited without a result".format(missing[0])
    if deadline is not None and time.monotonic() > deadline:
        return "no result after {:.0f}s".format(timeout)
    return None


def _stop_all(procs: List[Any], grace: float) -> None:
    for proc in procs:
        if proc.pid is None:  # never started
            continue
        proc.join(timeout=grace)
        if proc.is_alive():
            proc.terminate()
            proc.join(5)
        if proc.is_alive():
            proc.kill()
            proc.join(5)
