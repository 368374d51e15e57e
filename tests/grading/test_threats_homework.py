"""The threat model on the real homework rubric: 2 workers, the attacks beside two honest students.

ben (every testbed log, every answer) and cleo (a few logs, two answers) are students of the
class in tests/homework/classroom.py: they must get exactly their rows of the class's expected
gradebook. Beside them: the homework with made-up Graphcore records and a ``labkit/`` package
that answers the recomputation with the claims (the first attack of the issue), an error hidden
by replacing ``showtraceback`` (the second), records naming ben's logs through ``..``, an absolute
path and a link, and ben's own hand-in plus modules named like what trusted code imports.
Every attack gets its honest score, nothing of ben's leaks, and no process is left.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from labkit.grading.recompute import from_log
from tests.grading import attacks
from tests.grading.test_hostile import batch_leftovers
from tests.homework import classroom

LIMITS = levels.Limits(notebook_s=90, cell_s=30, memory_bytes=2 << 30, nproc=64, fsize_bytes=16 << 20)
GRAPHCORE = ["gc_lr0.01", "gc_lr3", "gc_lr0.03"]
# The attack: three made-up Graphcore runs whose log was never handed in.
MADE_UP = """import labkit.results as R
for number, lr in enumerate([0.03, 0.3, 3.0], 1):
    R.record(R.Run("graphcore/mnist", source="log", params={"learning_rate": lr, "log": "logs/graphcore/x.log"},
                   metrics={"test_accuracy": 98.4}), name="graphcore_%d" % number)"""


def _replace_graphcore(folder: Path, source: str) -> None:
    path = folder / "ai_testbeds.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    nb.cells[classroom._section_cell(nb, "graphcore")].source = source
    nbformat.write(nb, str(path))


def _stolen_records(subs: Path) -> str:
    """Ben's three Graphcore runs, exactly as his logs give them, each naming his log a different way."""
    lines = ["import labkit.results as R"]
    ways = ["../ben/logs/graphcore/{}", str(subs / "ben" / "logs" / "graphcore") + "/{}", "logs/graphcore/{}"]
    for number, (key, way) in enumerate(zip(GRAPHCORE, ways), 1):
        filename = classroom.LOGS[key][1]
        trusted = from_log({"log": str(classroom.fixtures_dir() / "graphcore" / filename)})
        params = dict(trusted["params"], log=way.format(filename))
        lines.append("R.record(R.Run('graphcore/mnist', source='log', params={!r}, metrics={!r}), name='graphcore_{}')".format(
            params, trusted["metrics"], number))
    return "\n".join(lines)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, strongest_level):
    if not classroom.fixtures_dir().is_dir():
        pytest.skip("real testbed logs not found at {} (set LABKIT_SHARED)".format(classroom.fixtures_dir()))
    root = tmp_path_factory.mktemp("threats-homework")
    subs = root / "submissions"
    good = classroom.ANSWERS
    classroom._student(subs, "ben", classroom.COMPLETE, good)
    classroom._student(subs, "cleo", ["gc_lr0.03", "gc_upstream", "cb_upstream", "cb_1024"], {1: good[1], 2: good[2]},
                       outputs=True)
    classroom._student(subs, "mallory_labkit", [k for k in classroom.COMPLETE if k not in GRAPHCORE], good)
    _replace_graphcore(subs / "mallory_labkit", MADE_UP)
    attacks.shadow_labkit(subs / "mallory_labkit", {"metrics": {"test_accuracy": 98.4}})
    classroom._student(subs, "mallory_hides", classroom.COMPLETE, good,
                       before="get_ipython().showtraceback = lambda *a, **k: None")
    nb_path = subs / "mallory_hides" / "ai_testbeds.ipynb"
    nb = nbformat.read(str(nb_path), as_version=4)
    nb.cells.insert(5, new_code_cell("1 / 0"))
    nbformat.write(nb, str(nb_path))
    classroom._student(subs, "mallory_steals", [k for k in classroom.COMPLETE if k not in GRAPHCORE], good)
    (subs / "mallory_steals" / "logs" / "graphcore").mkdir(parents=True)
    filename = classroom.LOGS[GRAPHCORE[2]][1]
    os.symlink(str(subs / "ben" / "logs" / "graphcore" / filename),
               str(subs / "mallory_steals" / "logs" / "graphcore" / filename))
    _replace_graphcore(subs / "mallory_steals", _stolen_records(subs))
    classroom._student(subs, "mallory_shadows", classroom.COMPLETE, good)
    attacks.shadow_modules(subs / "mallory_shadows")
    results = grade_class(str(subs), str(classroom.RUBRIC), str(root / "out"), workers=2, limits=LIMITS,
                          reproduce=True)
    return {"results": results, "out": root / "out", "subs": subs, "level": strongest_level}


def _checks(graded, student):
    return {c["name"]: c for c in graded["results"][student]["checks"]}


def test_honest_students_grade_exactly_as_in_the_class_gradebook(graded):
    with open(str(classroom.EXPECTED), newline="") as f:
        expected = {r["student"]: r for r in csv.DictReader(f)}
    rows = {r["student"]: r for r in read_gradebook(str(graded["out"] / "gradebook.csv"))}
    for student in ("ben", "cleo"):
        for column, value in expected[student].items():
            assert rows[student][column] == value, (student, column, rows[student][column], value)


def test_a_labkit_package_beside_the_notebook_does_not_grade_itself(graded):
    checks = _checks(graded, "mallory_labkit")
    assert checks["graphcore_accuracy"]["score"] == 0 and checks["graphcore_learning_rates"]["score"] == 0
    assert "could not recompute" in checks["graphcore_accuracy"]["reason"]
    assert checks["cerebras_throughput"]["score"] == 2  # the real logs of the other sections still count


def test_a_hidden_traceback_fails_no_error(graded):
    result = graded["results"]["mallory_hides"]
    assert result["status"] == "error" and "ZeroDivisionError" in result["error"]
    assert _checks(graded, "mallory_hides")["runs_clean"]["score"] == 0
    assert result["total"] == graded["results"]["ben"]["total"] - 1  # everything else is ben's


def test_records_naming_another_students_logs_are_refused(graded):
    checks = _checks(graded, "mallory_steals")
    for name in ("graphcore_accuracy", "graphcore_learning_rates", "diverged_run_seen"):
        assert checks[name]["score"] == 0, checks[name]
    reasons = checks["graphcore_learning_rates"]["reason"]
    assert "leaves the submission" in reasons and "absolute path" in reasons and "link that leads out" in reasons


def test_modules_named_like_trusted_imports_change_nothing(graded):
    assert graded["results"]["mallory_shadows"]["total"] == graded["results"]["ben"]["total"]
    assert graded["results"]["mallory_shadows"]["status"] == "ok"


def test_no_process_is_left(graded):
    assert batch_leftovers() == []
    left = [name for name in os.listdir("/tmp") if name.startswith("labkit-grade-{}-".format(os.getpid()))]
    assert left == []
