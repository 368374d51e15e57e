"""The cerebras package: what both courses share, each exercise a sibling sub-package of one shape."""

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import labkit.testbeds.cerebras as cerebras
from labkit.plans import RunPlan

MODULES = sorted(info.name for info in pkgutil.walk_packages(cerebras.__path__, cerebras.__name__ + "."))
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", MODULES)
def test_each_module_names_only_what_it_has(name):
    module = importlib.import_module(name)
    missing = [public for public in getattr(module, "__all__", []) if not hasattr(module, public)]
    assert not missing, "{} lists {} in __all__ but lacks them".format(name, missing)


def test_the_shared_package_imports_neither_exercise():
    code = ("import sys, labkit.testbeds.cerebras as c, labkit.testbeds.cerebras.stream; "
            "print(sorted(m for m in sys.modules if m.startswith('labkit.testbeds.cerebras.')))")
    out = subprocess.run([sys.executable, "-c", code], cwd=str(REPO), stdout=subprocess.PIPE, text=True, check=True)
    assert out.stdout.strip() == "['labkit.testbeds.cerebras.stream']"


@pytest.mark.parametrize("exercise", ["bert_large", "llama2_7b"])
def test_each_exercise_has_the_one_shape(exercise):
    package = importlib.import_module("labkit.testbeds.cerebras." + exercise)
    shape = {"SPEC": "spec", "METRICS": "metrics", "plan": "exercise", "run_exercise": "exercise", "show": "report"}
    for name, module in shape.items():
        assert name in package.__all__
        defined = getattr(package, name)
        home = importlib.import_module("{}.{}".format(package.__name__, module))
        assert getattr(home, name) is defined, "{}.{} is not the one in {}.py".format(exercise, name, module)
    assert package.SPEC.name == "cerebras/" + exercise
    assert package.SPEC.name in package.METRICS.exercises
    assert list(inspect.signature(package.run_exercise).parameters) == ["config", "plan"]


def test_plans_are_run_plans(tmp_path):
    from labkit.testbeds.cerebras import bert_large, llama2_7b

    log = tmp_path / "run.log"
    log.write_text("2024-04-05 16:17:26,961 INFO:   Effective batch size is 1024.\n")
    chosen = bert_large.plan(bert_large.SPEC.validate({"log_path": str(log)}))
    assert isinstance(chosen, RunPlan) and chosen.path == "log"
    assert str(chosen) == ("Where: reads the log at {} (a CS-2 run; nothing is trained)\n"
                           "Why: log_path is set: the run is read from that log".format(log))
    assert isinstance(llama2_7b.plan(llama2_7b.SPEC.validate({"log_path": str(log)})), RunPlan)


def test_2024_hand_ins_still_find_their_names_in_the_cerebras_package():
    # A 2024 hand-in says `from labkit.testbeds import cerebras` and its metadata labkit.testbeds.cerebras:SPEC.
    from labkit.testbeds.cerebras import bert_large

    assert {"SPEC", "plan", "run_exercise", "show", "compare", "comparison_table", "format_table",
            "plot_comparison"} == set(cerebras.__all__)
    for name in cerebras.__all__:
        assert getattr(cerebras, name) is getattr(bert_large, name)
    with pytest.raises(AttributeError, match="labkit.testbeds.cerebras.*BERT_SPEC"):
        cerebras.BERT_SPEC
