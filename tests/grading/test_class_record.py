"""`labkit grade` and `labkit class` keep a class's record: a late batch adds to the class, a grader error
is graded again, and bad folders, files and numbers are refused in one sentence before anything runs.

Each fault is made for real: FIFOs, sockets, links, a read-only bind mount, a rubric taken away while a
batch runs (tests/faults.py)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from labkit.cli import main as labkit_main
from labkit.grading.batch import find_submissions, grade_class
from labkit.grading.checks.rubric import RubricError, load_rubric
from labkit.grading.reports.gradebook import RESERVED, read_gradebook
from labkit.grading.sandbox import levels
from tests.faults import read_only
from tests.grading import notebooks as N
from tests.grading.test_hostile import RUBRIC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAST = levels.Limits(notebook_s=40, cell_s=20, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20)


def state(out) -> dict:
    with open(os.path.join(str(out), ".labkit-grade", "state.json")) as f:
        return json.load(f)["results"]


def run_labkit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``labkit ARGS`` in its own process: a FIFO opened by mistake fails the test instead of hanging it."""
    return subprocess.run([sys.executable, "-m", "labkit"] + list(args), cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, PYTHONPATH=ROOT))


def one_sentence(proc: subprocess.CompletedProcess, command: str = "grade") -> str:
    """The one line a refused command prints; no traceback."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("labkit {}: ".format(command))]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def folder_of_files(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# -- a class's record: a late batch, a grader error -----------------------------------------------------

def test_a_late_batch_keeps_the_class_and_a_grader_error_is_graded_again(tmp_path):
    subs, late, out = tmp_path / "subs", tmp_path / "late", tmp_path / "grades"
    for folder, names in ((subs, ("alice", "bob")), (late, ("carol",))):
        folder.mkdir()
        for name in names:
            N.write(N.homework(), folder / (name + ".ipynb"))
    rubric = tmp_path / "toy.rubric.yml"
    shutil.copy(RUBRIC, str(rubric))
    aside = tmp_path / "aside.yml"

    def take_the_rubric_away_after_alice(result):  # bob's worker then finds no rubric: a grader error
        if result["student"] == "alice":
            rubric.rename(aside)
        else:
            aside.rename(rubric)

    grade_class(str(subs), str(rubric), str(out), workers=1, limits=FAST, lms="canvas",
                progress=take_the_rubric_away_after_alice)
    first = state(out)
    assert first["alice"]["status"] == "ok" and first["bob"]["status"] == "grader error", first["bob"]

    told = []
    results = grade_class(str(late), str(rubric), str(out), workers=1, limits=FAST, lms="canvas", tell=told.append)
    assert list(results) == ["carol"]
    kept = state(out)
    assert sorted(kept) == ["alice", "bob", "carol"] and kept["alice"] == first["alice"]
    assert [row["student"] for row in read_gradebook(str(out / "gradebook.csv"))] == ["alice", "bob", "carol"]
    assert [line.split(",")[0] for line in (out / "canvas.csv").read_text().splitlines()[2:]] == \
        ["alice", "bob", "carol"]
    assert "(3 students)" in (out / "summary.md").read_text()
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["alice.html", "bob.html", "carol.html"]
    page = (out / "class.html").read_text()
    assert "<p>3 students, " in page and "alice" in page and "carol" in page  # bob has no points to plot yet
    assert any("kept 2 students" in line and "alice, bob" in line for line in told), told
    assert not any("another rubric" in line for line in told), told

    seen = []
    grade_class(str(subs), str(rubric), str(out), workers=1, limits=FAST, lms="canvas",
                progress=lambda r: seen.append(r["student"]))
    assert seen == ["bob"]  # a grader error is no grade; alice's finished grade is kept
    again = state(out)
    assert again["bob"]["status"] == "ok" and again["alice"] == first["alice"] and "carol" in again
    assert [row["status"] for row in read_gradebook(str(out / "gradebook.csv"))] == ["ok", "ok", "ok"]

    with rubric.open("a") as f:  # a changed rubric: carol, kept, was graded with the one before
        f.write("  - name: added\n    type: no_error\n    points: 1\n")
    told = []
    grade_class(str(subs), str(rubric), str(out), workers=1, limits=FAST, tell=told.append)
    assert any("1 of them was graded with another rubric" in line and "carol" in line for line in told), told


# -- what SUBMISSIONS holds that is no notebook ------------------------------------------------------------

def test_links_fifos_sockets_and_dot_names_in_submissions_each_get_a_row_or_the_rule(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    N.write(N.homework(), elsewhere / "real.ipynb")
    (subs / "linked.ipynb").symlink_to(elsewhere / "real.ipynb")
    (subs / "dangling.ipynb").symlink_to(tmp_path / "nowhere.ipynb")
    (subs / "folderlink").symlink_to(elsewhere)
    os.mkfifo(str(subs / "piped.ipynb"))
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(subs / "sock.ipynb"))
    (subs / "inside").mkdir()
    os.mkfifo(str(subs / "inside" / "hw.ipynb"))
    N.write(N.homework(), subs / ".hidden.ipynb")
    (subs / ".ipynb_checkpoints").mkdir()
    (subs / "README.md").write_text("the class of 2026\n")
    try:
        found = {s.student: s for s in find_submissions(str(subs))}
        assert sorted(found) == ["dangling", "folderlink", "inside", "linked", "piped", "sock"]
        assert all(s.problem and not s.notebook for s in found.values())
        assert "symbolic link" in found["linked"].problem and "symbolic link" in found["folderlink"].problem
        assert "FIFO" in found["piped"].problem and "FIFO" in found["inside"].problem
        assert "socket" in found["sock"].problem

        proc = run_labkit("grade", str(subs), "--rubric", RUBRIC, "--out", str(tmp_path / "out"), "--timeout", "40",
                     "--allow-unconfined", timeout=240)  # a FIFO opened would block: the timeout fails the test
        assert proc.returncode == 0, proc.stderr
        rows = {row["student"]: row for row in read_gradebook(str(tmp_path / "out" / "gradebook.csv"))}
        assert sorted(rows) == sorted(found)
        assert all(row["status"] == "unreadable" and row["total"] == "0" for row in rows.values())
        assert "never followed" in rows["linked"]["reason"] and "not opened" in rows["piped"]["reason"]
        rules = [line for line in proc.stderr.splitlines() if "names that start with '.'" in line]
        assert len(rules) == 1 and ".hidden.ipynb" in rules[0] and ".ipynb_checkpoints" in rules[0]
        assert any("README.md" in line for line in proc.stderr.splitlines())
    finally:
        listener.close()


# -- folders: --out inside SUBMISSIONS, a file, read-only ----------------------------------------------------

@pytest.mark.parametrize("layout", ["out inside", "submissions inside", "same", "out inside through a link"])
def test_an_out_folder_that_shares_the_submissions_is_refused(tmp_path, capsys, layout):
    subs = tmp_path / "subs"
    subs.mkdir()
    N.write(N.homework(), subs / "alice.ipynb")
    if layout == "out inside":
        out, submissions = subs / "grades", subs
    elif layout == "submissions inside":
        out, submissions = tmp_path, subs
    elif layout == "same":
        out, submissions = subs, subs
    else:
        (tmp_path / "link").symlink_to(subs)
        out, submissions = tmp_path / "link" / "grades", subs
    before = folder_of_files(tmp_path)
    assert labkit_main(["grade", str(submissions), "--rubric", RUBRIC, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("labkit grade: --out ") and "SUBMISSIONS" in err, err
    assert folder_of_files(tmp_path) == before and not (subs / "grades").exists()


def test_an_out_that_is_a_file_or_read_only_is_refused_and_nothing_is_lost(tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    N.write(N.homework(), subs / "alice.ipynb")
    a_file = tmp_path / "grades.csv"
    a_file.write_text("student,total\nalice,9\n")
    assert labkit_main(["grade", str(subs), "--rubric", RUBRIC, "--out", str(a_file)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file, not a folder" in err and str(a_file) in err
    assert a_file.read_text() == "student,total\nalice,9\n"

    out = tmp_path / "ro"
    (out / ".labkit-grade").mkdir(parents=True)
    (out / ".labkit-grade" / "state.json").write_text(json.dumps({"version": 1, "results": {}}))
    before = folder_of_files(out)
    with read_only(out):
        assert labkit_main(["grade", str(subs), "--rubric", RUBRIC, "--out", str(out), "--allow-unconfined"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "cannot write there" in err and "nothing was graded" in err, err
        assert folder_of_files(out) == before


def test_a_state_labkit_cannot_read_is_refused_never_replaced(tmp_path, capsys):
    subs = tmp_path / "subs"
    subs.mkdir()
    N.write(N.homework(), subs / "alice.ipynb")
    out = tmp_path / "out"
    (out / ".labkit-grade").mkdir(parents=True)
    for text in ("{not json", "[1, 2]", json.dumps({"version": 1, "results": [1]})):
        (out / ".labkit-grade" / "state.json").write_text(text)
        assert labkit_main(["grade", str(subs), "--rubric", RUBRIC, "--out", str(out), "--allow-unconfined"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a grading state labkit can read" in err and "move it aside" in err
        assert (out / ".labkit-grade" / "state.json").read_text() == text


# -- rubric files and numbers ------------------------------------------------------------------------------------

def test_a_rubric_that_is_a_folder_or_a_fifo_is_refused_unopened(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    os.mkfifo(str(tmp_path / "rubric.yml"))
    for rubric, kind in ((tmp_path, "a folder"), (tmp_path / "rubric.yml", "a FIFO")):
        proc = run_labkit("grade", str(subs), "--rubric", str(rubric), "--out", str(tmp_path / "out"), timeout=60)
        assert proc.returncode == 2 and kind in one_sentence(proc) and str(rubric) in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("option, value", [(o, v) for o in ("--timeout", "--cell-timeout", "--memory", "--file-size",
                                                             "--disk") for v in ("nan", "inf", "0", "-5")] +
                         [("--workers", "0"), ("--workers", "-5"), ("--workers", "100000"), ("--processes", "0")])
def test_numbers_that_no_grading_could_use_are_refused_naming_the_option(tmp_path, capsys, option, value):
    subs = tmp_path / "subs"
    subs.mkdir()
    with pytest.raises(SystemExit) as stopped:
        labkit_main(["grade", str(subs), "--rubric", RUBRIC, "--out", str(tmp_path / "out"), option, value])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "{}: must be".format(option) in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_grade_class_refuses_numbers_before_anything_runs(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for limits, workers, words in ((levels.Limits(notebook_s=float("nan")), 1, "limits.notebook_s"),
                                   (levels.Limits(cell_s=float("inf")), 1, "limits.cell_s"),
                                   (levels.Limits(memory_bytes=-1), 1, "limits.memory_bytes"),
                                   (FAST, 0, "workers"), (FAST, 2.5, "workers")):
        with pytest.raises(ValueError, match=words):
            grade_class(str(subs), RUBRIC, str(tmp_path / "out"), workers=workers, limits=limits)
    assert not (tmp_path / "out").exists()


CHECK = "title: t\n{top}checks:\n  - name: {name}\n    type: record\n    metric: score\n    points: {points}\n{more}"


def rubric_file(tmp_path, name="a", points="1", more="", top="") -> str:
    path = tmp_path / "r.yml"
    path.write_text(CHECK.format(name=name, points=points, more=more, top=top))
    return str(path)


@pytest.mark.parametrize("points, more, words", [
    (".nan", "", "field 'points' must be a finite number, not nan"),
    (".inf", "", "field 'points' must be a finite number, not inf"),
    ("-.inf", "", "field 'points' must be a finite number"),
    ("-1", "", "points must be >= 0"),
    ("1", "    min: .nan\n", "field 'min' must be a finite number"),
    ("1", "    max: .inf\n", "field 'max' must be a finite number"),
    ("1", "    min: 90\n    max: 10\n", "min (90) is above max (10)"),
    ("1", "    tolerance: -0.1\n", "field 'tolerance' must be >= 0"),
    ("1", "    partial: .nan\n", "field 'partial' must be a finite number"),
])
def test_rubric_numbers_are_finite_and_in_order(tmp_path, points, more, words):
    with pytest.raises(RubricError) as refused:
        load_rubric(rubric_file(tmp_path, points=points, more=more))
    assert words in str(refused.value) and "r.yml, line " in str(refused.value) and "check 'a'" in str(refused.value)


@pytest.mark.parametrize("name", sorted((set(RESERVED) | {"STUDENT", "Total", "section"})
                                        - {"SIS User ID", "SIS Login ID"}))
def test_a_check_may_not_take_a_column_the_gradebook_or_the_lms_file_writes(tmp_path, name):
    with pytest.raises(RubricError, match="check name '{}' is a column the gradebook".format(name)):
        load_rubric(rubric_file(tmp_path, name=name))


def test_the_reserved_names_are_the_columns_written(tmp_path):
    from labkit.grading.reports.gradebook import canvas_csv, write_gradebook

    write_gradebook(str(tmp_path / "g.csv"), [], [])
    written = (tmp_path / "g.csv").read_text().split("\n")[0].split(",")
    written += canvas_csv([], "HW", 1).split("\n")[0].split(",")[:-1]
    assert sorted(written) == sorted(RESERVED)


def test_a_template_that_is_no_notebook_is_refused_without_quoting_it(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("root:$6$SECRETHASH:19000:0:99999:7:::\n")
    partial_json = tmp_path / "partial.json"
    partial_json.write_text('{"password": "SECRETHASH", "cells": ')
    other_json = tmp_path / "other.json"
    other_json.write_text(json.dumps({"password": "SECRETHASH", "cells": "SECRETHASH"}))
    bad_notebook = tmp_path / "bad.ipynb"
    bad_notebook.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": "SECRETHASH",
                                        "cells": [{"cell_type": "SECRETHASH", "source": "SECRETHASH"}]}))
    (tmp_path / "folder.ipynb").mkdir()
    os.mkfifo(str(tmp_path / "fifo.ipynb"))
    cases = [(secret, "not JSON"), (partial_json, "not JSON"), (other_json, "a list of cells"),
             (bad_notebook, "nbformat can read"), (tmp_path / "folder.ipynb", "a folder"),
             (tmp_path / "fifo.ipynb", "a FIFO"), (tmp_path / "missing.ipynb", "not found")]
    if os.path.isfile("/etc/shadow") and os.access("/etc/shadow", os.R_OK):
        cases.append((Path("/etc/shadow"), "not JSON"))
    (tmp_path / "subs").mkdir()
    for template, words in cases:
        path = rubric_file(tmp_path, top="template: {}\n".format(template))
        proc = run_labkit("grade", str(tmp_path / "subs"), "--rubric", path, "--out", str(tmp_path / "out"),
                          timeout=60)
        sentence = one_sentence(proc)
        assert proc.returncode == 2 and words in sentence and "r.yml, line 2: template: " in sentence, sentence
        assert "SECRETHASH" not in proc.stderr + proc.stdout
        if template == Path("/etc/shadow"):
            lines = [line for line in Path("/etc/shadow").read_text().splitlines() if line.strip()]
            assert not any(line in proc.stderr for line in lines)
    assert not (tmp_path / "out").exists()


# -- labkit class on a folder it cannot read or write ------------------------------------------------------------

def test_labkit_class_refuses_a_corrupt_state_or_rubric_summary_and_a_read_only_folder(tmp_path):
    from tests.grading.class_fixtures import synthetic_class

    out = tmp_path / "out"
    synthetic_class(out, 6)
    assert run_labkit("class", str(out)).returncode == 0
    page = (out / "class.html").read_bytes()
    rubric_json = out / ".labkit-grade" / "rubric.json"
    state_json = out / ".labkit-grade" / "state.json"
    good_rubric, good_state = rubric_json.read_text(), state_json.read_text()
    for path, text, words in ((rubric_json, "{not json", "rubric.json is not the rubric's summary"),
                              (rubric_json, "[1, 2]", "rubric.json is not the rubric's summary"),
                              (state_json, "[1, 2]", "state.json is not a grading state"),
                              (state_json, json.dumps({"version": 1, "results": [1]}), "state.json is not a grading"),
                              (state_json, json.dumps({"version": 1, "results": {"s": {"student": "s", "checks": 3}}}),
                               "state.json is not a grading")):
        path.write_text(text)
        proc = run_labkit("class", str(out), timeout=60)
        assert proc.returncode == 2 and words in one_sentence(proc, "class"), proc.stderr
        assert (out / "class.html").read_bytes() == page
        rubric_json.write_text(good_rubric)
        state_json.write_text(good_state)
    state_json.unlink()
    os.mkfifo(str(state_json))
    proc = run_labkit("class", str(out), timeout=60)  # a FIFO opened would block: the timeout fails the test
    assert proc.returncode == 2 and "not a regular file" in one_sentence(proc, "class")
    state_json.unlink()
    state_json.write_text(good_state)

    (out / "page-folder").mkdir()
    proc = run_labkit("class", str(out), "--out", str(out / "page-folder"), timeout=60)
    assert proc.returncode == 2 and "--out" in one_sentence(proc, "class") and "is a folder" in proc.stderr
    with read_only(out):
        proc = run_labkit("class", str(out), "--csv", str(out / "class.csv"), timeout=120)
        sentence = one_sentence(proc, "class")
        assert proc.returncode == 2 and "cannot write" in sentence and "class.html" in sentence, sentence
        assert (out / "class.html").read_bytes() == page and not (out / "class.csv").exists()
