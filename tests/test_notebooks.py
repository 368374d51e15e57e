"""Every notebook under notebooks/: committed without outputs, a `parameters` cell whose values
are the spec's defaults, and the check right after it."""

import ast
import importlib
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").rglob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in NOTEBOOKS])
def test_committed_without_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, "{}: executed outputs".format(path.name)


SPEC_NOTEBOOKS = [p for p in NOTEBOOKS if nbformat.read(str(p), 4).metadata.get("labkit", {}).get("spec")]


@pytest.mark.parametrize("path", SPEC_NOTEBOOKS, ids=[str(p.relative_to(ROOT)) for p in SPEC_NOTEBOOKS])
def test_parameters_cell_matches_the_spec(path):
    nb = nbformat.read(str(path), as_version=4)
    module_name, attr = nb.metadata["labkit"]["spec"].split(":")
    spec = getattr(importlib.import_module(module_name), attr)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged parameters"
    assigned = {}
    for node in ast.parse(tagged[0].source).body:
        assert isinstance(node, ast.Assign), "the parameters cell holds only assignments"
        assigned[node.targets[0].id] = ast.literal_eval(node.value)
    assert assigned == spec.defaults()
    following = code[code.index(tagged[0]) + 1]
    assert "from_notebook(globals())" in following.source


def _package(path):
    """The exercise package a notebook's metadata names, below labkit.testbeds ("sambanova", "sambanova.inference")."""
    module = nbformat.read(str(path), 4).metadata["labkit"]["spec"].split(":")[0]
    return module[len("labkit.testbeds."):]


#: package below labkit.testbeds -> notebook; a testbed with two exercises has a sub-package for the second
EXERCISES = {_package(p): p for p in SPEC_NOTEBOOKS}


def test_every_spec_notebook_is_checked_once():
    assert len(EXERCISES) == len(SPEC_NOTEBOOKS), "two notebooks name one exercise package"


def five_steps(package):
    """The notebook-facing shape every exercise has (docs/architecture.md), as (cell source, step);
    the notebook names the package by its last part (``sambanova``, ``inference``)."""
    exercise = package.split(".")[-1]
    return [("config = {}.SPEC.from_notebook(globals())".format(exercise), "spec"),
            ("{}.plan(config)".format(exercise), "plan"),
            ("run = {}.run_exercise(config)".format(exercise), "run"),
            ("{}.show(run)".format(exercise), "show"),
            ("results.record(run)", "record")]


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_notebook_has_the_five_steps_in_order(exercise):
    """Each step is a cell of its own (the spec cell may also import, and show ``config``), in order,
    with the spec cell right after the parameters; the metadata names the package's SPEC."""
    nb = nbformat.read(str(EXERCISES[exercise]), as_version=4)
    code = [c.source.strip() for c in nb.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(c for c in nb.cells if c.cell_type == "code")
              if "parameters" in c.metadata.get("tags", [])]
    found = []
    for line, step in five_steps(exercise):
        if step == "spec":
            cells = [i for i, source in enumerate(code) if line in source.splitlines()]
        else:
            cells = [i for i, source in enumerate(code) if source == line]
        assert len(cells) == 1, "{}: one cell holding {!r}, found {}".format(exercise, line, len(cells))
        found.append(cells[0])
    assert found == sorted(found), "{}: the five steps are out of order: {}".format(exercise, found)
    assert found[0] == tagged[0] + 1, "{}: the spec cell comes right after the parameters".format(exercise)
    assert nb.metadata["labkit"]["spec"] == "labkit.testbeds.{}:SPEC".format(exercise)
    assert EXERCISES[exercise].parent.name == exercise.split(".")[0], "notebooks/<testbed>/ holds its testbed's exercises"


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_every_exercise_package_exports_the_five_steps(exercise):
    package = importlib.import_module("labkit.testbeds." + exercise)
    for name in ("SPEC", "plan", "run_exercise", "show"):
        assert name in package.__all__ and hasattr(package, name), "{}: {} not exported".format(exercise, name)
    assert package.SPEC.name.split("/")[0] == exercise.split(".")[0]
    if "." in exercise and not exercise.startswith("homework."):  # cerebras.llama2_7b runs cerebras/llama2_7b
        assert package.SPEC.name == exercise.replace(".", "/")
    if exercise.startswith("homework."):  # a year's homework: homework.fall2025 runs homework/ai_testbeds_2025
        assert package.SPEC.name.startswith("homework/ai_testbeds_")
    for name in ("plan", "run_exercise", "show"):
        assert getattr(package, name).__module__ != package.__name__, "{}.{} lives in __init__".format(exercise, name)
