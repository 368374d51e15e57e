"""Each sweep worker's share of the cores, contended timings, and what summary.md says of them.

    PYTHONPATH=$PWD python -m pytest tests/sweep/test_worker_share.py -q

The load average of this machine is whatever it is (it is shared), so the sweeps below set
``LOAD_SLACK`` so that the real measurement gives a known answer: huge (nothing counts as
busy) or hugely negative (everything does).
"""

from __future__ import annotations

import pandas as pd
import pytest

from labkit import cli, sweep
from labkit.sweep import report as sweep_report
from labkit.sweep import task as sweep_task
from labkit.sweep import tables as sweep_tables
from tests.execute.demo import make_demo


def test_each_worker_gets_cores_over_workers_threads():
    assert sweep_task.share(2, 2) == {"workers": 2, "cores": 2, "threads": 1}
    assert sweep_task.share(4, 16)["threads"] == 4
    assert sweep_task.share(1, 8)["threads"] == 8
    assert sweep_task.share(3, 2)["threads"] == 1  # never less than one thread
    env = sweep_task.share_env(2, 8)
    assert env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "4" and env["LABKIT_SWEEP_WORKERS"] == "2"
    assert sweep_task.recorded_share(env) == {"workers": 2, "cores": 8, "threads": 4}
    assert sweep_task.recorded_share({}) is None


def test_contention_is_overlapping_shares_or_a_busy_machine():
    fits = sweep_task.share(2, 2)
    assert sweep_task.contention(fits, 1.2, 2.3) == (False, "")
    over = sweep_task.share(3, 2)
    contended, why = sweep_task.contention(over, 0.1, 0.1)
    assert contended and why == "3 workers x 1 thread(s) on 2 cores"
    contended, why = sweep_task.contention(fits, 1.0, 6.5)
    assert contended and why == "busy machine: load average 1.0 before, 6.5 after, on 2 cores"
    assert sweep_task.contention(fits, None, None) == (False, "")  # not measured: nothing claimed


def _sweep(tmp_path, monkeypatch, slack):
    monkeypatch.setattr(sweep_task, "LOAD_SLACK", slack)
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    plan = sweep.plan(str(nb), [("epochs", "3,6"), ("learning_rate", "0.01,0.1")], repeats=2)
    done = sweep.run_sweep(plan, str(out), workers=2, quiet=True)
    assert done["complete"] == 8
    return out, pd.read_csv(out / "results.csv"), (out / "summary.md").read_text()


def test_a_quiet_sweep_gives_each_kernel_its_share_and_compares_timings(tmp_path, monkeypatch):
    out, table, summary = _sweep(tmp_path, monkeypatch, slack=1e9)
    threads = sweep_task.share(2)["threads"]
    assert (table["omp_threads"].astype(str) == str(threads)).all()  # set in the kernel before it started
    assert (table["threads"] == threads).all() and (table["workers"] == 2).all()
    assert not table["timing_contended"].any() and table["load_before"].notna().all()
    assert "**timings are per worker share**" in summary and "- contention: none" in summary
    throughput = sweep_tables.summary_frame(str(out)).query("metric == 'throughput'")
    assert set(throughput["verdict"]) <= {"baseline", "within noise", "real difference"}
    # constants are stated once: a metric equal in every run has no table of its own
    assert "equal in every complete run:" in summary and "omp_threads" in summary.split("## ")[0]


def test_contended_timings_are_marked_and_kept_out_of_verdicts_but_accuracy_is_not(tmp_path, monkeypatch):
    out, table, summary = _sweep(tmp_path, monkeypatch, slack=-1e9)
    assert table["timing_contended"].all() and table["contention"].str.startswith("busy machine").all()
    frame = sweep_tables.summary_frame(str(out))
    throughput = frame[(frame["metric"] == "throughput") & (frame["verdict"] != "baseline")]
    assert set(throughput["verdict"]) == {sweep_tables.CONTENDED_VERDICT}
    assert (throughput["contended"] == 2).all()
    accuracy = frame[(frame["metric"] == "accuracy") & (frame["epochs"] == 6)]
    assert set(accuracy["verdict"]) == {"real difference"}  # 12 points apart: contention does not touch it
    assert "**8 of 8 runs have contended timings** (a busy machine" in summary
    section = summary.split("## throughput (samples/s)")[1].split("##")[0]
    assert "Per worker share" in section and "contended runs" in section


def test_plots_use_a_log_axis_for_a_decade_and_skip_constant_metrics(tmp_path, monkeypatch):
    out, _table, summary = _sweep(tmp_path, monkeypatch, slack=1e9)
    assert sweep_report._log_axis([0.01, 0.1]) and not sweep_report._log_axis([0.01, 0.03])
    assert not sweep_report._log_axis(["a", "b"])
    plots = sweep_report.plot_files(str(out))
    assert "plot_throughput_vs_learning_rate.png" in plots and "plot_accuracy_vs_epochs.png" in plots
    assert not [p for p in plots if "omp_threads" in p]
    assert "Plots: " + ", ".join(plots) in summary


def test_the_final_line_counts_the_same_on_a_first_and_a_resumed_run(tmp_path, capsys):
    nb = make_demo(tmp_path / "nb")
    args = ["sweep", str(nb), "-p", "mode", "ok,diverge", "--out", str(tmp_path / "out"), "--workers", "2"]
    assert cli.main(args) == 1  # one run diverged
    first = capsys.readouterr().out.strip().splitlines()[-1]
    assert cli.main(args) == 1
    again = capsys.readouterr().out.strip().splitlines()[-1]
    assert first.startswith("labkit sweep: 2 of 2 runs finished, 1 complete, 1 not complete (2 run now")
    assert again.startswith("labkit sweep: 2 of 2 runs finished, 1 complete, 1 not complete (0 run now, 2 already")
