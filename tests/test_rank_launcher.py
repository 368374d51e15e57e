"""labkit.rank_launcher, the one launcher of N ranks (SambaNova's portable ranks, the scaling study's
replicas), with real processes: results gathered by rank, a rank's traceback brought back, a
hanging rank stopped by the timeout or by an interrupt that the ranks themselves ignore, and no
process left behind in any of these cases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from labkit import rank_launcher

ROOT = Path(__file__).resolve().parent.parent
FAST = dict(start="forkserver", timeout=120)  # one fork server for the whole file: no imports per rank


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _pids(folder: Path, count: int):
    deadline = time.monotonic() + 60
    while len(list(folder.glob("*.pid"))) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid"))]


def _echo(rank, factor):
    rank.report("hello", os.getpid())
    return {"rank": rank.rank, "world": rank.world_size, "value": factor * rank.rank}


def _hang(rank, folder):
    (Path(folder) / "{}.pid".format(rank.rank)).write_text(str(os.getpid()))
    rank.report("ready")
    while True:
        time.sleep(0.1)


def _rank_one_breaks(rank, folder):
    if rank.rank == 1:
        # break only once rank 0 is running, so the test sees a live rank stopped (not one never started)
        _pids(Path(folder), 1)
        raise ValueError("rank one is broken")
    _hang(rank, folder)


def _exit(rank, status):
    os._exit(status)


def test_every_rank_gets_its_rank_and_world_and_results_come_back_by_rank():
    heard = []
    outcome = rank_launcher.launch(_echo, 3, args=(10,), on_message=lambda r, kind, payload: heard.append((r, kind)), **FAST)
    assert outcome.results == {r: {"rank": r, "world": 3, "value": 10 * r} for r in range(3)}
    assert not outcome.interrupted and sorted(heard) == [(0, "hello"), (1, "hello"), (2, "hello")]


def test_a_rank_that_raises_brings_its_traceback_back_and_the_others_are_stopped(tmp_path):
    with pytest.raises(rank_launcher.RanksFailed) as err:
        rank_launcher.launch(_rank_one_breaks, 2, args=(str(tmp_path),), what="The test run", **FAST)
    message = str(err.value)
    assert message.startswith("The test run failed: rank 1 failed:") and "ValueError: rank one is broken" in message
    assert isinstance(err.value, RuntimeError)
    pids = _pids(tmp_path, 1)
    assert len(pids) == 1 and _gone(pids[0])


@pytest.mark.timing
def test_a_hanging_rank_is_stopped_at_the_timeout(tmp_path):
    start = time.monotonic()
    with pytest.raises(rank_launcher.RanksFailed, match="no result after 3s"):
        rank_launcher.launch(_hang, 2, args=(str(tmp_path),), start="forkserver", timeout=3)
    assert time.monotonic() - start < 60
    pids = _pids(tmp_path, 2)
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


@pytest.mark.parametrize("status, words", [(0, "rank 0 exited without a result"), (3, "exited with status 3")])
def test_a_rank_that_exits_without_a_result_fails_the_launch(status, words):
    with pytest.raises(rank_launcher.RanksFailed, match=words):
        rank_launcher.launch(_exit, 2, args=(status,), **FAST)


def _interrupt_when_all_ready(folder: Path, world: int, log: list):
    def on_message(rank, kind, payload):
        if kind != "ready":
            return
        log.append(rank)
        if len(log) == world:
            children = _pids(folder, world)
            for pid in children:  # Kernel -> Interrupt reaches the ranks too: they ignore it
                os.kill(pid, signal.SIGINT)
            time.sleep(0.5)
            assert not any(_gone(pid) for pid in children)
            os.kill(os.getpid(), signal.SIGINT)  # ... and the parent decides
    return on_message


@pytest.mark.timing
def test_with_stop_on_interrupt_an_interrupt_stops_the_ranks_and_returns(tmp_path):
    log = []
    outcome = rank_launcher.launch(_hang, 2, args=(str(tmp_path),), stop_on_interrupt=True,
                           on_message=_interrupt_when_all_ready(tmp_path, 2, log), **FAST)
    assert outcome.interrupted and outcome.results == {} and sorted(log) == [0, 1]
    assert all(_gone(pid) for pid in _pids(tmp_path, 2))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is given back


@pytest.mark.timing
def test_without_stop_on_interrupt_the_interrupt_propagates_and_no_rank_is_left(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        rank_launcher.launch(_hang, 2, args=(str(tmp_path),), on_message=_interrupt_when_all_ready(tmp_path, 2, []), **FAST)
    assert all(_gone(pid) for pid in _pids(tmp_path, 2))


INTERRUPTED_WHILE_STARTING = """
import os, signal, sys, threading, time
from pathlib import Path
from labkit import interrupts, rank_launcher
from tests.slow_rank import answer
starting = Path(sys.argv[1])
os.environ["LABKIT_TEST_RANK_STARTING"] = str(starting)  # for the rank only: imported here already

def interrupt_when_the_rank_starts():
    while not starting.exists():
        time.sleep(0.01)
    os.killpg(os.getpgrp(), signal.SIGINT)  # as Kernel -> Interrupt: the whole process group

threading.Thread(target=interrupt_when_the_rank_starts, daemon=True).start()
with interrupts.graceful() as stop:  # the scaling study's way: the launch in progress finishes
    outcome = rank_launcher.launch(answer, 1, start="spawn", timeout=120)
print(stop.requested, outcome.results)
"""


@pytest.mark.timing
def test_an_interrupt_while_a_rank_starts_leaves_the_rank_to_finish(tmp_path):
    # A rank killed by the interrupt before it could ignore it failed the scaling study (RanksFailed:
    # "rank 0 exited with status 1") instead of letting its configuration finish.
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_WHILE_STARTING, str(tmp_path / "starting")], env=env, cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, start_new_session=True)
    assert (tmp_path / "starting").exists(), done.stdout
    assert done.returncode == 0 and done.stdout.strip().endswith("True {0: 42}"), done.stdout[-3000:]
