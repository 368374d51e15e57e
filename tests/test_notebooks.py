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
