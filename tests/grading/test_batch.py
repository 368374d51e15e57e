"""The batch grader: killed and restarted, weaker isolation levels, the command line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels, slots
from labkit.grading.batch import find_submissions, grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.grading import notebooks as N
from tests.grading.test_hostile import RUBRIC, Listener

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = levels.Limits(notebook_s=30, cell_s=10, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20)


def labkit(*args: str, **kwargs) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen([sys.executable, "-m", "labkit", "grade"] + list(args), env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def state(out) -> dict:
    try:
        with open(os.path.join(str(out), ".labkit-grade", "state.json")) as f:
            return json.load(f)["results"]
    except (OSError, ValueError):
        return {}


def make_class_folders(subs, count: int) -> None:
    """Student folders, each with the notebook and a data file it reads."""
    for i in range(count):
        folder = subs / "student{:02d}".format(i)
        folder.mkdir(parents=True)
        (folder / "rate.txt").write_text("0.6")
        nb = N.homework(extra=[new_code_cell("import time\ntime.sleep(1.5)\nrate = float(open('rate.txt').read())\n"
                                             "labkit.results.record(toy.run(10, rate), name='from_file')")])
        N.write(nb, folder / "homework.ipynb")


@pytest.mark.timing
def test_killed_grader_resumes_without_losing_duplicating_or_regrading(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    make_class_folders(subs, 4)
    first = labkit(str(subs), "--rubric", RUBRIC, "--out", str(out), "--timeout", "30", "--memory", "1.5")
    deadline = time.monotonic() + 120
    while len(state(out)) < 2 and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)  # no clean-up at all: the worst case
    first.communicate()
    before = state(out)
    assert 2 <= len(before) < 4, before.keys()
    rows = read_gradebook(str(out / "gradebook.csv"))  # whole, never half-written
    # the state is saved first (a grade is never lost), then the gradebook: a kill between the two
    # leaves the gradebook one row behind until the next run rewrites it
    in_book = set(r["student"] for r in rows)
    assert in_book <= set(before) and len(before) - len(in_book) <= 1, (sorted(in_book), sorted(before))

    second = labkit(str(subs), "--rubric", RUBRIC, "--out", str(out), "--timeout", "30", "--memory", "1.5")
    stdout, stderr = second.communicate(timeout=180)
    assert second.returncode == 0, stderr
    after = state(out)
    assert sorted(after) == ["student{:02d}".format(i) for i in range(4)]
    for student, result in before.items():
        assert after[student] == result  # kept, not regraded
        assert student not in stdout.split("graded;")[0]
    rows = read_gradebook(str(out / "gradebook.csv"))
    assert [r["student"] for r in rows] == sorted(after)
    assert all(r["total"] == "9" and r["status"] == "ok" for r in rows), rows

    # change one submission: only it is graded again
    (subs / "student03" / "rate.txt").write_text("0.7")
    third = labkit(str(subs), "--rubric", RUBRIC, "--out", str(out), "--timeout", "30", "--memory", "1.5")
    stdout, _ = third.communicate(timeout=120)
    graded = [line.split()[0] for line in stdout.splitlines() if "/" in line and "gradebook" not in line]
    assert graded == ["student03"]
    assert state(out)["student00"] == after["student00"]


@pytest.mark.parametrize("level", ["unshare", "rlimits"])
def test_weaker_levels_still_contain_forks_and_report_themselves(tmp_path, level):
    if not levels.level_available(level):
        pytest.skip("isolation level {} does not work on this machine".format(level))
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    listener = Listener()
    N.write(N.homework(), subs / "honest.ipynb")
    N.write(N.homework(extra=[new_code_cell("import socket\nsocket.create_connection(('127.0.0.1', {}), timeout=3)".format(
        listener.port))]), subs / "network.ipynb")
    slot = slots.acquire_slot(level)
    slot.release()
    process_cap = slot.uid is not None or bool(slots.cgroup_parents())
    if process_cap:
        N.write(N.homework(extra=[new_code_cell(
            "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(300)\n        os._exit(0)")]),
            subs / "fork_bomb.ipynb")
    try:
        results = grade_class(str(subs), RUBRIC, str(out), workers=2, limits=FAST, level=level)
    finally:
        listener.close()
    assert results["honest"]["status"] == "ok" and results["honest"]["total"] == 9  # no --reproduce: 9 of 9
    assert all(r["isolation"].startswith(level) for r in results.values())
    if level == "unshare":
        assert listener.hits == 0 and results["network"]["status"] == "error"
    if process_cap:
        assert results["fork_bomb"]["status"] in ("error", "kernel died"), results["fork_bomb"]
    else:
        pytest.skip("no private uid and no cgroup here: a fork bomb could not be contained at level " + level)


def test_submission_layouts_and_problems(tmp_path):
    (tmp_path / "alice.ipynb").write_text("{}")
    (tmp_path / "bob").mkdir()
    N.write(N.homework(), tmp_path / "bob" / "hw.ipynb")
    (tmp_path / "carol").mkdir()
    (tmp_path / "dave").mkdir()
    N.write(N.homework(), tmp_path / "dave" / "a.ipynb")
    N.write(N.homework(), tmp_path / "dave" / "b.ipynb")
    found = {s.student: s for s in find_submissions(str(tmp_path))}
    assert sorted(found) == ["alice", "bob", "carol", "dave"]
    assert found["bob"].notebook.endswith("hw.ipynb") and found["bob"].source.endswith("bob")
    assert found["carol"].problem == "no notebook in the folder"
    assert "several notebooks (a.ipynb, b.ipynb)" in found["dave"].problem
    with pytest.raises(FileNotFoundError, match="SUBMISSIONS"):
        find_submissions(str(tmp_path / "nowhere"))


def test_command_line_errors_are_clear(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("checks:\n  - name: a\n    type: magic\n    points: 1\n")
    (tmp_path / "subs").mkdir()
    proc = labkit(str(tmp_path / "subs"), "--rubric", str(bad), "--out", str(tmp_path / "o"))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "line 3" in err and "unknown check type 'magic'" in err
    proc = labkit(str(tmp_path / "subs"), "--rubric", RUBRIC, "--out", str(tmp_path / "o"), "--workers", "0")
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "--workers: must be > 0" in err
