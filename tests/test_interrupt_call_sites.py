"""An exercise declares its run and show steps, keeps what it measured and names its phases on the
one stop flag ``interrupts.keep`` returns: nothing else of labkit's interrupt modules is spread
through its code, so a reader of an exercise meets interrupts in a handful of places."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

import pytest

import labkit

#: The package an interrupt's handling lives in.
INTERRUPT_MODULES = {"interrupts"}
#: The most references to them one exercise may hold.
MOST = 5
TESTBEDS = Path(labkit.__file__).parent / "testbeds"
EXERCISES = ["graphcore", "cerebras/bert_large", "cerebras/llama2_7b", "sambanova/bert_large", "sambanova/inference", "groq",
             "comparison", "homework"]


def _from_interrupts(module: str) -> bool:
    parts = module.split(".")
    return len(parts) > 1 and parts[0] == "labkit" and parts[1] in INTERRUPT_MODULES


def call_sites(source: str) -> List[str]:
    """Every reference in ``source`` to a name of the interrupt modules: ``interrupts.keep`` or a name
    imported from them (``run_step``, used as a decorator too); the stop flag's own methods are not."""
    tree = ast.parse(source)
    imported = {alias.asname or alias.name for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module and _from_interrupts(node.module)
                for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in INTERRUPT_MODULES:
            found.append("{}.{} (line {})".format(node.value.id, node.attr, node.lineno))
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in imported:
            found.append("{} (line {})".format(node.id, node.lineno))
    return found


def test_call_sites_counts_module_attributes_and_imported_names_but_not_the_stop_flag():
    source = ("from labkit import interrupts\nfrom labkit.interrupts import run_step\n\n@run_step\ndef f(config):\n"
              "    stop = interrupts.keep(lambda: None)\n    stop.phase('training')\n    return stop.requested\n")
    assert sorted(site.split(" ")[0] for site in call_sites(source)) == ["interrupts.keep", "run_step"]


@pytest.mark.parametrize("exercise", EXERCISES)
def test_an_exercise_calls_into_interrupts_in_a_handful_of_places(exercise):
    sites = []
    for path in sorted((TESTBEDS / exercise).rglob("*.py")):
        sites += ["{}: {}".format(path.relative_to(TESTBEDS), site) for site in call_sites(path.read_text())]
    assert len(sites) <= MOST, "{} references to the interrupt modules:\n{}".format(len(sites), "\n".join(sites))
