"""A class of 23 handing in the 2025 homework, graded locally, and five of them through Parsl on a real Slurm.

    LABKIT_SHARED=../shared PYTHONPATH=$PWD .venv/bin/python -m pytest tests/homework/test_class_2025.py -q

The class (tests/homework/classroom_2025.py) mixes every kind of evidence: CS-3 logs made from the
course's real sample, the lab book's LLaMA sweep and inference runs against the local stand-in server
(made once, at tiny sizes: about three minutes of CPU), a saved results JSON; and every way to go wrong:
no default batch size, two batch sizes, typed records, a monkeypatched log reader, edited outputs and
edited evidence, 2024 logs, one endpoint's results without streaming, an endless loop, a killed kernel,
the untouched template, an unreadable file, a sandbox escape. Each student's comment there says why
their row of class/expected_gradebook_2025.csv holds those numbers: the gradebook must match it
exactly, locally, and for one student of each kind of outcome through Parsl on the single-node Slurm
that tests/slurm_cluster.py starts; the Canvas export must carry each total.

To grade again without remaking the lab runs, point LABKIT_TEST_LAB_2025 at a folder made by
``classroom_2025.make_lab_runs``.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from pathlib import Path

import pytest

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.homework import classroom, classroom_2025
from tests.homework.class_page_checks import check_class_page

ROOT = Path(__file__).resolve().parents[2]
LIMITS = levels.Limits(notebook_s=150, cell_s=30, memory_bytes=4 << 30, nproc=64, fsize_bytes=16 << 20)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(classroom.fixtures_dir()))
    reuse = os.environ.get("LABKIT_TEST_LAB_2025")  # a runs/ folder made earlier by make_lab_runs
    if reuse:
        return Path(reuse)
    return classroom_2025.make_lab_runs(tmp_path_factory.mktemp("lab2025"))


@pytest.fixture(scope="module")
def submissions(tmp_path_factory, lab):
    subs = tmp_path_factory.mktemp("class2025") / "submissions"
    students = classroom_2025.build_class(subs, lab)
    return subs, students


def _expected():
    with open(str(classroom_2025.EXPECTED), newline="") as f:
        return list(csv.DictReader(f))


def _matches_expected(out: Path, results, students):
    rows = read_gradebook(str(out / "gradebook.csv"))
    assert [r["student"] for r in rows] == students
    expected = [row for row in _expected() if row["student"] in students]
    assert len(expected) == len(students)
    for want, got in zip(expected, rows):
        differing = {k: (v, got[k]) for k, v in want.items() if got[k] != v}
        assert not differing, "{}: expected vs got {}; reasons: {}".format(
            want["student"], differing, [(c["name"], c["reason"]) for c in results[want["student"]]["checks"]
                                         if c["name"] in differing])
    with open(str(out / "canvas.csv"), newline="") as f:
        canvas = list(csv.reader(f))
    assert canvas[0][-1] == "Homework: AI testbeds (2025)" and canvas[1][5] == "30"
    assert {r[3]: r[5] for r in canvas[2:]} == {r["student"]: r["total"] for r in rows}
    return rows


@pytest.fixture(scope="module")
def graded(tmp_path_factory, submissions, strongest_level):
    subs, students = submissions
    out = tmp_path_factory.mktemp("graded2025") / "out"
    results = grade_class(str(subs), str(classroom_2025.RUBRIC), str(out), workers=2, limits=LIMITS, reproduce=True,
                          lms="canvas")
    return {"students": students, "results": results, "out": out, "level": strongest_level}


def test_gradebook_matches_the_expected_one(graded):
    assert len(graded["students"]) >= 20
    rows = _matches_expected(graded["out"], graded["results"], graded["students"])
    assert {r["isolation"] for r in rows} == {rows[0]["isolation"]}
    assert rows[0]["isolation"].startswith(graded["level"])


def test_reasons_say_what_happened(graded):
    results = graded["results"]
    by = {s: {c["name"]: c for c in r["checks"]} for s, r in results.items()}
    assert "recorded batch_size = 512 but the grader read 1024" in by["fay"]["cs3_global_rate"]["reason"]
    assert "recomputed 31.99" in by["jo"]["cs3_global_rate"]["reason"]
    assert "the default 1024 is not among them" in by["dev"]["cs3_batch_sizes"]["reason"]
    assert "no run of sambanova/inference recorded the metric 'endpoints'" in by["hana"]["inference_both_endpoints"]["reason"]
    # her saved results are re-read by the grader (a log of the submission), and hold 20 requests
    assert "record 'sambanova_1' (Metis/Sophia): requests = 20 is outside >= 40" == by["hana"]["inference_prompts"]["reason"]
    assert "requests = 10 is outside >= 40" in by["ian"]["inference_prompts"]["reason"]
    assert "submitted 64 vs 58.4" in by["kai"]["reproduces"]["reason"]
    # sam's edited evidence is refused where the homework gathers it, in the grader's own execution
    executed = (graded["out"] / "executed" / "sam.ipynb").read_text()
    assert "the notebook ran with num_prompts = 20 but its record says 5" in executed
    assert "portable: CPU" in by["cara"]["cs3_batch_sizes"]["reason"]
    assert "agrees" in by["cara"]["portable_reruns"]["reason"]
    assert results["lea"]["status"] == "timeout" and results["max"]["status"] == "kernel died"
    assert "PermissionError" in results["ray"]["reason"]
    assert results["ola"]["status"] == "unreadable"


def test_the_class_page_shows_every_figure_and_names_the_planted_misreadings(graded, tmp_path):
    # wes's results JSON counts prompt tokens and sent one request at a time; fay typed her CS-3 rates and jo
    # patched the log reader: far from the class, fairly, with no misreading of the four to name. ian's
    # inference figures come from the fixture's one 5-prompt run of the stand-in server, measured apart from
    # the 20-prompt run the class copies: on a loaded 2-core machine it has landed more than 3.3x from the
    # class median (a far point, no misreading named), so he may be far, never accused.
    seen = check_class_page(graded["out"], tmp_path, planted={
        "wes": "prompt tokens counted as output tokens", "hana": "one request stream's throughput"},
        may_be_far={"fay", "jo"}, exercises=("cerebras/llama2_7b", "sambanova/inference"), name="class_2025",
        live={"ian"})
    assert {"fay", "jo"} <= set(seen["far"])
    page = (graded["out"] / "class.html").read_text()
    # wes's two endpoints are two runs on the page (one per endpoint), never one run of both
    assert "wes · sambanova_1:metis" in page and "wes · sambanova_1:sophia" in page


def test_feedback_names_where_each_run_ran(graded):
    feedback = sorted(os.listdir(str(graded["out"] / "feedback")))
    assert feedback == [s + ".html" for s in graded["students"]]
    html = (graded["out"] / "feedback" / "gil.html").read_text()
    assert "CS-3" in html and "portable: CPU" in html


@pytest.fixture
def worker_path(monkeypatch):
    """Parsl starts `process_worker_pool.py` by name: the venv's bin must be on PATH."""
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return bin_dir


#: Through Parsl, one student of each kind of outcome (the whole class is graded locally above, with
#: the same code per submission): gil's portable LLaMA re-run on the Slurm node, lea's endless loop
#: stopped by the cell limit, max's killed kernel, ola's unreadable file, ray's sandbox escape.
PARSL_STUDENTS = ["gil", "lea", "max", "ola", "ray"]


def test_the_same_gradebook_through_parsl_on_a_real_slurm(tmp_path, submissions, worker_path, monkeypatch,
                                                          strongest_level):
    pytest.importorskip("parsl")
    from tests.slurm_cluster import SlurmUnavailable, ensure_slurm

    try:
        info = ensure_slurm()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    subs = tmp_path / "submissions"
    for student in PARSL_STUDENTS:
        shutil.copytree(str(submissions[0] / student), str(subs / student))
    monkeypatch.setenv("LABKIT_SLURM_PARTITION", info.partition)
    monkeypatch.setenv("LABKIT_PARSL_ADDRESS", "127.0.0.1")
    monkeypatch.setenv("LABKIT_PARSL_WORKERS", "2")
    monkeypatch.setenv("LABKIT_SLURM_WALLTIME", "00:20:00")
    monkeypatch.setenv("LABKIT_WORKER_INIT", "export PATH={}:$PATH PYTHONPATH={}".format(
        worker_path, os.environ.get("PYTHONPATH", str(ROOT))))
    out = tmp_path / "out"
    results = grade_class(str(subs), str(classroom_2025.RUBRIC), str(out), limits=LIMITS, reproduce=True,
                          lms="canvas", executor="parsl", parsl_config=str(ROOT / "docs" / "parsl" / "slurm_testbed.py"))
    _matches_expected(out, results, PARSL_STUDENTS)
    assert all(r.get("slurm_job") for r in results.values() if r["status"] != "unreadable"), results
    assert {r.get("host") for r in results.values() if r.get("host")} == {info.node}
