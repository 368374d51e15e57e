"""Bad sweep arguments are refused before anything runs, and nothing is lost (no kernels)."""

from __future__ import annotations

import json
import os

import pytest

from labkit import sweep
from labkit.sweep import planning
from labkit.params import ParameterError
from tests.execute.demo import make_demo


@pytest.fixture
def nb(tmp_path):
    return str(make_demo(tmp_path / "nb"))


def test_grid_times_repeats_with_typed_values_and_seeds(nb, tmp_path):
    plan = sweep.plan(nb, [("epochs", "4,10"), ("learning_rate", "1, 0.03")], repeats=3)
    assert plan.grid == {"epochs": [4, 10], "learning_rate": [1.0, 0.03]}
    assert isinstance(plan.grid["learning_rate"][0], float)
    assert plan.seeds == [0, 1, 2]
    tasks = plan.tasks(str(tmp_path / "out"))
    assert len(tasks) == 12 and len({t["key"] for t in tasks}) == 12
    assert tasks[0]["parameters"] == {"epochs": 4, "learning_rate": 1.0, "seed": 0}
    # the notebook's defaults are not in this grid: the first configuration is the baseline
    assert plan.baseline == {"epochs": 4, "learning_rate": 1.0}
    assert "first" in plan.baseline_reason
    with_default = sweep.plan(nb, [("epochs", "4,3"), ("learning_rate", "1,0.1")], repeats=2)
    assert with_default.baseline == {"epochs": 3, "learning_rate": 0.1}
    assert "defaults" in with_default.baseline_reason


@pytest.mark.parametrize("grid, message", [
    ([("epochs", "")], "an empty value"),
    ([("epochs", "4,,10")], "an empty value"),
    ([("epochs", "4,ten,10")], "cannot read 'ten' as int"),
    ([("learning_rate", "0.1,-1")], "too small"),
    ([("epoch", "4")], "did you mean 'epochs'"),
    ([("seed", "1,2")], "seeds are set by --repeats"),
    ([("epochs", "4"), ("epochs", "5")], "given twice"),
    ([("epochs", "4,4")], "a value is repeated"),
])
def test_bad_grids_are_refused_naming_the_parameter(nb, grid, message):
    with pytest.raises(ParameterError) as info:
        sweep.plan(nb, grid, repeats=2)
    assert message in str(info.value)
    assert "learning_rate  float" in str(info.value)  # the notebook's parameters follow


def test_bad_counts_and_missing_seed(nb, tmp_path):
    with pytest.raises(sweep.SweepError, match="--repeats 0: must be a whole number from 1 to 100"):
        sweep.plan(nb, [("epochs", "4")], repeats=0)
    plan = sweep.plan(nb, [("epochs", "4")], repeats=1)
    with pytest.raises(sweep.SweepError, match="--workers 0: must be a whole number from 1 to 128"):
        sweep.run_sweep(plan, str(tmp_path / "out"), workers=0)
    assert not (tmp_path / "out").exists()
    no_seed = make_demo(tmp_path / "noseed", with_spec=False, parameters="epochs = 3\n")
    with pytest.raises(sweep.SweepError, match="declares no parameter 'seed'"):
        sweep.plan(str(no_seed), [("epochs", "4")], repeats=2)
    with pytest.raises(sweep.SweepError, match="needs --config"):
        sweep.run_sweep(plan, str(tmp_path / "out"), executor="parsl")


def test_out_from_a_different_sweep_is_refused_and_left_untouched(nb, tmp_path):
    out = tmp_path / "out"
    first = sweep.plan(nb, [("epochs", "4,5")], repeats=2)
    planning.prepare_out(first, str(out))
    (out / "runs" / "keep.json").write_text('{"precious": 1}')
    before = (out / "sweep.json").read_text()
    other = sweep.plan(nb, [("epochs", "4,6")], repeats=2)
    with pytest.raises(sweep.SweepError) as info:
        planning.prepare_out(other, str(out))
    assert "holds a different sweep" in str(info.value) and "grid" in str(info.value)
    assert (out / "sweep.json").read_text() == before
    assert (out / "runs" / "keep.json").read_text() == '{"precious": 1}'
    planning.prepare_out(sweep.plan(nb, [("epochs", "4,5")], repeats=2), str(out))  # same arguments: resumes
    # a folder that is not a sweep at all
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "thesis.tex").write_text("x")
    with pytest.raises(sweep.SweepError, match="is not a sweep folder"):
        planning.prepare_out(first, str(tmp_path / "notes"))
    assert os.listdir(tmp_path / "notes") == ["thesis.tex"]


def test_cli_reports_bad_input_with_exit_2(nb, tmp_path, capsys):
    from labkit import cli

    assert cli.main(["sweep", nb, "-p", "epochs", "4,x", "--out", str(tmp_path / "o")]) == 2
    assert "cannot read 'x' as int" in capsys.readouterr().err
    assert cli.main(["sweep", nb, "-p", "epochs", "4", "--repeats", "0", "--out", str(tmp_path / "o")]) == 2
    assert "--repeats 0" in capsys.readouterr().err
    assert cli.main(["sweep", nb, "-p", "epochs", "4", "--workers", "0", "--out", str(tmp_path / "o")]) == 2
    assert "--workers 0" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_run_key_is_a_safe_file_name():
    key = planning.run_key({"name": "a b/c", "rate": 0.5, "seed": 1})
    assert key == "name=a_b_c__rate=0.5__seed=1"
    long = planning.run_key({"p{}".format(i): i for i in range(40)})
    assert len(long) <= 120 and json.dumps(long)


@pytest.mark.parametrize("timeout", ["nan", "inf", "0", "-5"])
def test_a_timeout_that_is_not_finite_and_positive_is_refused_before_anything_runs(nb, tmp_path, capsys, timeout):
    from labkit import cli

    out = tmp_path / "o"
    assert cli.main(["sweep", nb, "--timeout", timeout, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("labkit sweep: --timeout ") and "must be a finite, positive number of seconds" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_repeats_workers_and_the_number_of_runs_are_bounded_before_anything_runs(nb, tmp_path, capsys):
    from labkit import cli

    out = tmp_path / "o"
    assert sweep.plan(nb, [], repeats=planning.MAX_REPEATS).seeds[-1] == planning.MAX_REPEATS - 1
    with pytest.raises(sweep.SweepError, match="--repeats 101"):
        sweep.plan(nb, [], repeats=planning.MAX_REPEATS + 1)
    assert cli.main(["sweep", nb, "--repeats", "1000000", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == ("labkit sweep: --repeats 1000000: must be a whole number from 1 to 100 (each repeat is one run "
                   "with its own seed; past 100 a repeat more narrows the confidence interval by under 0.5 %)\n")
    assert cli.main(["sweep", nb, "--workers", "129", "--out", str(out)]) == 2
    assert "--workers 129: must be a whole number from 1 to 128" in capsys.readouterr().err
    assert not out.exists()
    # the grid counts too: 100 x 2 configurations x 100 repeats, refused by arithmetic before any grid is built
    epochs = ",".join(str(e) for e in range(1, 101))
    assert len(sweep.plan(nb, [("epochs", epochs)], repeats=100).tasks(str(out))) == planning.MAX_RUNS
    with pytest.raises(sweep.SweepError, match="200 configurations x --repeats 100 make 20,000 runs; a sweep may "
                                               "have at most 10,000"):
        sweep.plan(nb, [("epochs", epochs), ("learning_rate", "0.1,0.2")], repeats=100)


def test_an_out_that_is_a_file_or_a_notebook_that_is_a_fifo_is_refused_in_one_sentence(nb, tmp_path, capsys):
    from labkit import cli

    a_file = tmp_path / "results.txt"
    a_file.write_text("mine")
    assert cli.main(["sweep", nb, "--out", str(a_file)]) == 2
    assert capsys.readouterr().err == "labkit sweep: --out {} is a file, not a folder; give a new folder, or a " \
                                      "sweep's to resume it\n".format(a_file)
    assert a_file.read_text() == "mine" and not list(tmp_path.glob(".*"))  # no lock left beside it
    fifo = tmp_path / "pipe.ipynb"
    os.mkfifo(fifo)
    assert cli.main(["sweep", str(fifo), "--out", str(tmp_path / "o")]) == 2
    assert "pipe.ipynb: is a FIFO (named pipe), not a regular file" in capsys.readouterr().err
