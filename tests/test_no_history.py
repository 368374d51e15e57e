"""Code, tests, benchmarks, notebooks, docs, the Makefile and CI say why things are, not when they changed.

A work-log reference ("stop 44", "stops 43 and 44", "issue 36", "#36") tells a reader of the code
nothing they can use: git log keeps that history. An upstream project's issue is evidence and may
stay, written with the project's name right before it ("papermill #511", "papermill issue #55",
"pytorch issue 18853"). Lines are joined across comment markers first, so a reference broken over
two comment lines is found too.
"""

import re
import subprocess
from pathlib import Path
from typing import Iterator, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ["labkit", "tests", "docs", "benchmarks", "notebooks", ".ci", "Makefile", "README.md"]
#: Projects whose issue numbers may be cited (the name stands right before the number).
UPSTREAM = {"papermill", "pytorch", "torch", "nbclient", "nbformat", "ipykernel", "jupyter_client",
            "jupyterlab", "tqdm", "transformers", "vllm", "poptorch", "groqflow", "modelzoo", "cpython"}
STOP = re.compile(r"(?<![A-Za-z])stops?[ _-]?[0-9]+(?![0-9])(?:(?:,| and| or) [0-9]+(?![0-9]))*", re.I)
# "issue 36", "issue_36", "issues #36"; or a bare "#36" after a space or bracket (not a colour, "fill:#777").
ISSUE = re.compile(r"(?<![A-Za-z])issues?[ _-]?#?[0-9]+(?![0-9])|(?<![^\s(\[])#[0-9]+(?![0-9A-Za-z])", re.I)
# The word just before a reference: the project it belongs to, when it is one of UPSTREAM.
_OWNER = re.compile(r"([\w.-]+)(?:'s)? (?:issues? ?)?$", re.I)
# A line's indent and leading comment marker, dropped when lines are joined.
_MARKER = re.compile(r"^\s*(?:#:?|//|\*|>)?\s*")


def _files() -> List[Path]:
    """The tracked files under SCANNED (every file there when this is no git checkout)."""
    try:
        listed = subprocess.run(["git", "ls-files", "-z", "--"] + SCANNED, cwd=str(ROOT), check=True,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.decode()
        paths = [ROOT / p for p in listed.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for top in SCANNED for p in ([ROOT / top] if (ROOT / top).is_file()
                                                  else (ROOT / top).rglob("*"))]
    this = Path(__file__).resolve()
    return [p for p in paths if p.is_file() and p.resolve() != this and "__pycache__" not in p.parts]


def references(text: str) -> Iterator[Tuple[int, str]]:
    """(line number, reference) for each work-log reference in ``text``."""
    starts, joined = [], ""
    for line in text.splitlines():
        starts.append(len(joined))
        joined += _MARKER.sub("", line, count=1) + " "
    found = [(m.start(), m.group(0)) for m in STOP.finditer(joined)]
    for m in ISSUE.finditer(joined):
        owner = _OWNER.search(joined, max(0, m.start() - 60), m.start())
        if not (owner and owner.group(1).lower() in UPSTREAM):
            found.append((m.start(), m.group(0)))
    for offset, what in sorted(found):
        yield sum(1 for s in starts if s <= offset), what.strip()


@pytest.mark.parametrize("line", [
    "# On a clean clone (stop 44): 39 min", "CI failed on stops 43 and 44", '"""Stop 54\'s CI: the table wrapped',
    "# (Stop\n# 44's failure", "keeps what was measured (issue 36).", "# Issue\n# 36's walks", "see #36",
    "def test_issue_36_walk():", "def test_stop_44():", "the issue-35 target", 'KEY = "labkit-test-key-issue30"',
    "(issues 30 and 36)"])
def test_a_work_log_reference_is_found(line):
    assert list(references(line)), line


@pytest.mark.parametrize("line", [
    "Many runs at once never collide on ports (papermill #511)", "never checks types, papermill issue #55",
    "pytorch issue 18853", "PyTorch's issue 18853", "circle.k{fill:#777}", 'edgecolor="#333333"',
    "the loops stop by themselves", "stop at 5 s", "## 2025", "row #", "- [x] step 3"])
def test_an_upstream_reference_or_other_text_is_left_alone(line):
    assert not list(references(line)), line


def test_no_work_log_reference_in_code_tests_docs_makefile_or_ci():
    found = []
    for path in _files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file (an image)
        found += ["{}:{}: {}".format(path.relative_to(ROOT), n, what) for n, what in references(text)]
    assert not found, ("say why the code is as it is, not which stop or issue changed it "
                       "(an upstream project's issue: name the project before it):\n" + "\n".join(found))
