"""The registry of exercises (labkit/exercises.py) and the one shape every exercise has.

Every entry's module gives the notebook's five steps from the same modules (spec.py, metrics.py,
exercise.py, report.py), every notebook is an entry's, and the foundations that look exercises up
(labkit.logs, labkit.sweep) import none of them until a log or a sweep needs one.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from labkit import exercises
from labkit.logs.base import LineReader
from labkit.metrics import MetricTable
from labkit.params import Spec

ROOT = Path(__file__).resolve().parent.parent
WITH_MODULE = [e for e in exercises.ENTRIES if e.module]


def _package(module: str) -> str:
    loaded = importlib.import_module(module)
    return module if hasattr(loaded, "__path__") else module.rpartition(".")[0]


@pytest.mark.parametrize("entry", WITH_MODULE, ids=lambda e: e.name)
def test_every_exercise_has_the_one_shape(entry):
    exercise = entry.load()
    package = _package(entry.module)
    assert isinstance(exercise.SPEC, Spec) and exercise.SPEC.name == entry.name
    # a package's spec.py; the homework keeps each year's whole spec in its year module (fall2024, fall2025)
    home = package + ".spec" if importlib.util.find_spec(package + ".spec") else entry.module
    assert importlib.import_module(home).SPEC is exercise.SPEC
    assert isinstance(exercise.METRICS, MetricTable) and exercise.METRICS is entry.metric_table()
    assert entry.name in exercise.METRICS.exercises
    for step, module in (("plan", "exercise"), ("run_exercise", "exercise"), ("show", "report")):
        assert step in exercise.__all__, "{}.__all__ lacks {}".format(entry.module, step)
        function = getattr(exercise, step)
        assert inspect.unwrap(function).__module__ == "{}.{}".format(package, module), (step, function.__module__)
    parameters = inspect.signature(exercise.run_exercise).parameters
    assert [(p.name, p.default) for p in parameters.values()] == [("config", inspect.Parameter.empty), ("plan", None)]
    assert list(inspect.signature(exercise.plan).parameters) == ["config"]
    assert list(inspect.signature(exercise.show).parameters) == ["run"]


@pytest.mark.parametrize("entry", [e for e in exercises.ENTRIES if e.log_format], ids=lambda e: e.name)
def test_every_log_format_an_entry_names_has_its_reader(entry):
    reader = entry.log_reader()
    assert issubclass(reader, LineReader) and reader.format == entry.log_format
    assert entry.log_format in [f.name for f in exercises.log_formats()]


def test_every_notebook_is_an_entrys_and_imports_its_module():
    notebooks = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "notebooks").rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts)
    registered = sorted(e.notebook for e in exercises.ENTRIES if e.notebook)
    assert notebooks == registered
    for entry in WITH_MODULE:
        cells = json.loads((ROOT / entry.notebook).read_text())["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        parent, _, name = entry.module.rpartition(".")
        assert "from {} import {}".format(parent, name) in source, entry.notebook
        assert exercises.for_notebook(entry.notebook) is entry


def test_lookups_answer_by_name_and_name_what_is_known_when_they_cannot():
    assert exercises.entry("cerebras/llama2_7b").hardware == "CS-3"
    assert exercises.hardware("sambanova/inference") == "Metis/Sophia"
    assert exercises.hardware("graphcore/some_new_tutorial") == "IPU"  # a testbed's first label
    assert exercises.metric_table("graphcore/bert") is not exercises.metric_table("graphcore/mnist")
    assert exercises.metric_table("acme/unknown") is None
    with pytest.raises(exercises.UnknownExercise, match=r"'acme/x' is not registered; the exercises are graphcore/mnist"):
        exercises.entry("acme/x")
    with pytest.raises(exercises.UnknownExercise, match="format: 'poplar' is not a log format labkit reads"):
        exercises.log_format("poplar")
    with pytest.raises(exercises.UnknownExercise, match="graphcore/bert is read from testbed logs only"):
        exercises.entry("graphcore/bert").load()


@pytest.mark.parametrize("package", ["labkit.logs", "labkit.sweep", "labkit.exercises"])
def test_the_foundations_import_no_exercise(package):
    code = "import sys, {0}; print([m for m in sys.modules if m.startswith('labkit.testbeds')])".format(package)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_reading_a_log_imports_only_that_formats_reader():
    code = ("import sys, labkit.logs; labkit.logs.read('2024-03-14 03:20:31,277 INFO:   | Train Device=CSX, Step=100, "
            "Loss=7.1, Rate=100.0 samples/sec, GlobalRate=99.0 samples/sec'); "
            "print(sorted(m for m in sys.modules if m.startswith('labkit.testbeds') and m.endswith('.log')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['labkit.testbeds.cerebras.log']"


def test_the_tests_that_keep_a_case_per_exercise_have_one_for_every_entry():
    """The golden copies, the browser cases and the edit-and-rerun cases hold test data per exercise;
    a new entry without its cases fails here, not silently untested."""
    import yaml

    from tests.browser.cases import CASES
    from tests.test_editing_cells import EXERCISES

    with_notebook = sorted(e.name for e in exercises.ENTRIES if e.notebook)
    golden = yaml.safe_load((ROOT / "tests" / "golden" / "golden.yml").read_text())
    assert sorted(golden) == with_notebook
    assert sorted(c.key for c in CASES) == with_notebook
    assert sorted(EXERCISES) == with_notebook
    for name, case in EXERCISES.items():
        assert case.notebook == exercises.entry(name).notebook
