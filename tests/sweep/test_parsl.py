"""The Parsl executor: the same sweep through Parsl, locally and through a real Slurm."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from labkit import sweep
from tests.execute.demo import make_demo

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("parsl")


@pytest.fixture
def worker_path(monkeypatch):
    """Parsl starts `process_worker_pool.py` by name: the venv's bin must be on PATH."""
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return bin_dir


def test_parsl_local_provider_runs_the_sweep(tmp_path, worker_path):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    plan = sweep.plan(str(nb), [("epochs", "3,4")], repeats=1)
    done = sweep.run_sweep(plan, str(out), executor="parsl", parsl_config=str(ROOT / "docs" / "parsl" / "local.py"),
                           quiet=True)
    assert done == {"ran": 2, "skipped": 0, "total": 2, "failed": 0, "finished": 2, "complete": 2, "not_complete": 0}
    table = sweep.collect(out)
    assert list(table["status"]) == ["complete", "complete"] and list(table["epochs"]) == [3, 4]
    assert (out / "parsl").is_dir()  # Parsl's run directory is kept with the sweep, not in the cwd


def test_parsl_config_file_errors_are_clear(tmp_path):
    nb = make_demo(tmp_path / "nb")
    plan = sweep.plan(str(nb), [("epochs", "3")], repeats=1)
    with pytest.raises(sweep.SweepError, match="no such file"):
        sweep.run_sweep(plan, str(tmp_path / "out"), executor="parsl", parsl_config=str(tmp_path / "nope.py"))
    bad = tmp_path / "bad.py"
    bad.write_text("config = 42\n")
    with pytest.raises(sweep.SweepError, match="must define `config = parsl.config.Config"):
        sweep.run_sweep(plan, str(tmp_path / "out"), executor="parsl", parsl_config=str(bad))
    fifo = tmp_path / "config.py"
    os.mkfifo(fifo)
    with pytest.raises(sweep.SweepError, match="--config .*config.py: is a FIFO"):  # refused, never opened
        sweep.run_sweep(plan, str(tmp_path / "out"), executor="parsl", parsl_config=str(fifo))
    assert not (tmp_path / "out").exists()


def test_parsl_slurm_provider_on_a_real_slurm(tmp_path, worker_path, monkeypatch):
    from tests.slurm_cluster import SlurmUnavailable, ensure_slurm

    try:
        info = ensure_slurm()
    except SlurmUnavailable as exc:
        pytest.skip(str(exc))
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    monkeypatch.setenv("LABKIT_SLURM_PARTITION", info.partition)
    monkeypatch.setenv("LABKIT_PARSL_ADDRESS", "127.0.0.1")
    monkeypatch.setenv("LABKIT_PARSL_WORKERS", "2")
    monkeypatch.setenv("LABKIT_SLURM_WALLTIME", "00:10:00")
    monkeypatch.setenv("LABKIT_WORKER_INIT", "export PATH={}:$PATH PYTHONPATH={}".format(worker_path, ROOT))
    plan = sweep.plan(str(nb), [("epochs", "3,4")], repeats=1)
    done = sweep.run_sweep(plan, str(out), executor="parsl",
                           parsl_config=str(ROOT / "docs" / "parsl" / "slurm_testbed.py"), quiet=True)
    assert done["failed"] == 0, sweep.collect(out)[["status", "error"]]
    table = sweep.collect(out)
    assert list(table["status"]) == ["complete", "complete"]
    # the kernels ran inside the Slurm job Parsl submitted
    assert (table["slurm_job"].astype(str) != "none").all()
    assert list((out / "parsl").rglob("submit_scripts/parsl.slurm.*"))
