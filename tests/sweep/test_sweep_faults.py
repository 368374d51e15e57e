"""What a sweep and ``labkit results`` keep, and say, when a second sweep, the folder or the disk
gets in the way. Each fault is real: two ``labkit sweep`` processes on one --out, a read-only
mount, a full tmpfs (tests/faults.py), a row cut short, a FIFO.

    python -m pytest tests/sweep/test_sweep_faults.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict

import pytest

from labkit import cli, files, sweep
from tests.execute.demo import make_demo
from tests.faults import fill, read_only, small_disk


def _labkit(*args: object) -> subprocess.CompletedProcess:
    """``labkit ARGS`` in a process of its own; a read that blocks fails the test instead of hanging it."""
    return subprocess.run([sys.executable, "-m", "labkit", *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def _contents(folder: Path) -> Dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_second_sweep_on_one_out_is_refused_while_the_first_runs_and_no_run_is_made_twice(tmp_path):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "labkit", "sweep", str(nb), "-p", "mode", "ok,hang", "--out", str(out)]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        done = out / "runs" / "mode=ok__seed=0.json"
        deadline = time.monotonic() + 180
        # the first sweep is in its second run (60 s long): its notebook is being written to a temporary
        while not (done.exists() and list((out / "runs").glob(".tmp-*mode=hang__seed=0*"))):
            assert first.poll() is None and time.monotonic() < deadline, "the first sweep never got to its 2nd run"
            time.sleep(0.2)
        before = _contents(out / "runs")
        second = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        assert first.poll() is None  # refused while the first one ran
        assert second.returncode == 2, second.stderr
        assert second.stderr == "labkit sweep: another `labkit sweep` is writing {}; wait for it to finish or " \
                                "stop it\n".format(out / "sweep.json")
        assert second.stdout == ""
        # the second ran nothing: no run of its own, the first one's row and running notebook as they were
        assert _contents(out / "runs").keys() == before.keys()
        assert (out / "runs" / done.name).read_bytes() == before[done.name]
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    with files.exclusive(out / "sweep.json", "the test"):  # the kernel dropped the lock with its holder
        pass


def test_a_read_only_out_is_refused_in_one_sentence_and_left_as_it_was(tmp_path, capsys):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    assert cli.main(["sweep", str(nb), "--out", str(out)]) == 0
    before = _contents(out)
    capsys.readouterr()
    with read_only(out):
        assert cli.main(["sweep", str(nb), "--out", str(out)]) == 2
        err = capsys.readouterr().err
    assert err.startswith("labkit sweep: --out {}: cannot write there (".format(out)), err
    assert err.endswith("); choose a folder you may write\n") and len(err.splitlines()) == 1
    assert _contents(out) == before
    # a new --out inside a read-only folder
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    with read_only(shelf):
        assert cli.main(["sweep", str(nb), "--out", str(shelf / "new")]) == 2
        err = capsys.readouterr().err
    assert err.startswith("labkit sweep: --out {}: cannot write there (".format(shelf / "new")), err
    assert list(shelf.iterdir()) == []


def test_a_full_disk_while_the_plots_are_drawn_keeps_the_runs_and_says_where(tmp_path, capsys):
    nb = make_demo(tmp_path / "nb")
    with small_disk(tmp_path / "disk", kib=400) as disk:
        out = disk / "out"
        argv = ["sweep", str(nb), "-p", "epochs", "3,6", "--out", str(out)]
        # room for the two runs and the table, not for a plot (each some 20 KB)
        filler = fill(disk, leave=48 * 1024)
        assert cli.main(argv) == 1
        printed, err = capsys.readouterr()
        runs = out / "runs"
        assert err.splitlines()[-1] == (
            "labkit sweep: could not write the tables and plots into {} (No space left on device); its 2 finished "
            "runs are kept in {} (each run's notebook and row): once there is room, run the same command again, "
            "which writes them without running anything again".format(out, runs))
        assert "Traceback" not in err and "# Sweep" not in printed
        kept = _contents(runs)
        assert sorted(kept) == ["epochs=3__seed=0.ipynb", "epochs=3__seed=0.json",
                                "epochs=6__seed=0.ipynb", "epochs=6__seed=0.json"]
        assert all(json.loads(kept[name])["status"] == "complete" for name in kept if name.endswith(".json"))
        # the table was written, then the disk filled under the first plot: no plot, not even half of one
        assert (out / "results.csv").read_text().count("complete") == 2
        assert not list(out.glob("plot_*")) and not list(out.glob(".tmp-*"))
        # with room again, the same command runs nothing and writes the report
        filler.unlink()
        assert cli.main(argv) == 0
        printed = capsys.readouterr().out
        assert "(0 run now, 2 already done)" in printed and (out / "plot_accuracy_vs_epochs.png").stat().st_size
        assert _contents(runs) == kept


def test_a_row_cut_short_is_named_by_results_and_run_again_by_the_sweep(tmp_path, capsys):
    nb = make_demo(tmp_path / "nb")
    out = tmp_path / "out"
    argv = ["sweep", str(nb), "-p", "epochs", "3,6", "--out", str(out)]
    assert cli.main(argv) == 0
    cut = out / "runs" / "epochs=6__seed=0.json"
    kept = out / "runs" / "epochs=3__seed=0.json"
    cut.write_bytes(cut.read_bytes()[:60])
    kept_row = kept.read_bytes()
    capsys.readouterr()
    # the summary the sweep wrote, and the cut row named in one sentence
    assert cli.main(["results", str(out)]) == 1
    printed, err = capsys.readouterr()
    assert printed.strip() == (out / "summary.md").read_text().strip()
    assert err.startswith("labkit results: {}: not readable JSON (".format(cut)) and err.endswith("); left out\n")
    assert len(err.splitlines()) == 1
    # a summary made afresh shows the other run, and says which file it left out
    (out / "summary.md").unlink()
    assert cli.main(["results", str(out)]) == 1
    printed, err = capsys.readouterr()
    assert "- runs: 1 of 2 finished, 1 complete" in printed and "- {}: not readable JSON".format(cut) in printed
    assert "| 1 | {:.4g} |".format(json.loads(kept_row)["accuracy"]) in printed
    # in a notebook: the table of the other run, and a warning naming the file
    with pytest.warns(UserWarning, match="not readable JSON"):
        assert list(sweep.collect(out)["epochs"]) == [3]
    # a FIFO among the rows is named and left out, never opened (a read would wait for ever)
    os.mkfifo(out / "runs" / "stray.json")
    shown = _labkit("results", out)
    assert shown.returncode == 1 and "# Sweep of demo.ipynb" in shown.stdout
    assert "labkit results: sweep file {}: is a FIFO (named pipe), not a regular file; left out\n".format(
        out / "runs" / "stray.json") in shown.stderr
    (out / "runs" / "stray.json").unlink()
    # the sweep again: the cut row's run is made again, the other is kept as it was
    assert cli.main(argv) == 0
    printed, err = capsys.readouterr()
    assert "labkit sweep: {}: not readable JSON (".format(cut) in err and "); that run is done again\n" in err
    assert "(1 run now, 1 already done)" in printed
    assert kept.read_bytes() == kept_row and json.loads(cut.read_text())["status"] == "complete"
