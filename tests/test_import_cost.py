"""What a notebook's imports cost every kernel that runs it: no heavy library before a cell needs it.

A kernel starts for every notebook a student runs, every sweep point and every graded hand-in; a
library imported at the top costs each of them its import time (scipy.stats about a second, torch
two or more) even where the notebook never calls it.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*/*.ipynb"))
#: imported by the code that uses them, never by a notebook's import lines
HEAVY = ("torch", "transformers", "scipy.stats", "matplotlib.pyplot", "onnxruntime", "datasets", "openai")


def _import_lines(path: Path):
    cells = json.loads(path.read_text())["cells"]
    return [line for cell in cells if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if line.startswith(("import ", "from "))]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name + "/" + p.stem)
def test_a_notebooks_imports_load_no_heavy_library(path):
    lines = _import_lines(path)
    assert any("labkit" in line for line in lines), "{} imports no labkit".format(path)
    code = "\n".join(lines + ["import sys", "print(' '.join(m for m in {!r} if m in sys.modules))".format(HEAVY)])
    done = subprocess.run([sys.executable, "-c", code], cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [], "{}: its imports load {}".format(path.relative_to(ROOT), done.stdout.strip())
