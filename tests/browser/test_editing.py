"""What students do between Run Alls, in the browser: edit one cell and run the next; interrupt.

    make setup-browser && make test-browser

The kernel-level versions (every notebook, through jupyter_client) are tests/test_editing_cells.py;
these check that JupyterLab shows the same: one red line for a stale config, and an interrupt
that ends in a partial run with its table and record, not a KeyboardInterrupt traceback.
"""

from __future__ import annotations

import json
import re

import pytest

from labkit import results
from tests.browser import cases as catalogue
from tests.browser.lab import SLOWDOWN
from tests.browser.test_lab import _finish, _open_copy, _outputs, _parameters_index, _type_parameters

MNIST = catalogue.case("graphcore/mnist")


def _index(copy, text: str) -> int:
    cells = json.loads(copy.read_text())["cells"]
    return next(i for i, c in enumerate(cells) if c["cell_type"] == "code" and text in "".join(c["source"]))


def test_an_edited_parameter_run_alone_is_refused_in_one_line_until_the_config_cell_runs(lab, browser_context, artifacts):
    notebook, copy = _open_copy(lab, browser_context, MNIST, "edited")
    try:
        _type_parameters(notebook, copy, [(k, repr(v)) for k, v in MNIST.parameters.items()])
        notebook.run_all(MNIST.timeout)
        params, config, train = _parameters_index(copy), _index(copy, "from_notebook"), _index(copy, "graphcore.run_exercise(config)")
        _type_parameters(notebook, copy, [("learning_rate", "0.5")])
        notebook.run_cell(params)  # the edited cell alone, then the run step: the common slip
        notebook.run_cell(train)
        shown = notebook.error_texts()
        assert len(shown) == 1, shown
        assert shown[0].strip() == ("learning_rate is 0.5 in the notebook but 0.03 in config: "
                                    "run the config cell again (or Run All)"), shown[0]
        notebook.run_cell(config)  # what the message says to do
        notebook.run_cell(train, timeout=MNIST.timeout)
        assert not notebook.error_texts()
        assert "Accuracy on test set" in notebook.output_text(train)
    finally:
        _finish(notebook, lab, artifacts, MNIST, "edited")


@pytest.mark.timing  # an interrupt mid-epoch: make test-flaky repeats it under load
def test_interrupting_a_long_run_from_the_kernel_menu_keeps_a_partial_run(lab, browser_context, artifacts):
    notebook, copy = _open_copy(lab, browser_context, MNIST, "interrupted")
    try:
        _type_parameters(notebook, copy, [(k, repr(v)) for k, v in dict(MNIST.parameters, epochs=50).items()])
        train, table = _index(copy, "graphcore.run_exercise(config)"), _index(copy, "graphcore.show(run)")
        notebook.start_run_all()
        # Interrupt once training is under way (a bar beyond the data loading one is drawn).
        notebook.page.wait_for_function(
            "i => document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i]"
            ".querySelectorAll('.jupyter-widgets .progress').length >= 2", arg=train, timeout=600000 * SLOWDOWN)
        notebook.interrupt()
        notebook.run_all_finished(MNIST.timeout)
        notebook.save()
        assert not [o for _, o in _outputs(copy) if o["output_type"] == "error"], "an interrupt is not an error"
        assert not notebook.error_texts()
        assert re.search(r"interrupted at epoch \d+/50, step \d+/\d+", notebook.output_text(train)), \
            notebook.output_text(train)
        assert "interrupted: partial run" in notebook.output_text(table)
        (run,) = results.read(str(copy)).runs
        assert run.status == "interrupted" and run.series["loss"]["x"], (run.status, run.series)
    finally:
        _finish(notebook, lab, artifacts, MNIST, "interrupted")
