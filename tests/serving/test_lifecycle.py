"""The local server ends with its parent however the parent ends, and fails to start clearly.
(Stopping by ``stop()``, KeyboardInterrupt and SIGINT: the last tests of test_server.py, on its
servers, to start fewer.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from labkit import serving
from tests.serving.processes import gone, listening

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timing
def test_killing_the_parent_leaves_nothing_listening():
    parent = textwrap.dedent("""
        import sys, time
        sys.path.insert(0, {root!r})
        from labkit import serving
        server = serving.start_server(config="batched")
        print(server.pid, server.port, flush=True)
        time.sleep(120)
    """).format(root=str(ROOT))
    process = subprocess.Popen([sys.executable, "-c", parent], stdout=subprocess.PIPE, text=True)
    try:
        pid, port = (int(x) for x in process.stdout.readline().split())
        assert listening(port) and psutil.pid_exists(pid)
        process.kill()  # no atexit, no finally: only the lifeline pipe and the pid watch are left
        process.wait(10)
        assert gone(pid, port), "the server outlived its parent"
    finally:
        if process.poll() is None:
            process.kill()
        process.stdout.close()
        process.wait()


def test_bad_arguments_are_refused_before_a_process_starts():
    for kwargs, message in (({"config": "fast"}, "config='fast'"), ({"model_size": "huge"}, "model_size='huge'"),
                            ({"model_dir": str(ROOT / "no-such-model")}, "model_dir=.*no config.json"),
                            ({"max_queue": -1}, "max_queue=-1"), ({"threads": 0}, "threads=0")):
        with pytest.raises(ValueError, match=message):
            serving.start_server(**kwargs)


@pytest.mark.timing
def test_a_server_not_ready_in_time_is_killed_and_said_so():
    with pytest.raises(serving.ServerStartError, match="did not start within 0 s") as caught:
        serving.start_server(startup_timeout=0.3)
    log = Path(str(caught.value).split("its log, ", 1)[1].split(":\n", 1)[0])
    assert log.is_file()  # kept for the student to read; this test's own is removed
    log.unlink()
