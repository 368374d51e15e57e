"""labkit.data.cache: one rule for labkit's cache directory, used by datasets and the Groq models."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from labkit.data.cache import cache_dir, data_dir

RULE_VARIABLES = ("LABKIT_CACHE_DIR", "XDG_CACHE_HOME", "LABKIT_DATA_DIR")


@pytest.fixture
def clean(monkeypatch, tmp_path):
    for name in RULE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path


def test_labkit_cache_dir_comes_first(clean, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(clean / "xdg"))
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(clean / "mine"))
    assert cache_dir() == clean / "mine"


def test_then_the_xdg_cache_home(clean, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(clean / "xdg"))
    assert cache_dir() == clean / "xdg" / "labkit"


def test_then_the_platforms_own_cache_folder(clean, monkeypatch):
    expected = ("Library", "Caches", "labkit") if sys.platform == "darwin" else (".cache", "labkit")
    assert cache_dir() == clean.joinpath("home", *expected)


def test_datasets_live_in_the_same_cache_unless_a_data_dir_is_given(clean, monkeypatch):
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(clean / "mine"))
    assert data_dir(None, "mnist") == clean / "mine" / "mnist"
    monkeypatch.setenv("LABKIT_DATA_DIR", str(clean / "staged"))
    assert data_dir(None, "mnist") == clean / "staged"
    assert data_dir(str(clean / "parameter"), "mnist") == clean / "parameter"


def test_the_golden_passes_empty_cache_settings_agree(clean, monkeypatch):
    """tests/golden/cpu_kernels.py sets both variables for an empty cache: both rules give one folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(clean / "cache"))
    from_xdg = cache_dir()
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(clean / "cache" / "labkit"))
    assert cache_dir() == from_xdg


def test_the_groq_models_are_cached_there(clean, monkeypatch):
    from labkit.testbeds.groq import models

    monkeypatch.setenv("XDG_CACHE_HOME", str(clean / "xdg"))
    built = clean / "xdg" / "labkit" / "models" / "labkit-bert-tiny-sst2-offline"
    assert models.short_source(str(built)) == "$LABKIT_CACHE_DIR/models/labkit-bert-tiny-sst2-offline"
    assert Path(models.short_source(str(clean / "elsewhere"))) == clean / "elsewhere"
