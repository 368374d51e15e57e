"""labkit.files: an atomic write leaves the old file or the new one, never half, and no litter."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from labkit.files import FILE_MODE, produce_atomic, replace_atomic, write_atomic


def test_write_atomic_writes_text_as_utf8_with_line_endings_untouched(tmp_path: Path) -> None:
    target = tmp_path / "gradebook.csv"
    write_atomic(target, "student,total\r\nAnaïs,3\r\n")
    assert target.read_bytes() == "student,total\r\nAnaïs,3\r\n".encode("utf-8")
    assert stat.S_IMODE(target.stat().st_mode) == FILE_MODE
    assert os.listdir(tmp_path) == ["gradebook.csv"]


def test_write_atomic_replaces_bytes_and_creates_the_folder(tmp_path: Path) -> None:
    target = tmp_path / "new" / "row.json"
    write_atomic(str(target), b"old")
    write_atomic(str(target), b"new")
    assert target.read_bytes() == b"new"
    assert os.listdir(target.parent) == ["row.json"]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path, error: BaseException) -> None:
    target = tmp_path / "summary.md"
    target.write_text("old summary\n")

    def half_then_fail(temporary: str) -> None:
        with open(temporary, "w") as f:
            f.write("half of the new summ")
        raise error

    with pytest.raises(type(error)):
        produce_atomic(target, half_then_fail)
    assert target.read_text() == "old summary\n"
    assert os.listdir(tmp_path) == ["summary.md"]


def test_a_reader_never_sees_a_half_written_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    versions = [(str(i) * 200_000).encode() for i in range(10)]
    write_atomic(target, versions[0])
    seen = set()
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            seen.add(target.read_bytes())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(5):
            for version in versions:
                write_atomic(target, version)
    finally:
        done.set()
        reader.join()
    assert seen and seen <= set(versions)
    assert os.listdir(tmp_path) == ["state.json"]


def test_produce_atomic_keeps_the_extension_for_code_that_picks_a_format_by_it(tmp_path: Path) -> None:
    given = []

    def savefig(temporary: str) -> None:
        given.append(temporary)
        Path(temporary).write_bytes(b"\x89PNG")

    produce_atomic(tmp_path / "plot_loss_vs_epochs.png", savefig)
    assert given[0].endswith("plot_loss_vs_epochs.png") and os.path.dirname(given[0]) == str(tmp_path)
    assert os.listdir(tmp_path) == ["plot_loss_vs_epochs.png"]


def test_produce_atomic_builds_a_folder_whole_or_not_at_all(tmp_path: Path) -> None:
    def build(temporary: str) -> None:
        os.makedirs(temporary)
        Path(temporary, "config.json").write_text("{}")

    produce_atomic(tmp_path / "model", build)
    assert sorted(os.listdir(tmp_path / "model")) == ["config.json"]

    def build_and_fail(temporary: str) -> None:
        build(temporary)
        raise RuntimeError("training failed")

    with pytest.raises(RuntimeError):
        produce_atomic(tmp_path / "other-model", build_and_fail)
    assert os.listdir(tmp_path) == ["model"]


def test_replace_atomic_moves_a_finished_file_over_the_target(tmp_path: Path) -> None:
    (tmp_path / "run.ipynb").write_text("old")
    (tmp_path / "run.running.ipynb").write_text("executed")
    replace_atomic(tmp_path / "run.running.ipynb", tmp_path / "run.ipynb")
    assert (tmp_path / "run.ipynb").read_text() == "executed"
    assert os.listdir(tmp_path) == ["run.ipynb"]


def test_exclusive_refuses_a_second_writer_in_another_process_and_frees_the_path_when_the_first_dies(
        tmp_path: Path) -> None:
    import subprocess
    import sys

    from labkit.files import Busy, exclusive

    target = tmp_path / "run.ipynb"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom labkit.files import exclusive\n"
         "with exclusive(sys.argv[1], 'labkit run'):\n    print('held', flush=True)\n    time.sleep(60)\n",
         str(target)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(Busy, match=r"another `labkit run` is writing .*run\.ipynb"):
            with exclusive(target, "labkit run"):
                pass
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    with exclusive(target, "labkit run"):  # the dead holder's lock went with it
        pass


def test_exclusive_does_not_follow_a_planted_link_as_its_lock_file(tmp_path: Path) -> None:
    from labkit.files import exclusive

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / ".run.ipynb.lock").symlink_to(victim)
    with pytest.raises(OSError):
        with exclusive(tmp_path / "run.ipynb", "labkit run"):
            pass
    assert victim.read_text() == "keep me\n"


def test_regular_file_refuses_a_fifo_a_folder_and_a_device_without_opening_them(tmp_path: Path) -> None:
    from labkit.files import NotAFile, regular_file

    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)  # opening it for reading would block: the check must only stat it
    for path, kind in ((fifo, "a FIFO"), (tmp_path, "a folder"), (Path("/dev/null"), "a character device")):
        with pytest.raises(NotAFile, match=r"log_path {}: is {}".format(path, kind)):
            regular_file(path, "log_path")
    with pytest.raises(FileNotFoundError, match="log_path .*missing.log: no such file"):
        regular_file(tmp_path / "missing.log", "log_path")
    log = tmp_path / "run.log"
    log.write_text("ok\n")
    (tmp_path / "link.log").symlink_to(log)
    assert regular_file(tmp_path / "link.log", "log_path") == tmp_path / "link.log"


def test_a_write_that_fills_a_real_disk_leaves_the_old_file_whole_and_no_temporary(tmp_path: Path) -> None:
    import errno

    from tests.faults import fill, small_disk

    with small_disk(tmp_path / "disk", kib=256) as disk:
        target = disk / "gradebook.csv"
        write_atomic(target, "student,total\nada,3\n")
        fill(disk, leave=8192)
        with pytest.raises(OSError) as raised:
            write_atomic(target, "student,total\n" + "bo,2\n" * 100_000)
        assert raised.value.errno == errno.ENOSPC
        assert target.read_text() == "student,total\nada,3\n"
        assert sorted(os.listdir(disk)) == [".filler", "gradebook.csv"]
