"""A log given as a FIFO, a device, a socket or a folder is refused by name, never opened: a read from a
FIFO waits for a writer for ever. Through ``labkit.logs.read`` and ``labkit logs parse`` as a real process.

    .venv/bin/python -m pytest tests/logs/test_special_files.py -q
"""

from __future__ import annotations

import subprocess
import sys
from typing import List

import pytest

import labkit.logs
from labkit.files import NotAFile
from tests.faults import bounded, fifo
from tests.logs.conftest import CASES

LOG = CASES / "keras-gpu-crlf.log"


def labkit_logs(*args: str) -> subprocess.CompletedProcess:
    """``python -m labkit logs ARGS``, killed whole if it outlives 120 s."""
    return bounded(sys.executable, "-m", "labkit", "logs", *args, limit_s=120)


def test_read_refuses_a_fifo_a_device_and_a_folder_unopened(tmp_path):
    with fifo(tmp_path / "run.log") as pipe:
        with pytest.raises(NotAFile, match=r"^log {}: is a FIFO \(named pipe\), not a regular file$".format(pipe)):
            labkit.logs.read(str(pipe))
        with pytest.raises(NotAFile, match="is a FIFO"):
            labkit.logs.read(pipe.path)  # an os.PathLike too
        assert pipe.readers == 0
    with pytest.raises(NotAFile, match="^log /dev/zero: is a character device, not a regular file$"):
        labkit.logs.read("/dev/zero")
    with pytest.raises(NotAFile, match="^log {}: is a folder, not a regular file$".format(tmp_path)):
        labkit.logs.read(tmp_path)


def test_logs_parse_refuses_a_fifo_in_one_sentence_with_exit_2(tmp_path):
    with fifo(tmp_path / "run.log") as pipe:
        done = labkit_logs("parse", str(pipe))
        assert pipe.readers == 0
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "labkit logs parse: log {}: is a FIFO (named pipe), not a regular file; no file was " \
                          "read\n".format(pipe)


def test_logs_parse_names_every_special_file_and_reads_none_of_the_others(tmp_path):
    """A FIFO, a device or a folder among the files refuses the command before any file is read, so a
    FIFO never keeps it waiting and the output never holds some files' reports but not others'."""
    with fifo(tmp_path / "run.log") as pipe:
        done = labkit_logs("parse", "--json", str(LOG), str(pipe), "/dev/null", str(tmp_path))
        assert pipe.readers == 0
    assert done.returncode == 2 and done.stdout == ""
    lines: List[str] = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("labkit logs parse: ")
    for words in ("log {}: is a FIFO (named pipe)".format(pipe), "log /dev/null: is a character device",
                  "log {}: is a folder".format(tmp_path), "no file was read"):
        assert words in lines[0]
    assert str(LOG) not in lines[0] and "Traceback" not in done.stderr


def test_a_missing_file_still_leaves_the_others_read(tmp_path):
    done = labkit_logs("parse", str(tmp_path / "missing.log"), str(LOG))
    assert done.returncode == 1
    assert "missing.log: no such log file" in done.stderr and "keras format, 1 run" in done.stdout


def test_a_link_to_a_log_is_read_and_a_link_to_a_fifo_is_refused(tmp_path):
    (tmp_path / "log.txt").symlink_to(LOG)
    assert labkit.logs.read(tmp_path / "log.txt").format == "keras"
    with fifo(tmp_path / "pipe") as pipe:
        (tmp_path / "pipe.log").symlink_to(pipe.path)
        with pytest.raises(NotAFile, match="pipe.log: is a FIFO"):
            labkit.logs.read(tmp_path / "pipe.log")
        assert pipe.readers == 0


def test_a_slurm_pointer_to_a_fifo_is_not_followed(tmp_path):
    (tmp_path / "slurm-43717.out").write_text("Using 112124.22/BertLarge.out for output\n")
    with fifo(tmp_path / "BertLarge.out") as pipe:
        report = labkit.logs.read(tmp_path / "slurm-43717.out")
        assert pipe.readers == 0
    assert report.runs == [] and report.pointers == ["112124.22/BertLarge.out"]

