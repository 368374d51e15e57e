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
