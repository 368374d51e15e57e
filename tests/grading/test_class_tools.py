"""What an instructor does next with a gradebook: regrade one student, export for Canvas, read the
class summary, and see evidence that two students both handed in (flagged, not penalised)."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from labkit.cli import main as labkit_main
from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.checks.duplicates import find_duplicates, gradebook_note, record_fingerprints
from labkit.grading.reports.gradebook import read_gradebook
from tests.grading import notebooks as N
from tests.grading.test_batch import labkit
from tests.grading.test_hostile import RUBRIC

FAST = levels.Limits(notebook_s=40, cell_s=20, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20)


def _state(out) -> dict:
    with open(os.path.join(str(out), ".labkit-grade", "state.json")) as f:
        return json.load(f)["results"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice and bruno hand in the same log; everyone has the handed-out data file; carla's answer is empty."""
    root = tmp_path_factory.mktemp("tools")
    handout = root / "handout"
    handout.mkdir()
    N.write(N.homework(answer=None), handout / "homework.ipynb")
    (handout / "rate.txt").write_text("0.6\n")
    rubric = handout / "toy.rubric.yml"
    rubric.write_text(Path(RUBRIC).read_text().replace("title: Toy homework", "title: Toy homework\ntemplate: homework.ipynb"))
    subs = root / "subs"
    shared_log = os.urandom(4096).hex()
    for name, answer, log in (("alice", N.GOOD_ANSWER, shared_log), ("bruno", N.GOOD_ANSWER, shared_log),
                              ("carla", None, os.urandom(4096).hex())):
        (subs / name / "logs").mkdir(parents=True)
        N.write(N.homework(answer=answer), subs / name / "homework.ipynb")
        shutil.copy(str(handout / "rate.txt"), str(subs / name / "rate.txt"))
        (subs / name / "logs" / "run.log").write_text(log)
    out = root / "out"
    seen = []
    results = grade_class(str(subs), str(rubric), str(out), workers=2, limits=FAST, lms="canvas",
                          assignment="Homework 3 (4242)", progress=lambda r: seen.append(r["student"]))
    return {"subs": subs, "out": out, "rubric": rubric, "results": results, "seen": seen}


def test_canvas_csv_has_one_assignment_column_and_a_row_per_login(graded):
    with open(str(graded["out"] / "canvas.csv"), newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 3 (4242)"]
    assert rows[1][0].strip() == "Points Possible" and rows[1][5] == "9"
    book = {r["student"]: r["total"] for r in read_gradebook(str(graded["out"] / "gradebook.csv"))}
    assert [(r[0], r[3], r[5]) for r in rows[2:]] == [(s, s, book[s]) for s in ("alice", "bruno", "carla")]
    assert book == {"alice": "9", "bruno": "9", "carla": "6"}


def test_class_summary_gives_distribution_and_commonest_failure(graded):
    text = (graded["out"] / "summary.md").read_text()
    assert text.startswith("# Toy homework (3 students)")
    line = next(row for row in text.splitlines() if row.startswith("| question_1 |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1:5] == ["3", "3", "2", "2 / 0 / 1"]
    assert cells[5] == "0: 1 3: 2"
    assert "still the template's text" in cells[6] and cells[6].endswith("(1)")
    reproduce = next(row for row in text.splitlines() if row.startswith("| reproduces |"))
    assert "not graded" in reproduce  # no --reproduce in this run


def test_duplicate_evidence_is_flagged_not_penalised(graded):
    rows = {r["student"]: r for r in read_gradebook(str(graded["out"] / "gradebook.csv"))}
    assert rows["alice"]["duplicate_evidence"] == "bruno: 1 log"
    assert rows["bruno"]["duplicate_evidence"] == "alice: 1 log"
    assert rows["carla"]["duplicate_evidence"] == ""  # the handed-out rate.txt is everyone's: not evidence
    assert rows["alice"]["total"] == rows["bruno"]["total"] == "9"
    html = (graded["out"] / "feedback" / "alice.html").read_text()
    assert "Handed in by another student too" in html and "log logs/run.log" in html
    assert "bruno" not in html  # a student is not told who else handed it in
    assert "Handed in by another" not in (graded["out"] / "feedback" / "carla.html").read_text()
    summary = (graded["out"] / "summary.md").read_text()
    assert "## Evidence handed in by more than one student (1)\n\n- log logs/run.log: alice, bruno\n" in summary


def test_the_class_page_is_written_and_labkit_class_draws_it_again(graded, tmp_path, capsys):
    page = (graded["out"] / "class.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "Toy homework: the class at a glance" in page
    # toy/converge is no homework exercise: no figure, but every check's dot plot and the shared log
    assert "No run of an exercise the page knows" in page
    for check in ("question_1", "score_default"):
        assert "id='check-{}'".format(check) in page
    assert "<title>carla: 0</title>" in page and "Commonest failure: " in page
    assert "log logs/run.log: alice, bruno" in page
    again = tmp_path / "again.html"
    assert labkit_main(["class", str(graded["out"]), "--out", str(again), "--csv", str(tmp_path / "long.csv")]) == 0
    assert again.read_text() == page  # nothing graded again, the same page
    assert (tmp_path / "long.csv").read_text().splitlines() == [
        "student,exercise,run,endpoint,parameter,parameter_value,metric,value,unit,where,kind,flags"]


def test_record_fingerprints_only_for_measured_timings():
    timed = {"exercise": "graphcore/mnist", "metrics": {"epoch_time": 3.2171}, "units": {"epoch_time": "s"},
             "series": {}, "params": {"lr": 0.03}}
    untimed = {"exercise": "toy/converge", "metrics": {"score": 97.2}, "units": {"score": "%"}, "series": {}}
    a = {"student": "a", "record_fingerprints": record_fingerprints({"run_1": timed, "run_2": untimed})}
    b = {"student": "b", "record_fingerprints": record_fingerprints({"mine": dict(timed), "x": untimed})}
    c = {"student": "c", "record_fingerprints": record_fingerprints({"mine": dict(timed, metrics={"epoch_time": 3.2})})}
    from_log = dict(timed, params={"lr": 0.03, "log": "logs/graphcore/x.log"})  # the log is the evidence
    assert list(a["record_fingerprints"].values()) == ["record run_1"]
    assert record_fingerprints({"r": from_log}) == {}
    assert find_duplicates([a, b, c]) == {"a": [("record run_1", ["b"])], "b": [("record mine", ["a"])]}
    assert gradebook_note([("log a.log", ["b", "c"]), ("log b.log", ["b"]), ("record r", ["c"])]) == \
        "b: 2 logs; c: 1 log, 1 record"


def test_only_regrades_one_student_and_keeps_the_others(graded):
    out = graded["out"]
    before = _state(out)
    alice_page = (out / "feedback" / "alice.html").read_text()
    (out / "feedback" / "bruno.html").unlink()  # proof of a regrade that a timing cannot give (0.98 s twice)
    seen = []
    grade_class(str(graded["subs"]), str(graded["rubric"]), str(out), workers=1, limits=FAST, lms="canvas",
                assignment="Homework 3 (4242)", only=["bruno"], progress=lambda r: seen.append(r["student"]))
    after = _state(out)
    assert seen == ["bruno"]  # regraded although nothing changed
    assert after["alice"] == before["alice"] and after["carla"] == before["carla"]
    assert after["bruno"]["total"] == before["bruno"]["total"]
    assert (out / "feedback" / "bruno.html").is_file()
    assert (out / "feedback" / "alice.html").read_text() == alice_page
    with pytest.raises(ValueError, match="--only zed: no such submission .* alice, bruno, carla"):
        grade_class(str(graded["subs"]), str(graded["rubric"]), str(out), limits=FAST, only=["zed"])


def test_command_line_options(graded, tmp_path):
    proc = labkit(str(graded["subs"]), "--rubric", str(graded["rubric"]), "--out", str(graded["out"]), "--timeout", "40",
                  "--memory", "1.5", "--only", "carla", "--lms", "canvas", "--assignment", "HW3")
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert [line.split()[0] for line in stdout.splitlines() if "/ 9" in line] == ["carla"]
    assert "Canvas: " in stdout and (graded["out"] / "canvas.csv").read_text().startswith(
        "Student,ID,SIS User ID,SIS Login ID,Section,HW3\n")
    bad = labkit(str(graded["subs"]), "--rubric", str(graded["rubric"]), "--out", str(tmp_path / "o"),
                 "--executor", "parsl")
    _out, err = bad.communicate(timeout=120)
    assert bad.returncode == 2 and "--executor parsl needs --config FILE" in err
    bad = labkit(str(graded["subs"]), "--rubric", str(graded["rubric"]), "--out", str(tmp_path / "o"), "--lms", "moodle")
    _out, err = bad.communicate(timeout=120)
    assert bad.returncode == 2 and "invalid choice: 'moodle'" in err
