"""`labkit grade --executor parsl`: the same grades through Parsl, locally and through a real Slurm.

Each submission is graded on a Parsl worker in its own sandbox; the gradebook is written by
the `labkit grade` process alone and a second run regrades nothing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from nbformat.v4 import new_code_cell

from labkit.grading.sandbox import levels
from labkit.grading.batch import grade_class
from labkit.grading.reports.gradebook import read_gradebook
from tests.grading import notebooks as N
from tests.grading.test_hostile import RUBRIC

ROOT = Path(__file__).resolve().parents[2]
LIMITS = levels.Limits(notebook_s=60, cell_s=8, memory_bytes=1536 << 20, nproc=64, fsize_bytes=16 << 20)
pytest.importorskip("parsl")


@pytest.fixture
def worker_path(monkeypatch):
    """Parsl starts `process_worker_pool.py` by name: the venv's bin must be on PATH."""
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return bin_dir


def _class(subs: Path) -> None:
    subs.mkdir()
    N.write(N.homework(), subs / "honest.ipynb")
    N.write(N.homework(answer=None), subs / "no_answer.ipynb")
    N.write(N.homework(extra=[new_code_cell("while True:\n    pass")]), subs / "loops.ipynb")
    (subs / "broken.ipynb").write_text('{"cells": [')


def _grade_twice(tmp_path: Path, config: str):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _class(subs)
    seen = []
    results = grade_class(str(subs), RUBRIC, str(out), limits=LIMITS, executor="parsl", parsl_config=config,
                          progress=lambda r: seen.append(r["student"]))
    rows = {r["student"]: r for r in read_gradebook(str(out / "gradebook.csv"))}
    assert sorted(seen) == ["broken", "honest", "loops", "no_answer"]  # each graded once
    assert (rows["honest"]["total"], rows["honest"]["status"]) == ("9", "ok")
    assert (rows["no_answer"]["total"], rows["no_answer"]["status"]) == ("6", "ok")
    assert rows["loops"]["status"] == "timeout" and "per-cell time limit of 8 s" in rows["loops"]["reason"]
    assert rows["broken"]["status"] == "unreadable"
    level = levels.best_level()
    assert all(r["isolation"].startswith(level) for r in rows.values())
    assert sorted(os.listdir(str(out / "executed"))) == ["honest.ipynb", "loops.ipynb", "no_answer.ipynb"]
    again = []
    grade_class(str(subs), RUBRIC, str(out), limits=LIMITS, executor="parsl", parsl_config=config,
                progress=lambda r: again.append(r["student"]))
    assert again == []  # resumable as with local workers: nothing graded twice
    with open(str(out / ".labkit-grade" / "state.json")) as f:
        assert sorted(json.load(f)["results"]) == sorted(seen)
    return results, out


def test_parsl_local_provider_grades_the_class(tmp_path, worker_path, monkeypatch, strongest_level):
    monkeypatch.setenv("LABKIT_PARSL_WORKERS", "2")
    results, out = _grade_twice(tmp_path, str(ROOT / "docs" / "parsl" / "local.py"))
    assert all(r.get("host") for r in results.values())
    assert (out / "parsl").is_dir()  # Parsl's run directory is kept with the grades


def test_parsl_config_errors_are_clear(tmp_path):
    subs = tmp_path / "subs"
    _class(subs)
    with pytest.raises(ValueError, match="needs --config FILE"):
        grade_class(str(subs), RUBRIC, str(tmp_path / "out"), executor="parsl")
    with pytest.raises(ValueError, match="no such file"):
        grade_class(str(subs), RUBRIC, str(tmp_path / "out"), executor="parsl", parsl_config=str(tmp_path / "no.py"))
    assert not (tmp_path / "out").exists()  # nothing written before the config is known to load


def test_parsl_slurm_provider_grades_on_a_real_slurm(tmp_path, worker_path, monkeypatch, strongest_level):
    from tests.slurm_cluster import SlurmUnavailable, ensure_slurm

    try:
        info = ensure_slurm()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    monkeypatch.setenv("LABKIT_SLURM_PARTITION", info.partition)
    monkeypatch.setenv("LABKIT_PARSL_ADDRESS", "127.0.0.1")
    monkeypatch.setenv("LABKIT_PARSL_WORKERS", "2")
    monkeypatch.setenv("LABKIT_SLURM_WALLTIME", "00:10:00")
    monkeypatch.setenv("LABKIT_WORKER_INIT", "export PATH={}:$PATH PYTHONPATH={}".format(worker_path, os.environ["PYTHONPATH"]))
    results, out = _grade_twice(tmp_path, str(ROOT / "docs" / "parsl" / "slurm_testbed.py"))
    # every submission was graded inside the Slurm job Parsl submitted, on the cluster's node
    assert {r.get("slurm_job") for r in results.values()} - {None, ""}, results
    assert all(r.get("slurm_job") for r in results.values())
    assert {r["host"] for r in results.values()} == {info.node}
    assert list((out / "parsl").rglob("submit_scripts/parsl.slurm.*"))
