"""`labkit run` when the disk, the files or a second run get in the way: each fault made for real.

OUTPUT is written whole or not at all, by one `labkit run` at a time, never over NOTEBOOK; what cannot
be run is refused in one sentence (exit 2) before anything runs; Ctrl-C before the kernel is up is one
line (exit 130).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import nbformat
import pytest

from labkit import results
from tests.execute.test_run_ctrl_c import Terminal
from tests.faults import fill, read_only, small_disk

ROOT = Path(__file__).resolve().parents[2]

#: a cell that fills the file system under ``fill_here`` (a parameter) while the notebook runs
FILL = '''\
import errno, os
if fill_here:
    with open(os.path.join(fill_here, "filler"), "wb") as f:
        try:
            while True:
                f.write(b"\\0" * 4096)
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    print("the disk is full", flush=True)
'''
RECORD = "from labkit.results import Run, record\nrecord(Run('tests/faults', metrics={'x': seed}))"
#: a cell that waits until the file ``wait_for`` exists (a parameter), saying so once
WAIT = '''\
import os, time
if wait_for:
    print("waiting", flush=True)
    while not os.path.exists(wait_for):
        time.sleep(0.05)
'''
#: a cell that leaves a file beside the notebook: it ran
MARK = "open('the-kernel-ran', 'w').close()"


def _notebook(folder: Path, *sources: str, name: str = "nb.ipynb") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.v4.new_notebook()
    parameters = nbformat.v4.new_code_cell('fill_here = ""\nwait_for = ""\nseed = 0')
    parameters.metadata["tags"] = ["parameters"]
    nb.cells = [parameters] + [nbformat.v4.new_code_cell(source) for source in sources]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = folder / name
    nbformat.write(nb, str(path))
    return path


def labkit_run(*args: str, cwd: Path, timeout: float = 120, **env_extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "labkit", "run", *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=timeout)


def _one_sentence(done: subprocess.CompletedProcess, code: int) -> str:
    """stderr, once it is sure to be one `labkit run: ...` line and the exit status ``code``."""
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("labkit run: "), done.stderr
    return lines[0]


def _leftovers(folder: Path) -> List[str]:
    """The temporaries a run left in ``folder`` (none, whatever happened)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


# -- a full disk ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("earlier", [True, False], ids=["a finished run at OUTPUT", "no OUTPUT yet"])
def test_a_disk_that_fills_during_a_run_keeps_the_finished_output_and_says_so(tmp_path, earlier):
    nb = _notebook(tmp_path / "exercise", FILL, RECORD)
    with small_disk(tmp_path / "disk", kib=400) as disk:
        out = disk / "out.ipynb"
        if earlier:
            done = labkit_run(str(nb), str(out), "-p", "seed", "7", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            finished = out.read_bytes()
        done = labkit_run(str(nb), str(out), "-p", "fill_here", str(disk), "-p", "seed", "8", cwd=tmp_path)

        line = _one_sentence(done, 1)
        assert "with the error, is" not in line  # never a file that was not written
        assert "the executed notebook could not be written (No space left on device): " in line, line
        if earlier:
            assert line.endswith("{} is as it was before this run".format(out)), line
            assert out.read_bytes() == finished
            assert [r.metrics["x"] for r in results.read(out).runs] == [7]
        else:
            assert line.endswith("nothing was written at {}".format(out)), line
            assert not out.exists()
        assert _leftovers(disk) == []


def test_run_notebook_says_why_the_output_was_not_written(tmp_path):
    from labkit.execute import run_notebook

    nb = _notebook(tmp_path / "exercise", RECORD)
    with small_disk(tmp_path / "disk", kib=200) as disk:
        out = disk / "out.ipynb"
        out.write_text("an earlier run")
        fill(disk)
        outcome = run_notebook(str(nb), str(out))
        assert outcome.write_error == "No space left on device", outcome
        assert out.read_text() == "an earlier run" and _leftovers(disk) == []


# -- one writer ------------------------------------------------------------------------------------------

def test_a_second_run_with_the_same_output_is_refused_while_the_first_writes_it(tmp_path):
    nb = _notebook(tmp_path, WAIT, RECORD)
    out = tmp_path / "out.ipynb"
    go = tmp_path / "go"
    first = Terminal(str(nb), str(out), "-p", "wait_for", str(go), "-p", "seed", "1", cwd=tmp_path)
    try:
        first.wait_for("waiting")  # its kernel runs: it holds OUTPUT
        second = labkit_run(str(nb), "./" + out.name, "-p", "seed", "2", cwd=tmp_path)
        line = _one_sentence(second, 2)
        assert "another `labkit run` is writing {}".format(out) in line, line
    finally:
        go.touch()
    code, _, stderr = first.finish()
    assert code == 0, stderr
    assert [r.metrics["x"] for r in results.read(out).runs] == [1]


@pytest.mark.parametrize("spelling", ["same", "symlink", "another spelling"])
def test_output_equal_to_the_notebook_is_refused_before_anything_runs(tmp_path, spelling):
    nb = _notebook(tmp_path / "exercise", MARK, RECORD)
    source = nb.read_bytes()
    output = {"same": str(nb), "another spelling": "./exercise/../exercise/nb.ipynb"}.get(spelling)
    if spelling == "symlink":
        (tmp_path / "link.ipynb").symlink_to(nb)
        output = "link.ipynb"
    done = labkit_run(str(nb), output, cwd=tmp_path)
    line = _one_sentence(done, 2)
    assert "OUTPUT {}: is the notebook".format(output) in line and "itself" in line, line
    assert nb.read_bytes() == source and not (nb.parent / "the-kernel-ran").exists()
    assert (tmp_path / "link.ipynb").is_symlink() if spelling == "symlink" else True


def test_output_through_a_link_replaces_the_file_the_link_names(tmp_path):
    nb = _notebook(tmp_path / "exercise", RECORD)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "latest.ipynb").write_text("an earlier run")
    (tmp_path / "latest.ipynb").symlink_to(tmp_path / "runs" / "latest.ipynb")
    done = labkit_run(str(nb), "latest.ipynb", "-p", "seed", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "latest.ipynb").is_symlink()
    assert [r.metrics["x"] for r in results.read(tmp_path / "runs" / "latest.ipynb").runs] == [3]


# -- refused in one sentence ----------------------------------------------------------------------------

def _bad_notebook(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / "bad.ipynb"
    if kind == "a folder":
        path.mkdir()
    elif kind == "a FIFO":
        os.mkfifo(str(path))  # a read would block for ever: it must never be opened
    elif kind == "a device":
        return Path("/dev/zero")  # a read never ends
    elif kind == "not JSON":
        path.write_text("{ not json")
    elif kind == "a JSON list":
        path.write_text("[1, 2]")
    elif kind == "cells not a list":
        path.write_text(json.dumps({"cells": {"a": 1}, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    return path


@pytest.mark.parametrize("kind, says", [
    ("a folder", "is a folder, not a regular file"), ("a FIFO", "is a FIFO (named pipe), not a regular file"),
    ("a device", "is a character device, not a regular file"), ("not JSON", "is not a notebook (not JSON"),
    ("a JSON list", "is not a notebook (its JSON is a list, not an object with cells)"),
    ("cells not a list", "is not a notebook (its cells are an object, not a list of cells)")])
def test_a_notebook_that_cannot_run_is_refused_in_one_sentence(tmp_path, kind, says):
    notebook = _bad_notebook(tmp_path, kind)
    done = labkit_run(str(notebook), "out.ipynb", cwd=tmp_path, timeout=60)  # a FIFO opened: the timeout fails it
    line = _one_sentence(done, 2)
    assert line.startswith("labkit run: notebook {}: {}".format(notebook, says)), line
    assert not (tmp_path / "out.ipynb").exists() and _leftovers(tmp_path) == []


@pytest.mark.parametrize("kind", ["a folder", "a FIFO"])
def test_an_output_that_is_not_a_file_is_refused_in_one_sentence(tmp_path, kind):
    nb = _notebook(tmp_path / "exercise", MARK)
    output = _bad_notebook(tmp_path, kind)
    line = _one_sentence(labkit_run(str(nb), str(output), cwd=tmp_path, timeout=60), 2)
    assert line.startswith("labkit run: OUTPUT {}: is {}".format(output, kind)), line
    assert not (nb.parent / "the-kernel-ran").exists()


@pytest.mark.parametrize("existing", [True, False], ids=["an earlier OUTPUT", "no OUTPUT"])
def test_a_read_only_output_folder_is_refused_in_one_sentence(tmp_path, existing):
    nb = _notebook(tmp_path / "exercise", MARK)
    folder = tmp_path / "out"
    folder.mkdir()
    if existing:
        (folder / "out.ipynb").write_text("an earlier run")
        (folder / ".out.ipynb.lock").touch()  # left by that run
    with read_only(folder):
        line = _one_sentence(labkit_run(str(nb), str(folder / "out.ipynb"), cwd=tmp_path), 2)
        assert line == "labkit run: OUTPUT {}: cannot be written in {} (Read-only file system)".format(
            folder / "out.ipynb", folder), line
    assert not (nb.parent / "the-kernel-ran").exists()
    assert (folder / "out.ipynb").read_text() == "an earlier run" if existing else not (folder / "out.ipynb").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-5"])
def test_a_timeout_that_is_not_a_finite_positive_number_is_refused(tmp_path, value):
    nb = _notebook(tmp_path, MARK)
    line = _one_sentence(labkit_run(str(nb), "out.ipynb", "--timeout", value, cwd=tmp_path), 2)
    assert line.startswith("labkit run: --timeout ") and "must be a finite number of seconds above 0" in line, line
    assert not (tmp_path / "out.ipynb").exists() and not (tmp_path / "the-kernel-ran").exists()


def test_run_notebook_refuses_a_timeout_that_is_not_a_finite_positive_number(tmp_path):
    from labkit.execute import run_notebook

    nb = _notebook(tmp_path, MARK)
    for value in (float("nan"), float("inf"), 0, -5):
        with pytest.raises(ValueError, match="must be a finite number of seconds above 0"):
            run_notebook(str(nb), str(tmp_path / "out.ipynb"), timeout=value)
    assert not (tmp_path / "out.ipynb").exists() and not (tmp_path / "the-kernel-ran").exists()


# -- Ctrl-C before the kernel is up ----------------------------------------------------------------------

#: a kernel whose start takes 5 s (a slow node's import of torch, a container starting): every moment
#: of labkit run's first 1.5 s comes before the kernel is up, however busy the machine
SLOW_KERNEL = "import os, sys, time\ntime.sleep(5)\nos.execv(sys.executable, [sys.executable, '-m', " \
              "'ipykernel_launcher'] + sys.argv[1:])"


def _handles_sigint(pid: int) -> bool:
    """Whether the process has its own SIGINT handler yet (Python sets it up as it starts)."""
    try:
        with open("/proc/{}/status".format(pid)) as f:
            caught = next(line for line in f if line.startswith("SigCgt:"))
    except (FileNotFoundError, StopIteration):
        return False
    return bool(int(caught.split()[1], 16) & (1 << (signal.SIGINT - 1)))


@pytest.mark.timing
@pytest.mark.parametrize("after", [0.2, 0.6, 1.0, 1.5])
def test_ctrl_c_before_the_kernel_is_up_is_one_line_and_no_half_output(tmp_path, after):
    if not sys.platform.startswith("linux"):
        pytest.skip("the moment Python handles SIGINT is read from /proc")
    spec = tmp_path / "jupyter" / "kernels" / "slow"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-c", SLOW_KERNEL, "-f", "{connection_file}"],
        "display_name": "slow to start", "language": "python"}))
    nb = _notebook(tmp_path / "exercise", MARK, RECORD)
    out = tmp_path / "out.ipynb"
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_PATH=str(tmp_path / "jupyter"))
    process = subprocess.Popen([sys.executable, "-m", "labkit", "run", str(nb), str(out), "--kernel", "slow"],
                               cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not _handles_sigint(process.pid):  # before that, SIGINT kills any process: not labkit's to say
            assert time.monotonic() < deadline and process.poll() is None, "Python never started"
            time.sleep(0.005)
        time.sleep(after)
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout.decode(), stderr.decode())
    line = _one_sentence(done, 130)
    assert "interrupted" in line, line
    assert not (nb.parent / "the-kernel-ran").exists()
    if out.exists():  # Ctrl-C came as the kernel started: the notebook says where it stopped, whole
        assert results.read(out).runs == [] and "The executed notebook is" in line, line
    else:
        assert "nothing was written at {}".format(out) in line or "nothing was done" in line, line
    assert _leftovers(tmp_path) == []


def test_a_ctrl_c_that_ends_an_exec_of_a_string_as_labkit_starts_still_exits_130(tmp_path):
    """The Ctrl-C above, landed where it sets CPython's flag that turns `python -m`'s exit into a death
    by SIGINT: inside an ``exec`` of a string while the commands import (scipy builds its
    distributions that way). labkit answers it in one line, so the exit status must be its own."""
    (tmp_path / "sitecustomize.py").write_text(
        "import labkit.cli\n"
        "def build_parser():\n"
        "    exec('raise KeyboardInterrupt')  # where SIGINT lands when it comes during scipy's import\n"
        "labkit.cli.build_parser = build_parser\n")
    nb = _notebook(tmp_path / "exercise", MARK)
    done = labkit_run(str(nb), str(tmp_path / "out.ipynb"), cwd=tmp_path,
                      PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    assert "interrupted before it started; nothing was done" in _one_sentence(done, 130)
    assert not (nb.parent / "the-kernel-ran").exists()
