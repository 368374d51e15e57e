"""Sweeps against real kernels: tables, noise verdicts, failures, resuming, parallel runs."""

from __future__ import annotations


import pandas as pd
import pytest
from scipy import stats as scipy_stats

from labkit import cli, results, sweep
from tests.execute.demo import make_demo


def test_cli_sweep_writes_table_summary_and_plots(tmp_path, capsys):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "runs" / "demo"
    status = cli.main(["sweep", str(nb), "-p", "epochs", "3,6", "--repeats", "3", "--out", str(out),
                       "--workers", "2"])
    assert status == 0, capsys.readouterr().err
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 6 and set(table["status"]) == {"complete"}
    assert sorted(table["seed"]) == [0, 0, 1, 1, 2, 2]
    assert {"epochs", "seed", "accuracy", "loss", "status", "error", "duration"} <= set(table.columns)
    # every run's row matches what its own executed notebook recorded
    for _, row in table.iterrows():
        recorded = results.read(out / row["notebook"]).runs[0]
        assert recorded.params["seed"] == row["seed"] and recorded.metrics["accuracy"] == pytest.approx(row["accuracy"])
    # statistics against scipy on the same numbers
    base = table.loc[table["epochs"] == 3, "accuracy"]
    six = table.loc[table["epochs"] == 6, "accuracy"]
    p = scipy_stats.ttest_ind(six, base, equal_var=False).pvalue
    summary = (out / "summary.md").read_text()
    assert "| 6 | 3 | {:.4g} |".format(six.mean()) in summary
    assert "{:.4g}".format(p) in summary and "real difference" in summary  # 6 points apart, noise 0.3
    assert "baseline: epochs = 3 (the notebook's defaults)" in summary
    assert "Welch" in summary
    assert (out / "plot_accuracy_vs_epochs.png").stat().st_size > 1000
    # the summary again, and the same table from inside a notebook
    capsys.readouterr()
    assert cli.main(["results", str(out)]) == 0
    assert capsys.readouterr().out.strip() == summary.strip()
    collected = sweep.collect(out)
    assert list(collected["accuracy"]) == pytest.approx(list(table["accuracy"]))


def test_collect_refuses_a_folder_that_is_not_a_sweep(tmp_path):
    (tmp_path / "runs").mkdir()
    with pytest.raises(sweep.SweepError, match="not a sweep folder.*labkit.results.collect"):
        sweep.collect(tmp_path)


def test_noise_alone_is_within_noise(tmp_path):
    nb = make_demo(tmp_path / "nb")
    plan = sweep.plan(str(nb), [("noise", "0.3,0.31")], repeats=3)
    sweep.run_sweep(plan, str(tmp_path / "out"), workers=2, quiet=True)
    summary = (tmp_path / "out" / "summary.md").read_text()
    accuracy = summary.split("## accuracy")[1].split("##")[0]
    assert "within noise" in accuracy and "real difference" not in accuracy


@pytest.mark.timing
def test_failures_are_rows_with_causes_and_a_restart_redoes_only_unfinished_runs(tmp_path):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    plan = sweep.plan(str(nb), [("mode", "ok,error,crash,hang,diverge")], repeats=1, timeout=2)
    first = sweep.run_sweep(plan, str(out), workers=2, quiet=True)
    assert first == {"ran": 5, "skipped": 0, "total": 5, "failed": 4, "finished": 5, "complete": 1, "not_complete": 4}
    table = sweep.collect(out).set_index("mode")
    assert table.loc["ok", "status"] == "complete"
    assert table.loc["error", "status"] == "error" and "RuntimeError: asked to fail" in table.loc["error", "error"]
    assert table.loc["crash", "status"] == "dead kernel"
    assert table.loc["hang", "status"] == "timeout"
    assert table.loc["diverge", "status"] == "diverged"
    assert "Runs not complete" in (out / "summary.md").read_text()

    # an interrupted run: its row never got written, a partial notebook was left behind
    rows = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    ok_row = out / "runs" / "mode=ok__seed=0.json"
    ok_row.unlink()
    (out / "runs" / "mode=ok__seed=0.running.ipynb").write_text("{half a notebook")
    again = sweep.run_sweep(sweep.plan(str(nb), [("mode", "ok,error,crash,hang,diverge")], repeats=1, timeout=2),
                            str(out), workers=2, quiet=True)
    # this call ran one run; the folder's counts are the same as after the first call
    assert again == {"ran": 1, "skipped": 4, "total": 5, "failed": 0, "finished": 5, "complete": 1, "not_complete": 4}
    for name, mtime in rows.items():
        if name != ok_row.name:
            assert (out / "runs" / name).stat().st_mtime_ns == mtime  # finished runs untouched
    table = pd.read_csv(out / "results.csv")
    assert len(table) == 5 and list(table["mode"]).count("ok") == 1  # counted once
    assert not list((out / "runs").glob("*.running.ipynb"))
    # nothing left to do
    assert sweep.run_sweep(plan, str(out), quiet=True)["ran"] == 0


def test_eight_parallel_runs_on_a_cold_cache_each_pinned_to_one_gpu(tmp_path):
    nb = make_demo(tmp_path / "nb")
    cache = tmp_path / "cold-cache"
    plan = sweep.plan(str(nb), [("cache_dir", str(cache))], repeats=8)
    done = sweep.run_sweep(plan, str(tmp_path / "out"), workers=8, gpus=["0", "1"], quiet=True)
    assert done["failed"] == 0
    table = sweep.collect(tmp_path / "out")
    assert list(table["status"]) == ["complete"] * 8
    assert sorted(table["seed"]) == list(range(8))
    # each kernel saw exactly the one device its worker holds
    assert set(table["visible_gpu"].astype(str)) <= {"0", "1"}
    assert (table["visible_gpu"].astype(str) == table["gpu"].astype(str)).all()
    # eight runs met a cold cache at once: one filled it under labkit's lock, all read it whole
    assert len((cache / "downloads.log").read_text().splitlines()) == 1
    assert table["cache_ok"].astype(bool).all()
