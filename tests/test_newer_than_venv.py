"""tests/newer_than_venv.py, which lets `make test-prerelease` skip a second run on the very releases `make test` ran."""

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent / "newer_than_venv.py"


def _installed(folder: Path, name: str, version: str) -> None:
    info = folder / "{}-{}.dist-info".format(name.replace("-", "_"), version)
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: {}\nVersion: {}\n".format(name, version))


def _run(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(folder)], capture_output=True, text=True, timeout=60)


def test_a_folder_of_the_venvs_own_releases_is_nothing_new(tmp_path):
    for name in ("nbclient", "jupyter_client"):
        _installed(tmp_path, name, metadata.version(name))
    done = _run(tmp_path)
    assert (done.returncode, done.stdout) == (3, ""), done


@pytest.mark.parametrize("what", ["a pre-release", "a package the venv lacks"])
def test_one_release_the_venv_does_not_have_is_named_and_run(tmp_path, what):
    _installed(tmp_path, "nbclient", metadata.version("nbclient"))
    if what == "a pre-release":
        _installed(tmp_path, "traitlets", "99.0.0b1")
        expected = "traitlets: {} -> 99.0.0b1".format(metadata.version("traitlets"))
    else:
        _installed(tmp_path, "not-a-labkit-dependency", "1.0")
        expected = "not-a-labkit-dependency: not installed -> 1.0"
    done = _run(tmp_path)
    assert (done.returncode, done.stdout.splitlines()) == (0, [expected]), done


def test_an_empty_folder_is_an_error_not_a_pass(tmp_path):
    done = _run(tmp_path)
    assert done.returncode == 1 and "no installed distribution there" in done.stderr, done
