"""The golden tolerance tells a number that moved with the CPU from a result that changed.

    .venv/bin/python -m pytest tests/golden/test_numeric_tolerance.py -q

Outputs are the shapes the golden notebooks really print: a pandas table (HTML and text), a
progress line, a printed metric, a run record. The nbval cells at the end run a real kernel
through nbval's own comparison, with conftest.py's extension in place.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numeric  # noqa: E402

from labkit.results import compare_records  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def prediction_table(rows):
    """The custom-text table of groq/bert_tiny, rendered by pandas as the notebook shows it."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rows, columns=["text", "backend", "prediction", "agrees with cpu"])
    return frame.to_html(), frame.to_string()


GOLDEN_ROWS = [["I loved every minute of this film.", "cpu", "positive (0.96)", "yes"],
               ["A dull, lifeless mess.", "cpu", "negative (0.94)", "yes"]]


def with_prediction(first):
    rows = copy.deepcopy(GOLDEN_ROWS)
    rows[0][2] = first
    return rows


@pytest.mark.parametrize("form", [0, 1], ids=["text/html", "text/plain"])
class TestPandasTable:
    def test_same_table_passes(self, form):
        golden = prediction_table(GOLDEN_ROWS)[form]
        assert numeric.differences(golden, golden) == []

    def test_probability_one_hundredth_apart_passes(self, form):
        # measured: positive (0.95) on AMD AVX2 where the golden copy has positive (0.96)
        golden, fresh = prediction_table(GOLDEN_ROWS)[form], prediction_table(with_prediction("positive (0.95)"))[form]
        assert golden != fresh
        assert numeric.differences(golden, fresh) == []

    def test_probability_far_off_fails(self, form):
        golden, fresh = prediction_table(GOLDEN_ROWS)[form], prediction_table(with_prediction("positive (0.50)"))[form]
        assert numeric.differences(golden, fresh) == ["0.50 where the golden copy has 0.96 (tolerance 0.01)"]

    def test_changed_label_fails(self, form):
        golden, fresh = prediction_table(GOLDEN_ROWS)[form], prediction_table(with_prediction("negative (0.96)"))[form]
        assert numeric.differences(golden, fresh) == ["the text differs, numbers aside"]

    def test_changed_word_fails(self, form):
        rows = copy.deepcopy(GOLDEN_ROWS)
        rows[1][3] = "no"
        assert numeric.differences(prediction_table(GOLDEN_ROWS)[form], prediction_table(rows)[form]) != []

    def test_changed_row_count_fails(self, form):
        golden = prediction_table(GOLDEN_ROWS)[form]
        assert numeric.differences(golden, prediction_table(GOLDEN_ROWS[:1])[form]) != []
        assert numeric.differences(golden, prediction_table(GOLDEN_ROWS + GOLDEN_ROWS[1:])[form]) != []


class TestMnistAccuracy:
    """The MNIST golden run: 800 test images, 66.62 % recorded, 64.38 % with baseline kernels."""

    def test_kernel_spread_of_test_accuracy_passes(self):
        assert numeric.differences("Accuracy on test set: 66.62%", "Accuracy on test set: 64.38%") == []

    def test_changed_result_fails(self):
        assert numeric.differences("Accuracy on test set: 66.62%", "Accuracy on test set: 40.00%") == [
            "40.00% where the golden copy has 66.62% (tolerance 4.0 points)"]

    def test_percent_with_a_space_and_without_decimals(self):
        assert numeric.differences("test accuracy 66 %", "test accuracy 64 %") == []
        assert numeric.differences("test accuracy 66 %", "test accuracy 40 %") != []

    def test_progress_line(self):
        golden = "Epoch 1/2: PCT|BAR| 6/6 [ELAPSED], loss 2.1553 | accuracy 40.50%"
        assert numeric.differences(golden, golden.replace("2.1553", "2.1545").replace("40.50", "40.75")) == []
        assert numeric.differences(golden, golden.replace("2.1553", "2.3010")) == [
            "2.3010 where the golden copy has 2.1553 (tolerance 1 %)"]
        assert numeric.differences(golden, golden.replace("6/6", "5/6")) == [
            "5 where the golden copy has 6 (integers must be equal)"]
        assert numeric.differences(golden, golden.replace("loss", "lost")) == ["the text differs, numbers aside"]

    def test_record(self):
        golden = {"exercise": "graphcore/mnist", "source": "portable", "status": "ok", "params": {"epochs": 2},
                  "metrics": {"test_accuracy": 66.625, "final_loss": 1.814943, "steps_per_epoch": 6,
                              "epoch_time": 36.4},
                  "units": {"test_accuracy": "%", "epoch_time": "s"},
                  "series": {"loss": {"x": [1, 2], "y": [2.1553, 1.8149]}}}
        fresh = json.loads(json.dumps(golden))
        fresh["metrics"].update(test_accuracy=64.375, final_loss=1.8101, epoch_time=50.2)
        fresh["series"]["loss"]["y"] = [2.1545, 1.8101]
        assert compare_records(golden, fresh, close=numeric.metric_close) == []
        fresh["metrics"]["test_accuracy"] = 40.0
        fresh["metrics"]["steps_per_epoch"] = 5
        assert compare_records(golden, fresh, close=numeric.metric_close) == [
            "metric steps_per_epoch: expected 6, got 5", "metric test_accuracy: expected 66.625, got 40.0"]


class TestNumbers:
    def test_identifiers_versions_and_hashes_are_text(self):
        text = "layer1.conv v2-387ffc18a61a-e10-s0 torch 2.14.1+cu130 Conv2d"
        assert numeric.numbers(text) == []
        assert numeric.differences(text, text.replace("2.14.1", "2.14.2")) == ["the text differs, numbers aside"]

    def test_thousands_and_exponents(self):
        assert [n.value for n in numeric.numbers("60,000 images, below 1e-4, loss -0.5")] == [60000, 1e-4, -0.5]

    def test_alignment_padding_does_not_matter(self):
        # pandas pads columns to their widest value; sanitize.cfg writes 2+ spaces as "__"
        assert numeric.differences("0__cpu__9.95", "0 cpu 10.01") == []

    def test_integer_and_decimal_counts_must_match(self):
        assert numeric.differences("loss 2.15", "loss 2.15 2.15") == ["the text differs, numbers aside"]

    def test_json_outputs(self):
        assert numeric.outputs_differ({"a": [0.95, "x"]}, {"a": [0.951, "x"]}) == []
        assert numeric.outputs_differ({"a": [0.95, "x"]}, {"a": [0.5, "x"]}) != []
        assert numeric.outputs_differ({"a": 1}, {"b": 1}) != []


NOTEBOOK_CELL = """import pandas as pd
pd.DataFrame({{"text": ["I loved it"], "prediction": ["{label} ({p})"]}})"""


def nbval_notebook(path, label, p, executed_with):
    """A one-cell notebook whose stored output says ``executed_with`` and whose source prints
    ``label (p)``: nbval re-executes it in a real kernel and compares through conftest.py."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(NOTEBOOK_CELL.format(label=executed_with[0], p=executed_with[1])))
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    nb.cells[0].source = NOTEBOOK_CELL.format(label=label, p=p)
    nbformat.write(nb, str(path))


@pytest.mark.parametrize("label, p, passes", [
    ("positive", "0.95", True),    # the CPU moved the last digit: same result
    ("positive", "0.50", False),   # the model changed
    ("negative", "0.96", False),   # the label flipped
])
def test_nbval_uses_the_tolerance(tmp_path, label, p, passes):
    notebook = tmp_path / "golden.ipynb"
    nbval_notebook(notebook, label, p, executed_with=("positive", "0.96"))
    (tmp_path / "conftest.py").write_text(  # tests/golden/conftest.py, loaded under another name
        "import importlib.util\n"
        "spec = importlib.util.spec_from_file_location('golden_conftest', {!r})\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n".format(str(HERE / "conftest.py")))
    result = subprocess.run([sys.executable, "-m", "pytest", str(notebook), "--nbval", "-p", "no:cacheprovider",
                             "-q", "--rootdir", str(tmp_path)], cwd=str(tmp_path), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True)
    assert (result.returncode == 0) == passes, result.stdout
