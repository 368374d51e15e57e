"""Regenerate the golden executed notebooks that `pytest --nbval` replays.

    make golden                                   # all of them
    .venv/bin/python tests/golden/regenerate.py graphcore/mnist

Each entry of tests/golden/golden.yml is executed with papermill at its small parameters,
with the same environment `make test` gives nbval (text progress bars, MNIST from
LABKIT_DATA_DIR), into tests/golden/<key>.ipynb. An entry with ``portable_runs: true`` (the
homework) first makes, beside its golden copy, the runs a student without a testbed account
hands in (``tests/homework/portable_student.py``: the lab book's notebooks, portably, at tiny
sizes, into ``runs/<testbed>/``), so the golden homework is filled from portable runs. An entry
whose ``portable_runs`` names ``module:function`` (the 2025 homework) has that function make its
evidence beside the golden copy instead (CS-3 logs and portable runs, into their own folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import shutil

import papermill
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: `tests` is then importable

from tests.shared import real_mnist  # noqa: E402


def golden_environment() -> None:
    os.environ.setdefault("LABKIT_PROGRESS", "text")
    if real_mnist().is_dir():
        os.environ.setdefault("LABKIT_DATA_DIR", str(real_mnist()))


def main(keys) -> int:
    golden_environment()
    entries = yaml.safe_load((HERE / "golden.yml").read_text()) or {}
    unknown = [k for k in keys if k not in entries]
    if unknown:
        print("unknown golden keys: {}; known: {}".format(", ".join(unknown), ", ".join(entries)), file=sys.stderr)
        return 2
    for key in keys or list(entries):
        entry = entries[key]
        source = ROOT / entry["notebook"]
        target = HERE / (key + ".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.get("portable_runs") is True:
            from tests.homework import portable_student

            shutil.rmtree(str(target.parent / "runs"), ignore_errors=True)
            print("golden: portable runs -> {}".format((target.parent / "runs").relative_to(ROOT)))
            portable_student.make_runs(target.parent)
        elif entry.get("portable_runs"):
            from importlib import import_module

            module, _, function = entry["portable_runs"].partition(":")
            print("golden: evidence by {}".format(entry["portable_runs"]))
            getattr(import_module(module), function)(target.parent)
        print("golden: {} -> {}".format(source.relative_to(ROOT), target.relative_to(ROOT)))
        papermill.execute_notebook(
            str(source), str(target), parameters=entry.get("parameters") or {},
            cwd=str(target.parent), progress_bar=False, kernel_name="python3",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
