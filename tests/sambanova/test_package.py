"""The SambaNova package's shape: one sub-package an exercise year, each with the one exercise
interface, and the 2024 notebook's names still answering at ``labkit.testbeds.sambanova``."""

import inspect
import subprocess
import sys

import pytest

from labkit.metrics import MetricTable
from labkit.params import Spec
from labkit.testbeds.sambanova import bert_large, inference


@pytest.mark.parametrize("exercise", [bert_large, inference], ids=["bert_large", "inference"])
def test_each_year_has_the_one_exercise_interface(exercise):
    assert {"SPEC", "METRICS", "plan", "run_exercise", "show"} <= set(exercise.__all__)
    assert isinstance(exercise.SPEC, Spec) and isinstance(exercise.METRICS, MetricTable)
    assert exercise.METRICS.exercises == (exercise.SPEC.name,)
    assert list(inspect.signature(exercise.plan).parameters) == ["config"]
    run_exercise = inspect.signature(exercise.run_exercise).parameters
    assert list(run_exercise) == ["config", "plan"] and run_exercise["plan"].default is None
    assert exercise.show.__module__ == exercise.__name__ + ".report"


def test_a_2024_hand_in_still_finds_its_names_and_only_then_imports_bert_large():
    # A fresh interpreter: here, other tests have imported bert_large already.
    code = "\n".join([
        "import sys",
        "from labkit.testbeds import sambanova",
        "loaded = sorted(m for m in sys.modules if m.startswith('labkit.testbeds.sambanova.'))",
        "assert loaded == [], loaded",
        "config = sambanova.SPEC.validate({'ntasks': 2, 'ntasks_per_node': 2})",
        "from labkit.testbeds.sambanova import bert_large, homework_runs",
        "assert sambanova.run_exercise is bert_large.run_exercise and homework_runs is bert_large.homework_runs",
        "try:",
        "    sambanova.BERT_SPEC",
        "except AttributeError as exc:",
        "    print(exc)",
        "print(config.ntasks)",
    ])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["module 'labkit.testbeds.sambanova' has no attribute 'BERT_SPEC'", "2"]
