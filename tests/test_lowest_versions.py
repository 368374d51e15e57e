"""tests/lowest_versions.py: the pins `make test-lowest` installs come from pyproject.toml's floors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tomllib")  # the script reads pyproject.toml with Python 3.11's tomllib

from tests import lowest_versions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

PYPROJECT = """
[project]
name = "x"
dependencies = ["torch>=2.0", "numpy", "papermill >= 2.4.1 ; python_version >= '3.8'"]
[project.optional-dependencies]
bert = ["transformers>=4.30", "tokenizers>=0.13.2"]
serve = ["transformers>=4.40", "openai[datalib]>=1.0,<4"]
"""


def test_each_package_gets_its_highest_floor_among_the_extras_named():
    assert lowest_versions.floors(PYPROJECT, ["bert"], ["torch", "transformers", "papermill"]) == {
        "torch": "2.0", "transformers": "4.30", "papermill": "2.4.1"}
    assert lowest_versions.floors(PYPROJECT, ["bert", "serve"], ["transformers", "openai"]) == {
        "transformers": "4.40", "openai": "1.0"}


def test_a_package_without_a_floor_is_an_error_naming_it():
    with pytest.raises(SystemExit, match="numpy: no '>=' floor"):
        lowest_versions.floors(PYPROJECT, [], ["numpy"])
    with pytest.raises(SystemExit, match="openai: no '>=' floor"):  # declared only in an extra not named
        lowest_versions.floors(PYPROJECT, ["bert"], ["openai"])


def test_an_unknown_extra_is_an_error_naming_it():
    with pytest.raises(SystemExit, match="--extra servve: not an extra of pyproject.toml"):
        lowest_versions.floors(PYPROJECT, ["servve"], ["torch"])


def test_the_pins_for_this_pyproject():
    out = subprocess.run([sys.executable, "tests/lowest_versions.py", "--extra", "serve", "--extra", "llm",
                          "torch", "transformers", "openai"], cwd=str(ROOT), stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    pins = dict(line.split("==") for line in out.splitlines())
    assert set(pins) == {"torch", "transformers", "openai"}
    # pip installs one transformers for both extras: the pin is the floor they declare
    assert pins["transformers"] == lowest_versions.floors(
        lowest_versions.PYPROJECT.read_text(encoding="utf-8"), ["serve"], ["transformers"])["transformers"]
