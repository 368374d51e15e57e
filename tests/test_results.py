"""Run records: round trips, NaN survives JSON, comparison with tolerance, collect()."""

import json
import math

import nbformat
import pytest

from labkit import results
from labkit.results import SCRAP_MIME, Run, compare_records


def make_run(**overrides):
    run = Run("graphcore/mnist", params={"epochs": 2})
    run.add_metric("test_accuracy", 97.5, "%")
    run.add_metric("train_throughput", 1900.0, "samples/s")
    run.add_series("loss", [1, 2], [2.0, float("nan")])
    for key, value in overrides.items():
        setattr(run, key, value)
    return run


def notebook_with(tmp_path, *runs, error=False):
    cells = []
    for i, run in enumerate(runs):
        payload = results.scrap(run, name="run{}".format(i))
        cell = nbformat.v4.new_code_cell("record()")
        cell.outputs = [nbformat.v4.new_output("display_data", data={SCRAP_MIME: payload})]
        cells.append(cell)
    if error:
        cell = nbformat.v4.new_code_cell("1/0")
        cell.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[])]
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["papermill"] = {"parameters": {"epochs": 2}}
    path = tmp_path / "nb{}.ipynb".format(len(list(tmp_path.glob("*.ipynb"))))
    nbformat.write(nb, str(path))
    return path


def test_round_trip_keeps_nan_and_units(tmp_path):
    run = make_run()
    text = json.dumps(run.to_dict(), allow_nan=False)  # strict JSON: NaN stored as text
    back = Run.from_dict(json.loads(text))
    assert back.units == run.units and math.isnan(back.series["loss"]["y"][1])


def test_status_is_checked():
    with pytest.raises(ValueError, match="Run.status"):
        Run("x", status="finished")


def test_read_collect_and_errors(tmp_path):
    first = notebook_with(tmp_path, make_run())
    notebook_with(tmp_path, make_run(status="diverged"), error=True)
    nb = results.read(first)
    assert nb.parameters == {"epochs": 2} and nb.error is None and nb.runs[0].metrics["test_accuracy"] == 97.5
    table = results.collect(tmp_path)
    assert list(table["status"]) == ["complete", "diverged"] and list(table["epochs"]) == [2, 2]
    assert results.read(tmp_path / "nb1.ipynb").error.startswith("ZeroDivisionError")


def test_read_names_the_bad_file(tmp_path):
    bad = tmp_path / "bad.ipynb"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.ipynb: not a readable notebook"):
        results.read(bad)
    with pytest.raises(FileNotFoundError, match="no such notebook"):
        results.read(tmp_path / "missing.ipynb")


def test_labkit_results_prints_records_or_lines_and_exits_1_on_an_unreadable_notebook(tmp_path, capsys):
    from labkit import cli

    notebook_with(tmp_path, make_run())
    assert cli.main(["results", str(tmp_path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["records"]["run0"]["metrics"]["test_accuracy"] == 97.5
    words = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print()")])
    words.cells[0].outputs = [nbformat.v4.new_output("stream", name="stdout", text="step 1\rtest accuracy 97.5 %\nloss 2\n")]
    nbformat.write(words, str(tmp_path / "words.ipynb"))
    assert cli.main(["results", str(tmp_path / "words.ipynb"), "--lines", "accuracy"]) == 0
    assert capsys.readouterr().out == "{}: test accuracy 97.5 %\n".format(tmp_path / "words.ipynb")
    (tmp_path / "bad.ipynb").write_text("{not json")
    assert cli.main(["results", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "labkit results:" in err and "bad.ipynb" in err and len(out.splitlines()) == 2  # the others still print


def test_compare_skips_timings_and_tolerates_rounding():
    a = make_run().to_dict()
    b = make_run().to_dict()
    b["metrics"]["train_throughput"] = 5.0  # timings vary from run to run
    b["environment"] = {"host": "elsewhere"}
    assert compare_records(a, b) == []
    b["metrics"]["test_accuracy"] = 97.5 + 1e-9
    assert compare_records(a, b) == []
    b["metrics"]["test_accuracy"] = 99.0  # an edited result is caught
    assert compare_records(a, b) == ["metric test_accuracy: expected 97.5, got 99.0"]
    b = make_run(params={"epochs": 3}).to_dict()
    assert compare_records(a, b)[0].startswith("params")



def test_a_parameter_added_since_a_record_was_made_is_not_a_difference():
    """A hand-in recorded before labkit had ``precision`` re-runs with it; the re-run still matches,
    while a parameter the record had and the re-run changed or lost is caught."""
    old = make_run().to_dict()
    again = make_run().to_dict()
    again["params"]["precision"] = "fp32"
    assert compare_records(old, again) == []
    name = next(iter(old["params"]))
    del again["params"][name]
    assert compare_records(old, again) == ["params: {}: expected {!r}, got 'nothing'".format(name, old["params"][name])]

def test_table_shows_units():
    table = make_run().table()
    assert table.loc["test_accuracy", "value"] == "97.50%"
    assert table.loc["train_throughput", "value"] == "1900.00 samples/s"


def test_same_value_is_the_one_closeness_rule():
    same = results.same_value
    # symmetric: the order never matters, at the edge of the tolerance either
    assert same(100.0, 101.0, rtol=0.01, atol=0) and same(101.0, 100.0, rtol=0.01, atol=0)
    assert not same(100.0, 102.0, rtol=0.01, atol=0) and not same(102.0, 100.0, rtol=0.01, atol=0)
    # defaults: 1e-9 relative, 1e-12 absolute; 1 and 1.0 alike
    assert same(1, 1.0) and same(0.3, 0.1 + 0.2) and not same(1.0, 1.0 + 1e-6)
    # an absolute tolerance alone (the Groq exercise's similarity scores)
    assert same(0.80, 0.805, rtol=0, atol=0.01) and not same(0.80, 0.82, rtol=0, atol=0.01)
    # NaN, infinities and JSON's spellings of them
    assert same(float("nan"), "nan") and not same(float("nan"), 1.0)
    assert same(math.inf, "inf") and not same(math.inf, 1e308) and not same(math.inf, -math.inf)
    # numpy scalars are numbers; booleans, text and None compare by ==
    numpy = pytest.importorskip("numpy")
    assert same(numpy.float32(0.5), 0.5) and same(numpy.int64(3), 3.0)
    assert same(True, True) and not same(True, False) and same("cpu", "cpu") and not same(None, 0)
    # lists item by item
    assert same([1, 2.0], (1.0, 2)) and not same([1, 2], [1, 2, 3]) and not same([1.0], [1.1])


def test_compare_records_and_grading_use_the_same_rule():
    from labkit.grading.checks import records
    from labkit.testbeds.groq import exercise, report

    for module in (records, exercise, report):
        assert module.same_value is results.same_value, module.__name__
    run = Run("graphcore/mnist", "portable", "complete", {"epochs": 1}, {"test_accuracy": 90.0})
    again = dict(run.to_dict(), metrics={"test_accuracy": 90.0 * (1 + 1e-5)})
    assert compare_records(run.to_dict(), again, rtol=1e-4) == []
    assert compare_records(run.to_dict(), again, rtol=1e-6) == [
        "metric test_accuracy: expected 90.0, got {!r}".format(90.0 * (1 + 1e-5))]


def test_labkit_results_never_blocks_on_a_fifo(tmp_path):
    """A FIFO is refused when named, skipped with a word inside a folder; a read of one would wait for
    ever, so each call runs in a process of its own and a hang fails the test."""
    import os
    import subprocess
    import sys

    def labkit_results(*paths):
        return subprocess.run([sys.executable, "-m", "labkit", "results", *map(str, paths)], capture_output=True,
                              text=True, timeout=120)

    fifo = tmp_path / "pipe.ipynb"
    os.mkfifo(fifo)
    refused = labkit_results(fifo)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == "labkit results: PATH {}: is a FIFO (named pipe), not a regular file; give executed " \
                             "notebooks, folders of them or sweep folders\n".format(fifo)
    good = notebook_with(tmp_path, make_run())
    skipped = labkit_results(tmp_path)
    assert skipped.returncode == 1
    assert json.loads(skipped.stdout)["notebook"] == str(good)  # the other notebook is still shown
    assert skipped.stderr == "labkit results: notebook {}: is a FIFO (named pipe), not a regular file\n".format(fifo)
    lines = labkit_results(fifo, "--lines", "accuracy")
    assert lines.returncode == 2 and "is a FIFO" in lines.stderr
    with pytest.raises(ValueError, match="is a FIFO"):
        results.read(fifo)
