"""The house rules of docs/architecture.md, checked on the source so they stay true.

- one package per exercise: notebooks/<exercise>/ has labkit/testbeds/<exercise>/;
- no import cycle among labkit's modules, counting imports inside functions and the package
  ``__init__`` that importing a submodule runs;
- no private name (``_x``) of one labkit module used by another;
- every name a notebook cell takes from labkit is in that module's ``__all__``, and every
  ``__all__`` name exists.

There is no limit on a module's length: a module is as long as its one idea, and the layers and
the absence of cycles are what keep the ideas apart.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "labkit"


def _modules() -> Dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[Tuple[str, str]]:
    """(module, name) pairs an import statement takes; name is "" for ``import x``."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            yield alias.name, ""
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
        for alias in node.names:
            yield base, alias.name


def _known(name: str) -> str:
    """The labkit module a dotted name lives in ("" when not labkit's)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _ancestors(module: str) -> List[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def imports_of(module: str, path: Path) -> Set[str]:
    """Every labkit module that importing ``module``, or calling any of its functions, may run.

    Imports inside functions count (a late import that dodges a cycle is still one at run time),
    and so does each package ``__init__`` on the way to the module named: importing
    ``labkit.logs.base`` runs ``labkit/logs/__init__.py`` first. A module's own parent packages
    are left out: Python runs them before the module, whoever imports it.
    """
    tree = ast.parse(path.read_text())
    found = set()
    for node in ast.walk(tree):
        for base, name in _imported(node, module, path.name == "__init__.py"):
            target = _known(base + "." + name if name else base) or _known(base)
            if not target:
                continue
            for step in _ancestors(target) + [target]:
                if step in MODULES and step != module and step not in _ancestors(module):
                    found.add(step)
    return found


def import_cycles() -> List[List[str]]:
    """The strongly connected components (more than one module) of the import graph (Tarjan)."""
    graph = {m: imports_of(m, p) for m, p in MODULES.items()}
    cycles, index, low, stack, on = [], {}, {}, [], set()

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def layers() -> List[Tuple[str, List[str]]]:
    """docs/architecture.md's layer table, top layer first: [(layer, [module prefixes])]."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    block = text.split("<!-- layers:", 1)[1].split("```", 2)[1]
    return [(line.split()[0], line.split()[1:]) for line in block.strip().splitlines()]


def layer_of(module: str, table: List[Tuple[str, List[str]]]) -> int:
    """The index of the layer whose most specific prefix names ``module`` (0 is the top)."""
    best, depth = -1, -1
    for index, (_, prefixes) in enumerate(table):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and prefix.count(".") > depth:
                best, depth = index, prefix.count(".")
    return best


def test_every_import_goes_down_the_layers_the_docs_draw():
    table = layers()
    assert [name for name, _ in table][:2] == ["cli", "grading"] and table[-1][0] == "foundations"
    unplaced = sorted(m for m in MODULES if layer_of(m, table) < 0)
    assert not unplaced, "modules in no layer of docs/architecture.md: {}".format(unplaced)
    upward = []
    for module, path in MODULES.items():
        for target in imports_of(module, path):
            if layer_of(target, table) < layer_of(module, table):
                upward.append("{} ({}) imports {} ({})".format(module, table[layer_of(module, table)][0], target,
                                                              table[layer_of(target, table)][0]))
    assert not upward, upward


def test_every_exercise_notebook_folder_has_its_package():
    folders = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir() and list(p.glob("*.ipynb")))
    missing = [f for f in folders if "labkit.testbeds." + f not in MODULES]
    assert folders and not missing, "notebooks/<x>/ without labkit/testbeds/<x>/: {}".format(missing)


def test_no_import_cycles():
    cycles = import_cycles()
    assert not cycles, "import cycles (function-level imports and package __init__s counted): {}".format(cycles)


def test_no_private_names_across_modules():
    found = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        names = set()  # local names bound to labkit modules or their members
        for node in ast.walk(tree):
            for base, name in _imported(node, module, path.name == "__init__.py"):
                if not base.startswith("labkit"):
                    continue
                if name.startswith("_") and not name.startswith("__"):
                    found.append("{}: imports {}.{}".format(module, base, name))
                alias = next(a for a in node.names if a.name == (name or base))
                names.add((alias.asname or alias.name).split(".")[0])
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                found.append("{}:{}: uses {}.{}".format(module, node.lineno, node.value.id, node.attr))
    assert not found, found


@pytest.mark.parametrize("module", sorted(m for m, p in MODULES.items() if "__all__" in p.read_text()))
def test_every_all_name_exists(module):
    loaded = importlib.import_module(module)
    missing = [name for name in loaded.__all__ if not hasattr(loaded, name)]
    assert not missing, "{}.__all__ lists missing names {}".format(module, missing)


def _notebook_uses() -> Iterator[Tuple[str, str, str]]:
    """(notebook, module, name) for every labkit name a notebook's code cells use."""
    for notebook in sorted((ROOT / "notebooks").rglob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        source = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        tree = ast.parse(source)
        aliases = {}
        for node in ast.walk(tree):
            for base, name in _imported(node, "", False):
                if not base.startswith("labkit"):
                    continue
                alias = next(a for a in node.names if a.name == (name or base))
                dotted = base + "." + name if name else base
                if dotted in MODULES:
                    aliases[alias.asname or alias.name] = dotted
                else:
                    yield notebook.name, base, name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                yield notebook.name, aliases[node.value.id], node.attr


def test_every_name_a_notebook_uses_is_public():
    uses = sorted(set(_notebook_uses()))
    assert len(uses) > 20  # the parser found the notebooks' calls
    missing = []
    for notebook, module, name in uses:
        public = getattr(importlib.import_module(module), "__all__", None)
        if public is None or name not in public:
            missing.append("{} uses {}.{}".format(notebook, module, name))
    assert not missing, missing


def test_every_command_module_has_the_one_cli_layout():
    """docs/architecture.md, CLI: cli.py in the package the command drives; register + main."""
    import argparse

    from labkit import cli

    parser = cli.build_parser()
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    listed = {action.dest: action.help for action in choices._choices_actions}
    problems = []
    for command, name in cli.COMMANDS.items():
        module = importlib.import_module(name)
        if not name.endswith(".cli") or name == "labkit.cli":
            problems.append("{}: {} is not the cli.py of the package the command drives".format(command, name))
        if list(getattr(module, "__all__", [])) != ["register", "main"]:
            problems.append("{}: __all__ is {}, not ['register', 'main']".format(name, getattr(module, "__all__", None)))
        sub = choices.choices[command]
        func = sub.get_default("func") or next(
            (a.choices[c].get_default("func") for a in sub._actions if isinstance(a, argparse._SubParsersAction)
             for c in a.choices), None)
        if func is not module.main:
            problems.append("{}: the parser's func is {}, not {}.main".format(command, func, name))
        if not listed.get(command) or sub.description != module.__doc__:
            problems.append("{}: needs a help line and its module docstring as description".format(command))
        if "Exit status" not in (module.__doc__ or ""):
            problems.append("{}: its docstring does not say its exit status".format(name))
    assert not problems, problems


#: The one module that may use other packages' private names: it checks them at import.
UPSTREAM_ADAPTER = "labkit.execute.upstream"
#: Private by name, public in use: torch's fused list ops back torch.optim's ``foreach`` path, and
#: their tests run on every platform; the MNIST step's test compares them with torch.optim.SGD.
ALLOWED_PRIVATE = {("labkit.testbeds.graphcore.train", "_foreach_add_")}
#: Python's own underscored functions are documented (``os._exit``, ``sys._getframe``).
STDLIB = set(getattr(sys, "stdlib_module_names", ())) or {"os", "sys"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_private_names_of_other_packages_are_used_only_in_the_adapter():
    found = []
    for module, path in MODULES.items():
        if module == UPSTREAM_ADAPTER:
            continue
        tree = ast.parse(path.read_text())
        names = set()  # local names bound to other packages' modules or their members
        for node in ast.walk(tree):
            for base, name in _imported(node, module, path.name == "__init__.py"):
                if base.startswith("labkit") or base.split(".")[0] in STDLIB:
                    continue
                if _private(name or "") or any(_private(part) for part in base.split(".")):
                    found.append("{}: imports {} {}".format(module, base, name))
                alias = next(a for a in node.names if a.name == (name or base))
                names.add((alias.asname or alias.name).split(".")[0])
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _private(node.attr)):
                continue
            on_import = isinstance(node.value, ast.Name) and node.value.id in names
            on_super = (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                        and node.value.func.id == "super")
            if (on_import or on_super) and (module, node.attr) not in ALLOWED_PRIVATE:
                found.append("{}:{}: uses .{}".format(module, node.lineno, node.attr))
        if module.endswith("__main__"):  # importing it runs it
            continue
        loaded = importlib.import_module(module)
        for cls in vars(loaded).values():
            if not (inspect.isclass(cls) and cls.__module__ == module):
                continue
            upstream = [base for base in cls.__mro__[1:] if not base.__module__.startswith("labkit")]
            for name, value in vars(cls).items():
                defined = inspect.isfunction(value) or isinstance(value, (classmethod, staticmethod, property))
                if defined and _private(name) and any(name in vars(base) for base in upstream):
                    found.append("{}: {} overrides {}".format(module, cls.__name__, name))
    assert not found, "private names of other packages outside {}: {}".format(UPSTREAM_ADAPTER, found)
