"""A submission's disk and links: a share per submission, the free space a batch needs, links and FIFOs
handed in (docs/grading.md, "A disk share per submission").

    .venv/bin/python -m pytest tests/grading/test_disk.py -q -p no:cacheprovider

The share is proved on a real small disk (tests/faults.py: a tmpfs) that holds the output folder and every
run folder: a hostile notebook writing far more than its share beside an honest one, both mounted (an ext4
image per run, as root) and watched (``LABKIT_DISK_MOUNT=off``, as a grader that is not root gets).
"""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from labkit.grading.runner import _copy_submission
from labkit.grading.sandbox import disk, levels
from tests.faults import small_disk
from tests.grading.conftest import level_id
from tests.grading import notebooks as N

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RUBRIC = os.path.join(HERE, "rubric_toy.yml")
MB = 1 << 20
SHARE = 8 * MB
LIMITS = levels.Limits(notebook_s=60, cell_s=30, memory_bytes=1536 * MB, nproc=64, fsize_bytes=16 * MB,
                       output_bytes=1 * MB, disk_bytes=SHARE)
HONEST = ("honest_a", "honest_b")


@pytest.fixture()
def short_folder():
    """A folder with a short path: the kernels' ZMQ ipc sockets live below it (107 bytes at most)."""
    folder = tempfile.mkdtemp(prefix="lkd", dir="/tmp")
    yield Path(folder)
    disk.remove_run_folder(folder)


def honest_notebooks(subs: Path) -> None:
    N.write(N.homework(), subs / "honest_a.ipynb")
    N.write(N.homework(runs=[{"steps": 10, "rate": 0.3}, {"steps": 10, "rate": 0.6}, {"steps": 10, "rate": 0.1}]),
            subs / "honest_b.ipynb")


def rows(out: Path) -> dict:
    return {r["student"]: r for r in read_gradebook(str(out / "gradebook.csv"))}


def scores(result: dict) -> dict:
    return {c["name"]: c["score"] for c in result["checks"]}


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The honest students graded without the hostile one: the grades they must keep beside it."""
    root = tmp_path_factory.mktemp("alone")
    (root / "subs").mkdir()
    honest_notebooks(root / "subs")
    return grade_class(str(root / "subs"), RUBRIC, str(root / "out"), workers=2, limits=LIMITS)


class LeastFree:
    """The least free space ``folder``'s file system had while the block ran (measured every 20 ms)."""

    def __init__(self, folder: Path):
        self.folder = str(folder)
        self.free = self._free()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _free(self) -> int:
        stats = os.statvfs(self.folder)
        return stats.f_bavail * stats.f_frsize

    def _watch(self) -> None:
        while not self._done.wait(0.02):
            self.free = min(self.free, self._free())

    def __enter__(self) -> "LeastFree":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


# A hostile notebook that writes 1 MB files until it is stopped (an error per full disk is caught and
# ignored): without a share it fills whatever disk holds the run folders.
FILL_FOREVER = ("import itertools\nfor i in itertools.count():\n    try:\n"
                "        with open('junk%d.bin' % i, 'wb') as f:\n            f.write(b'0' * (1 << 20))\n"
                "    except OSError:\n        pass")
# ... and one that writes three times its share at once, then waits: a watched share stops it after the fact.
THREE_SHARES = ("import time\nfor i in range(24):\n    with open('junk%d.bin' % i, 'wb') as f:\n"
                "        f.write(b'0' * (1 << 20))\nwhile True:\n    time.sleep(1)")


@pytest.mark.timing
@pytest.mark.parametrize("level", [level for level in levels.LEVELS if level != "none"], ids=level_id)
@pytest.mark.parametrize("how", ["mounted", "watched"])
def test_a_submission_over_its_share_fails_alone_and_the_grading_disk_keeps_room(how, level, alone, short_folder,
                                                                                  monkeypatch, request):
    if level == "bwrap":
        request.getfixturevalue("bubblewrap")
    if how == "watched":
        monkeypatch.setenv("LABKIT_DISK_MOUNT", "off")
    hostile = FILL_FOREVER if how == "mounted" else THREE_SHARES
    with small_disk(short_folder / "d", kib=96 * 1024) as place:
        subs, out, runs = place / "subs", place / "out", place / "t"
        subs.mkdir()
        runs.mkdir()
        honest_notebooks(subs)
        N.write(N.homework(extra=[new_code_cell(hostile)]), subs / "hostile.ipynb")
        monkeypatch.setattr(tempfile, "tempdir", str(runs))  # every run folder on the small disk too
        with LeastFree(place) as least:
            results = grade_class(str(subs), RUBRIC, str(out), workers=2, limits=LIMITS, level=level)
        gradebook = rows(out)
        with open(str(out / "feedback" / "hostile.html")) as f:
            feedback = f.read()
    assert results["hostile"]["status"] == "disk limit", results["hostile"]
    sentence = ("used more than 8.0 MB of disk in its run folder; the limit is 8.0 MB a submission "
                "(labkit grade --disk)")
    assert results["hostile"]["reason"] == sentence
    assert gradebook["hostile"]["status"] == "disk limit" and sentence in gradebook["hostile"]["reason"]
    assert "used more than 8.0 MB of disk in its run folder" in feedback
    assert scores(results["hostile"])["score_default"] == 2  # what it recorded before still counts
    for student in HONEST:  # exactly the grades they get without it
        assert results[student]["status"] == alone[student]["status"] == "ok", results[student]
        assert results[student]["total"] == alone[student]["total"] == 9.0
        assert scores(results[student]) == scores(alone[student])
    assert least.free > 40 * MB, least.free  # the 96 MB disk never filled: at most a share and its room each


def test_the_share_is_a_file_system_of_its_own_as_root(short_folder):
    if os.geteuid() != 0:
        pytest.skip("a mounted share needs root")
    share = disk.Share(str(short_folder / "share"), 4 * MB).open()
    try:
        assert share.mounted and share.used() < 64 * 1024
        with pytest.raises(OSError, match="No space left"):
            with open(str(short_folder / "share" / "big"), "wb") as f:
                for _ in range(32):
                    f.write(b"0" * MB)
        assert share.measure() and share.peak > 4 * MB
    finally:
        share.close()
    assert not share.mounted and os.listdir(str(short_folder / "share")) == []
    # the grading disk holds the image only while it is mounted
    assert not os.path.exists(share.image)


def test_a_killed_workers_shares_are_unmounted_with_its_folder(short_folder):
    if os.geteuid() != 0:
        pytest.skip("a mounted share needs root")
    runs = short_folder / "labkit-grade-1-x"
    share = disk.Share(str(runs / "r1" / "share"), 4 * MB).open()  # never closed: its worker was killed
    assert share.mounted
    disk.remove_run_folder(str(runs))
    assert not runs.exists()
    with open("/proc/self/mountinfo") as f:
        assert str(runs) not in f.read()


def test_a_batch_that_would_not_fit_is_refused_before_any_notebook_runs(short_folder):
    with small_disk(short_folder / "d", kib=4096) as place:
        subs, out = place / "subs", place / "out"
        subs.mkdir()
        honest_notebooks(subs)
        env = dict(os.environ, TMPDIR=str(place / "t"), PYTHONPATH=ROOT)
        (place / "t").mkdir()
        proc = subprocess.run([os.path.join(sys.prefix, "bin", "labkit"), "grade", str(subs), "--rubric", RUBRIC,
                               "--out", str(out), "--workers", "2", "--disk", "64"],
                              capture_output=True, text=True, env=env, timeout=300)
        written = sorted(os.listdir(str(place)))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("labkit grade: not enough free space to grade: {} (the run folders) and {} "
                               "(the output folder) has ".format(place / "t", out)), lines[0]
    assert " free and needs " in lines[0] and "2 workers x " in lines[0] and "--disk" in lines[0]
    assert written == ["subs", "t"]  # no output folder, no gradebook: nothing ran


def test_free_space_is_counted_per_file_system(tmp_path):
    with small_disk(tmp_path / "d", kib=2048) as place:
        # the run folders elsewhere (a big disk): the output folder needs only its margin, which 2 MB is not
        with pytest.raises(disk.NotEnoughSpace, match=r"^not enough free space to grade: {} \(the output folder\) "
                           r"has 2\.0 MB free and needs 16 MB".format(place / "out")):
            disk.check_space(str(place / "out"), 2, SHARE, 16 * MB, MB, runs=str(tmp_path))
        with pytest.raises(disk.NotEnoughSpace, match=r"{} \(the run folders\) has 2\.0 MB free and needs 44 MB \(2 "
                           r"workers x 22 MB each".format(place)):
            disk.check_space(str(tmp_path / "out"), 2, SHARE, 16 * MB, MB, runs=str(place))
    disk.check_space(str(tmp_path / "out"), 2, SHARE, 16 * MB, MB, runs=str(tmp_path))  # a real disk: room


def hand_in_with_links(folder: Path, outside: Path) -> Path:
    """A student folder with the homework, an internal link, and every link and special file that must change
    nothing: dangling, a loop, a large file and a folder outside, a FIFO, a device (as root)."""
    folder.mkdir(parents=True)
    N.write(N.homework(), folder / "homework.ipynb")
    (folder / "logs").mkdir()
    (folder / "logs" / "run1.log").write_text("step 1\n")
    os.symlink("run1.log", str(folder / "logs" / "latest.log"))
    os.symlink("missing.txt", str(folder / "dangling"))
    os.symlink("loop_b", str(folder / "loop_a"))
    os.symlink("loop_a", str(folder / "loop_b"))
    outside.mkdir()
    with open(str(outside / "big.bin"), "wb") as f:  # over the 50 MB a submission may be (sparse: no disk)
        f.truncate(200 * MB)
    os.symlink(str(outside / "big.bin"), str(folder / "big.bin"))
    os.symlink("../../outside/big.bin", str(folder / "logs" / "relative_out.bin"))
    os.symlink(str(outside), str(folder / "outside_folder"))
    os.mkfifo(str(folder / "logs" / "pipe"))
    if os.geteuid() == 0:  # /dev/zero's twin: a copy that opened it would never end
        os.mknod(str(folder / "logs" / "zero"), stat.S_IFCHR | 0o600, os.makedev(1, 5))
    return folder


def test_links_and_fifos_in_a_hand_in_are_neither_followed_nor_counted(tmp_path):
    source = hand_in_with_links(tmp_path / "subs" / "alice", tmp_path / "subs" / "outside")
    work = tmp_path / "work"
    work.mkdir()
    previous = signal.signal(signal.SIGALRM, signal.default_int_handler)
    signal.alarm(30)  # a FIFO opened would block for ever
    try:
        notebook = _copy_submission(str(source), str(source / "homework.ipynb"), str(work), 50 * MB, SHARE)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert notebook == str(work / "homework.ipynb") and os.path.isfile(notebook)
    # every link kept as that link (never read, never counted), the FIFO left out
    assert sorted(os.listdir(str(work))) == ["big.bin", "dangling", "homework.ipynb", "logs", "loop_a", "loop_b",
                                             "outside_folder"]
    assert sorted(os.listdir(str(work / "logs"))) == ["latest.log", "relative_out.bin", "run1.log"]
    links = {name: os.readlink(str(work / name)) for name in ("big.bin", "dangling", "loop_a", "loop_b",
                                                              "outside_folder", "logs/latest.log",
                                                              "logs/relative_out.bin")}
    assert links == {name: os.readlink(str(source / name)) for name in links}
    assert (work / "logs" / "latest.log").read_text() == "step 1\n"
    assert sum(f.stat().st_size for f in work.rglob("*") if f.is_file() and not f.is_symlink()) < MB


def test_a_hand_in_with_links_and_a_fifo_is_graded_as_without_them(tmp_path, alone):
    hand_in_with_links(tmp_path / "subs" / "honest_a", tmp_path / "outside")
    results = grade_class(str(tmp_path / "subs"), RUBRIC, str(tmp_path / "out"), limits=LIMITS)
    result = results["honest_a"]
    assert result["status"] == "ok" and "unreadable" not in result["reason"], result
    assert scores(result) == scores(alone["honest_a"]) and result["total"] == 9.0


@pytest.mark.parametrize("mount", ["", "off"])
def test_check_says_how_the_share_is_enforced_here(mount):
    env = dict(os.environ, LABKIT_DISK_MOUNT=mount)
    done = subprocess.run([os.path.join(sys.prefix, "bin", "labkit"), "grade", "--check"], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    line = [x for x in done.stdout.splitlines() if x.startswith("Every level: a disk share per run (--disk): ")]
    mounted = os.geteuid() == 0 and not mount and shutil.which("mkfs.ext4") is not None
    assert line and ("its own file system" if mounted else "a folder measured every 0.2 s") in line[0], done.stdout
