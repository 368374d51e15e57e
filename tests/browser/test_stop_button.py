"""JupyterLab's stop button at a phase boundary keeps what was measured, in the browser.

    make setup-browser && make test-browser

A student runs MNIST with Run All, and presses the toolbar's stop button (Interrupt the kernel) once
the first epoch has finished (its time is printed) and the second has begun. The run ends early and
the cells after it still show and record it: status interrupted, the phase it stopped in, and the
first epoch's time and throughput; no error output. The same walk at every boundary, in a terminal
and through jupyter_client, is tests/interrupts/.
"""

from __future__ import annotations

import pytest

from labkit import results
from tests.browser import cases as catalogue
from tests.browser.lab import SLOWDOWN
from tests.browser.test_editing import _index
from tests.browser.test_lab import _finish, _open_copy, _outputs, _type_parameters
from tests.interrupts.moments import WALKS, described, matches, wanted

MNIST = catalogue.case("graphcore/mnist")
WALK = WALKS["graphcore/mnist"]
EPOCH_2 = next(m for m in WALK.moments if m.phase == "epoch 2/2")

pytestmark = pytest.mark.timing  # a stop between two epochs: make test-flaky repeats it under load


def test_the_stop_button_between_two_epochs_keeps_the_finished_epoch(lab, browser_context, artifacts):
    notebook, copy = _open_copy(lab, browser_context, MNIST, "stopped")
    try:
        _type_parameters(notebook, copy, [(k, repr(v)) for k, v in dict(MNIST.parameters, epochs=2).items()])
        train = _index(copy, "graphcore.run_exercise(config)")
        notebook.start_run_all()
        # The first epoch's line ("Epoch 1/2: 12.3 s (includes warm-up)") is printed when it ends.
        notebook.page.wait_for_function(
            "i => /Epoch 1\\/2: [0-9.]+ s/.test(document.querySelectorAll("
            "'.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')[i].innerText)",
            arg=train, timeout=600000 * SLOWDOWN)
        notebook.panel().locator(".jp-Toolbar [data-command='notebook:interrupt-kernel']").first.click()
        notebook.run_all_finished(MNIST.timeout)
        notebook.save()
        errors = [o for _, o in _outputs(copy) if o["output_type"] == "error"]
        assert not errors and not notebook.error_texts(), (errors, notebook.error_texts())
        runs = [run for run in results.read(str(copy)).runs if run.exercise == "graphcore/mnist"]
        landed = [m for m in WALK.from_(EPOCH_2) if matches(m, runs, "")]
        assert landed, "the stop button after epoch 1 kept {}; wanted {}".format(
            described(runs, ""), " or ".join(wanted(m) for m in WALK.from_(EPOCH_2)))
        assert "interrupted: partial run" in notebook.output_text(_index(copy, "graphcore.show(run)")) or \
            landed[0].status == "complete"
    finally:
        _finish(notebook, lab, artifacts, MNIST, "stopped")
