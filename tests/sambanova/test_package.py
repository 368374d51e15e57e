"""The SambaNova package's shape: one sub-package an exercise year, each with the one exercise
interface, and the 2024 notebook's names still answering at ``labkit.testbeds.sambanova``."""

import inspect
import re
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
        "for old in ('BERT_SPEC', 'run_portable'):  # an alias gone; not a name the notebook calls",
        "    try:",
        "        getattr(sambanova, old)",
        "    except AttributeError as exc:",
        "        print(exc)",
        "print(config.ntasks)",
    ])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["module 'labkit.testbeds.sambanova' has no attribute 'BERT_SPEC'",
                                        "module 'labkit.testbeds.sambanova' has no attribute 'run_portable'", "2"]


def test_the_names_forwarded_are_the_ones_the_2024_notebook_calls():
    import json
    from pathlib import Path

    from labkit.testbeds import sambanova

    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "sambanova" / "bert_large.ipynb"
    source = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text())["cells"]
                       if c["cell_type"] == "code")
    called = set(re.findall(r"\bsambanova\.(\w+)", source))
    assert called == set(sambanova.__all__)
    assert all(getattr(sambanova, name) is getattr(bert_large, name) for name in called)
