"""`labkit run` and execute.run_notebook against a real kernel (demo notebook from demo.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from labkit import execute, results
from labkit.params import ParameterError
from tests.execute.demo import make_demo

ROOT = Path(__file__).resolve().parents[2]


def labkit_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "labkit", *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=120)


def test_declared_spec_converts_text_to_declared_types(tmp_path):
    declared = execute.notebook_parameters(str(make_demo(tmp_path)))
    values = declared.from_text({"learning_rate": "1", "epochs": "4", "mode": "crash"})
    assert values == {"learning_rate": 1.0, "epochs": 4, "mode": "crash"}
    assert isinstance(values["learning_rate"], float)


@pytest.mark.parametrize("with_spec", [True, False])
def test_impossible_value_and_unknown_name_are_refused_with_the_parameter_list(tmp_path, with_spec):
    declared = execute.notebook_parameters(str(make_demo(tmp_path, with_spec=with_spec)))
    with pytest.raises(ParameterError) as info:
        declared.from_text({"epochs": "ten", "learning_rat": "0.1"})
    text = str(info.value)
    assert "epochs = 'ten'" in text and "cannot read 'ten' as int" in text
    assert "'learning_rat' is not a parameter" in text and "did you mean 'learning_rate'" in text
    # the notebook's parameters, types and defaults follow the problems
    assert "learning_rate  float" in text and "0.1" in text and "seed" in text


def test_parameters_inferred_from_the_parameters_cell(tmp_path):
    nb = make_demo(tmp_path, with_spec=False, parameters='epochs = 3\nrate = 0.5\nname = "x"\nflag = True\n'
                   'layers = [1, 2]\ndata_dir = None\nsteps = 2 * 3\n')
    declared = execute.notebook_parameters(str(nb))
    kinds = {p.name: p.type for p in declared.spec}
    assert kinds == {"epochs": int, "rate": float, "name": str, "flag": bool, "layers": list}
    assert set(declared.free) == {"data_dir", "steps"}
    assert declared.from_text({"rate": "1", "flag": "no", "data_dir": "/d", "steps": "7"}) == {
        "rate": 1.0, "flag": False, "data_dir": "/d", "steps": 7}
    with pytest.raises(ParameterError, match="flag = 'maybe'"):
        declared.from_text({"flag": "maybe"})


def test_range_and_cross_checks_apply_to_yaml_values(tmp_path):
    declared = execute.notebook_parameters(str(make_demo(tmp_path)))
    with pytest.raises(ParameterError, match="epochs = 0: too small"):
        execute.gather_parameters(declared, [], yaml_text="epochs: 0")
    with pytest.raises(ParameterError, match="mode = 'oops': not one of the choices"):
        execute.gather_parameters(declared, [], yaml_text="mode: oops")
    # -p wins over YAML
    assert execute.gather_parameters(declared, [("epochs", "5")], yaml_text="epochs: 2\nseed: 4") == {
        "epochs": 5, "seed": 4}


def test_cli_run_succeeds_in_the_notebooks_own_directory(tmp_path):
    nb = make_demo(tmp_path / "exercise")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = labkit_cli("run", str(nb), "out.ipynb", "-p", "learning_rate", "1", "-p", "epochs", "4", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    run = results.read(elsewhere / "out.ipynb").runs[0]
    assert run.params["learning_rate"] == 1.0 and isinstance(run.params["learning_rate"], float)
    assert run.params["epochs"] == 4
    assert run.metrics["cwd_has_spec"] is True  # the kernel ran next to the notebook


def test_cli_refuses_bad_parameters_before_any_kernel(tmp_path):
    nb = make_demo(tmp_path)
    done = labkit_cli("run", str(nb), "out.ipynb", "-p", "epochs", "ten", cwd=tmp_path)
    assert done.returncode == 2
    assert "epochs = 'ten'" in done.stderr and "Parameters of" in done.stderr and "default" in done.stderr
    assert not (tmp_path / "out.ipynb").exists()


def test_cli_failing_notebook_exits_1_and_writes_the_output(tmp_path):
    nb = make_demo(tmp_path)
    done = labkit_cli("run", str(nb), "failed.ipynb", "-y", "mode: error", cwd=tmp_path)
    assert done.returncode == 1
    assert "RuntimeError: asked to fail" in done.stderr
    assert results.read(tmp_path / "failed.ipynb").error.startswith("RuntimeError")


@pytest.mark.timing
def test_timeout_and_dead_kernel_are_outcomes_not_exceptions(tmp_path):
    nb = str(make_demo(tmp_path))
    hung = execute.run_notebook(nb, str(tmp_path / "hang.ipynb"), {"mode": "hang"}, timeout=1.5)
    assert hung.status == execute.TIMEOUT and "timed out" in hung.error
    crashed = execute.run_notebook(nb, str(tmp_path / "crash.ipynb"), {"mode": "crash"})
    assert crashed.status == execute.DEAD_KERNEL
    for name in ("hang.ipynb", "crash.ipynb"):  # written either way, without a result
        written = nbformat.read(str(tmp_path / name), as_version=4)
        assert written.metadata["papermill"]["parameters"]["mode"] in ("hang", "crash")
        assert results.read(tmp_path / name).runs == []


def test_eight_concurrent_runs_do_not_collide(tmp_path):
    nb = str(make_demo(tmp_path))
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(
            lambda i: execute.run_notebook(nb, str(tmp_path / "out" / "{}.ipynb".format(i)), {"seed": i}), range(8)))
    assert [o.status for o in outcomes] == ["complete"] * 8, [o.error for o in outcomes]
    seeds = sorted(results.read(o.output).runs[0].params["seed"] for o in outcomes)
    assert seeds == list(range(8))
