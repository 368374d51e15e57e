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
