"""docs/architecture.md's "Adding a testbed exercise", followed in a temporary folder.

A minimal exercise ("acme/classifier": a logistic regression on generated data) is written as
the recipe says: a package with its spec, its table of metrics, its plan and run steps and its report,
and a notebook of the five steps every exercise has (spec, plan, run_exercise, show, record) whose
metadata names the spec. Then `labkit run` checks its parameters before a
kernel starts, runs it with papermill, and the executed notebook records the run. If labkit's
public API moves, the recipe (and this test) must move with it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from labkit import results

FILES = {
    "acme/__init__.py": '''
        """The Acme exercise (the recipe's example): a classifier on generated data."""
        from acme.exercise import plan, run_exercise
        from acme.report import metrics_table, show
        from acme.spec import ACME_SPEC, SPEC

        __all__ = ["SPEC", "ACME_SPEC", "plan", "run_exercise", "show", "metrics_table"]
    ''',
    "acme/spec.py": '''
        from labkit.params import Param, Spec

        __all__ = ["SPEC", "ACME_SPEC"]

        ACME_SPEC = Spec(
            "acme/classifier",
            Param("epochs", int, 5, min=1, max=100, help="passes over the training set"),
            Param("learning_rate", float, 0.5, min=0, min_exclusive=True, help="SGD step size"),
            Param("seed", int, 0, help="seeds the data and the weights"),
            Param("device", str, "auto", choices=["auto", "cuda", "mps", "cpu"], help="where to train"),
        )
        SPEC = ACME_SPEC
    ''',
    "acme/exercise.py": '''
        from labkit import devices, interrupts
        from labkit.plans import RunPlan, device_why

        from acme.run import run_classifier

        __all__ = ["plan", "run_exercise"]


        def plan(config):
            device = devices.torch_device(config.device)
            return RunPlan("portable", "portable PyTorch on {}".format(device), device_why("device", config.device, device),
                           device)


        _plan_step = plan


        @interrupts.run_step
        def run_exercise(config, plan=None):
            chosen = plan if plan is not None else _plan_step(config)
            return run_classifier(config, chosen.device)
    ''',
    "acme/metrics.py": '''
        from labkit.metrics import Metric, MetricTable

        __all__ = ["ACME_METRICS"]

        ACME_METRICS = MetricTable(
            ("acme/classifier",),
            Metric("train_accuracy", "%", "share of the training points classified right", primary=True),
            Metric("final_loss", "", "cross-entropy of the last epoch"),
            Metric("train_time", "s", "seconds of training", timing=True),
        )
    ''',
    "acme/run.py": '''
        import time

        from acme.metrics import ACME_METRICS
        from labkit import divergence, interrupts, progress
        from labkit.results import Run

        __all__ = ["run_classifier"]


        def run_classifier(config, device):
            import torch

            torch.manual_seed(config.seed)
            x = torch.randn(512, 2)
            x, y = x.to(device), (x[:, 0] + x[:, 1] > 0).long().to(device)
            model = torch.nn.Linear(2, 2).to(device)
            optimizer = torch.optim.SGD(model.parameters(), lr=config.learning_rate)
            run = Run("acme/classifier", source="portable", params=config.to_dict())
            losses, started = [], time.perf_counter()
            with interrupts.graceful() as stop:
                for epoch in progress.bar(range(config.epochs), total=config.epochs, desc="Epochs"):
                    if stop.requested:
                        line = interrupts.where(epoch=epoch, epochs=config.epochs)
                        print(line)
                        run.mark_interrupted(line, "fewer epochs than asked")
                        break
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    losses.append(float(loss))
            accuracy = 100.0 * float((model(x).argmax(1) == y).float().mean())
            ACME_METRICS.add(run, "train_accuracy", round(accuracy, 2))
            ACME_METRICS.add(run, "final_loss", round(losses[-1], 4))
            ACME_METRICS.add(run, "train_time", time.perf_counter() - started)
            run.add_series("loss", list(range(1, len(losses) + 1)), losses, x_label="epoch")
            if divergence.loss_divergence(losses):
                run.status = "diverged"
            return run
    ''',
    "acme/report.py": '''
        from labkit import display

        __all__ = ["metrics_table", "show"]


        def metrics_table(run):
            import pandas as pd

            return pd.DataFrame({"value": run.metrics, "unit": run.units})


        def show(run):
            return display.shown([display.show(metrics_table(run))])
    ''',
}

CELLS = [
    ("markdown", [], "# Acme: a classifier\\nThe recipe's example exercise."),
    ("code", ["parameters"], "epochs = 5  # passes over the training set\\nlearning_rate = 0.5\\nseed = 0\\ndevice = 'auto'"),
    ("code", [], "import acme\\nfrom labkit import results\\n\\nconfig = acme.SPEC.from_notebook(globals())"),
    ("code", [], "acme.plan(config)"),
    ("code", [], "run = acme.run_exercise(config)"),
    ("code", [], "acme.show(run)"),
    ("code", [], "results.record(run)"),
]


def _write_exercise(folder: Path) -> Path:
    for name, text in FILES.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())
    cells = [{"cell_type": kind, "metadata": {"tags": tags} if tags else {}, "source": source.replace("\\n", "\n"),
              **({"outputs": [], "execution_count": None} if kind == "code" else {})}
             for kind, tags, source in CELLS]
    notebook = folder / "classifier.ipynb"
    notebook.write_text(json.dumps({
        "cells": cells, "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                     "labkit": {"spec": "acme:SPEC"}}}))
    return notebook


def _labkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labkit", *args], cwd=str(cwd), capture_output=True, text=True,
                          timeout=600)


def test_an_exercise_built_from_the_recipe_runs_through_labkit_run(tmp_path):
    notebook = _write_exercise(tmp_path)
    done = _labkit("run", str(notebook), str(tmp_path / "out.ipynb"), "-p", "epochs", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    (run,) = results.read(str(tmp_path / "out.ipynb")).runs
    assert run.exercise == "acme/classifier" and run.status == "complete" and run.source == "portable"
    assert run.params["epochs"] == 3 and len(run.series["loss"]["x"]) == 3
    assert run.units["train_accuracy"] == "%" and 50 <= run.metrics["train_accuracy"] <= 100
    shown = (tmp_path / "out.ipynb").read_text()
    assert "Where: portable PyTorch on" in shown and "train_accuracy" in shown  # the plan, then the show step
    sys.path.insert(0, str(tmp_path))
    try:
        from acme.metrics import ACME_METRICS

        assert ACME_METRICS.check(run) == [] and ACME_METRICS.timings == ("train_time",)
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "acme" or m.startswith("acme.")]:
            del sys.modules[name]


def test_its_parameters_are_checked_before_a_kernel_starts(tmp_path):
    notebook = _write_exercise(tmp_path)
    done = _labkit("run", str(notebook), str(tmp_path / "out.ipynb"), "-p", "epochs", "zero", cwd=tmp_path)
    assert done.returncode != 0
    assert "epochs" in done.stderr and "int" in done.stderr, done.stderr
    assert not (tmp_path / "out.ipynb").exists()  # refused before papermill ran anything
