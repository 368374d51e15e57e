"""tests/gpu/device_check.sh's logic on the CPU: the launch check that fails, with the capture's error,
when MNIST's or the study's steps did not run as the policy chose."""

from labkit.results import Run
from tests.gpu import launch_check


def _run(exercise, **environment):
    run = Run(exercise=exercise, source="portable", params={})
    run.environment.update(environment)
    return run


def test_a_launch_that_is_the_policys_choice_passes():
    assert launch_check.problems([_run("graphcore/mnist", launch="cuda graph")], "cuda") == []
    assert launch_check.problems([_run("graphcore/mnist", launch="eager")], "cpu") == []
    assert launch_check.problems([_run("cerebras/llama2_7b")], "cuda") == []  # no launch recorded: not judged


def test_a_capture_that_failed_fails_the_check_and_says_its_error():
    error = "RuntimeError: CUDA error: operation not permitted when stream is capturing"
    found = launch_check.problems([_run("graphcore/mnist", launch="eager", launch_error=error)], "cuda")
    assert found == ["graphcore/mnist: launch 'eager' where the policy chose 'cuda graph': " + error]
    silent = launch_check.problems([_run("comparison/ipu_vs_gpu", launch="eager")], "cuda")
    assert silent == ["comparison/ipu_vs_gpu: launch 'eager' where the policy chose 'cuda graph': no capture error "
                      "recorded"]


def test_the_check_reads_executed_notebooks_and_exits_1_on_a_mismatch(tmp_path, capsys):
    import nbformat

    from labkit import results

    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    for path, environment in ((good, {"launch": "eager"}), (bad, {"launch": "eager", "launch_error": "RuntimeError: x"})):
        notebook = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("")
        cell.outputs = [nbformat.v4.new_output("display_data", data={
            results.SCRAP_MIME: results.scrap(_run("graphcore/mnist", **environment))})]
        notebook.cells.append(cell)
        nbformat.write(notebook, str(path))
    assert launch_check.main(["cpu", str(good)]) == 0
    assert launch_check.main(["cpu", str(good), str(bad)]) == 1
    shown = capsys.readouterr().out
    assert "bad.ipynb: graphcore/mnist: launch 'eager' where the policy chose 'eager': RuntimeError: x" in shown
    assert launch_check.main(["cpu", str(good), str(tmp_path / "cut.ipynb")]) == 1
    assert "cut.ipynb: no such notebook, so its launch is unknown" in capsys.readouterr().out


#: What a device call may take (the device tool's limit for one command), and what must be left of it for
#: the figures, the archive and the transfer back.
CALL_SECONDS, LEFT_FOR_THE_END = 600, 45


def test_the_steps_fit_one_device_call_and_the_tests_run_before_any_figure():
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parent / "gpu" / "device_check.sh"
    done = subprocess.run(["bash", str(script), "--plan"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    deadline = int(lines[0].split()[1])
    steps = [(line.split()[1], int(line.split()[2])) for line in lines[1:] if line.startswith("step ")]
    names = [name for name, _ in steps]
    assert names[:3] == ["pip", "environment", "test_gpu"]  # the tests before any figure
    assert {"bert_large", "llama", "mnist", "mnist_bf16", "study", "launch_check"} <= set(names[3:])
    # every step gets its whole limit: none is cut by the deadline, and the deadline leaves the end its time
    assert sum(limit for _, limit in steps) <= deadline <= CALL_SECONDS - LEFT_FOR_THE_END
    assert dict(steps)["test_gpu"] >= 0.4 * deadline
