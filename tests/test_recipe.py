"""docs/architecture.md's "Adding a testbed exercise", followed in a temporary folder.

A minimal exercise ("acme/classifier": a logistic regression on generated data) is written as
the recipe says: one package in the one shape (spec.py, metrics.py, exercise.py, report.py, log.py)
with its one registry entry (an ``Entry`` registered as a ``labkit.exercises`` entry point, as a
course's own package would), and a notebook of the five steps every exercise has (spec, plan,
run_exercise, show, record) whose metadata names the spec. Nothing in labkit is edited. Then `labkit
run` checks its parameters before a kernel starts and runs it, `labkit logs parse` detects and
reads the board's log with the package's reader, and the registry answers its hardware, metric
table and offering. If labkit's public API moves, the recipe (and this test) must move with it.
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
        from labkit.exercises import Entry, LogFormat

        from acme.exercise import plan, run_exercise
        from acme.metrics import METRICS
        from acme.report import show
        from acme.spec import SPEC

        __all__ = ["SPEC", "METRICS", "plan", "run_exercise", "show", "ENTRY"]

        #: The one registry entry (pyproject.toml: [project.entry-points."labkit.exercises"] acme = "acme:ENTRY").
        ENTRY = Entry("acme/classifier", "acme", "acme.metrics:METRICS", "Acme board", 2026, "classifier.ipynb",
                      LogFormat("acme", "acme.log:AcmeReader", (("ACME epoch", 6), ("acme-board", 4))),
                      "A classifier on the Acme board")
    ''',
    "acme/spec.py": '''
        from labkit.params import Param, Spec

        __all__ = ["SPEC"]

        SPEC = Spec(
            "acme/classifier",
            Param("epochs", int, 5, min=1, max=100, help="passes over the training set"),
            Param("learning_rate", float, 0.5, min=0, min_exclusive=True, help="SGD step size"),
            Param("seed", int, 0, help="seeds the data and the weights"),
            Param("device", str, "auto", choices=["auto", "cuda", "mps", "cpu"], help="where to train"),
        )
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

        __all__ = ["METRICS"]

        METRICS = MetricTable(
            ("acme/classifier",),
            Metric("train_accuracy", "%", "share of the training points classified right", primary=True),
            Metric("final_loss", "", "cross-entropy of the last epoch"),
            Metric("train_time", "s", "seconds of training", timing=True),
        )
    ''',
    "acme/log.py": '''
        import re

        from labkit.logs.base import LineReader, new_run, number

        from acme.metrics import METRICS

        __all__ = ["AcmeReader"]

        _EPOCH = re.compile(r"ACME epoch (\\d+) loss (\\S+) accuracy (\\S+)")


        class AcmeReader(LineReader):
            """The board's log: one "ACME epoch N loss L accuracy A" line per epoch."""

            format = "acme"

            def feed(self, line):
                found = _EPOCH.search(line)
                if found:
                    if not self.runs:
                        self.runs.append(new_run("acme/classifier"))
                    run = self.runs[-1]
                    run.params["epochs"] = int(found.group(1))
                    METRICS.add(run, "final_loss", number(found.group(2)))
                    METRICS.add(run, "train_accuracy", number(found.group(3)))
                    run.status = "complete"

            def finish(self):
                return self.runs
    ''',
    "acme/run.py": '''
        import time

        from acme.metrics import METRICS
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
            METRICS.add(run, "train_accuracy", round(accuracy, 2))
            METRICS.add(run, "final_loss", round(losses[-1], 4))
            METRICS.add(run, "train_time", time.perf_counter() - started)
            run.add_series("loss", list(range(1, len(losses) + 1)), losses, x_label="epoch")
            if divergence.loss_divergence(losses):
                run.status = "diverged"
            return run
    ''',
    "acme/report.py": '''
        from labkit import display

        __all__ = ["show"]


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
    ("code", [], "from labkit import results\\nimport acme\\n\\nconfig = acme.SPEC.from_notebook(globals())"),
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
    # what `pip install` of the package makes of its one registry entry (the entry point)
    dist = folder / "acme_exercise-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-exercise\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[labkit.exercises]\nacme = acme:ENTRY\n")
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
        from acme.metrics import METRICS

        assert METRICS.check(run) == [] and METRICS.timings == ("train_time",)
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


def test_its_one_registry_entry_is_all_labkit_needs_to_know_it(tmp_path):
    """The registry, the log reader, format detection and the metric table find the new exercise
    through its entry alone: nothing in labkit was edited."""
    _write_exercise(tmp_path)
    (tmp_path / "board-run.log").write_text("acme-board v2\nACME epoch 1 loss 0.70 accuracy 61.5\n"
                                            "ACME epoch 2 loss 0.41 accuracy 88.0\n")
    done = _labkit("logs", "parse", "board-run.log", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "acme format, 1 run" in done.stdout and "acme/classifier [complete] epochs=2" in done.stdout
    assert "train_accuracy = 88 %" in done.stdout
    code = ("from labkit import exercises\n"
            "entry = exercises.entry('acme/classifier')\n"
            "print(entry.hardware, entry.load().SPEC.name, exercises.metric_table('acme/classifier').primary)\n"
            "print(exercises.for_notebook('classifier.ipynb').name, exercises.offerings()[2026])\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["Acme board acme/classifier ('train_accuracy',)",
                                        "acme/classifier ['classifier.ipynb']"]
