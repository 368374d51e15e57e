"""Test-wide settings: text progress bars, and the real MNIST and testbed logs from ../shared.

``shared``, ``testbed_logs`` and ``mnist_dir`` are the one way a test finds ../shared
(tests/shared.py: ``$LABKIT_SHARED``, else ``<repo>/../shared``; MNIST: ``$LABKIT_DATA_DIR`` first);
each skips, naming LABKIT_SHARED, when its folder is missing.
"""

import fnmatch
import os
import signal
from pathlib import Path

from tests import shared as shared_folder

os.environ.setdefault("LABKIT_PROGRESS", "text")
if shared_folder.real_mnist().is_dir():
    os.environ.setdefault("LABKIT_DATA_DIR", str(shared_folder.real_mnist()))

import pytest

# A shell without job control (CI's `make test &`, nohup) starts pytest with SIGINT ignored, and
# Python then installs no KeyboardInterrupt handler: every test that sends itself a real SIGINT,
# as Kernel -> Interrupt does, would see nothing happen. Give the suite the handler a terminal and
# a Jupyter kernel have.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _present(path: Path) -> Path:
    if not path.is_dir():
        pytest.skip(shared_folder.missing_message(path))
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared folder: the real MNIST and the real testbed logs."""
    return _present(shared_folder.shared_dir())


@pytest.fixture(scope="session")
def testbed_logs() -> Path:
    """The real testbed logs, one folder per testbed (``graphcore/``, ``cerebras/``, ...)."""
    return _present(shared_folder.real_logs())


@pytest.fixture(scope="session")
def mnist_dir() -> Path:
    """The real MNIST IDX files: ``$LABKIT_DATA_DIR``, else the shared folder's."""
    return _present(shared_folder.mnist_folder())


#: Files whose tests start kernels, servers, Slurm jobs or sandboxes, train models or grade a
#: class: marked ``slow``, so that ``make test-quick`` (``-m "not slow and not timing"``) gives
#: the loop between two changes in under three minutes. ``make test`` runs everything.
SLOW_FILES = (
    "book/*", "bert/*", "browser/*", "grading/*", "homework/*", "serving/*", "slurm/*", "sweep/*", "execute/*",
    "llm/*", "*/test_notebook.py", "*/test_*_notebook.py", "test_notebooks.py", "test_editing_cells.py",
    "cerebras/test_llama_*.py", "*/test_portable.py", "groq/test_models.py", "groq/test_exercise.py",
    "sambanova/test_inference_client.py", "sambanova/test_allreduce.py", "test_recipe.py", "test_rank_launcher.py",
    "test_interrupts.py", "test_exercise_interrupts.py", "test_cell_end_interrupts.py", "interrupts/*", "golden/*.ipynb",
    # the slowest of the rest (--durations): the IPU tutorial's fake, MNIST cache repairs, ranks, replicas
    "graphcore/test_ipu_path.py", "data/test_mnist_data.py", "sambanova/test_bert_large.py", "comparison/test_scaling.py",
    "golden/test_numeric_tolerance.py",
)


#: The files that take longest, longest first (seconds of one process on a busy 2-core machine, from
#: --durations): `make test` hands whole files to its two processes in collection order, so these
#: start first and the last files to finish are short ones. In collection order the 2025 class came
#: in the middle and the editing tests near the end, and one process ran on alone for almost three
#: minutes (the files' durations, scheduled as pytest-xdist does: 1,387 s, and 1,303 s this way).
LONGEST_FIRST = (
    "homework/test_class_2025.py",       # 460 s: lab runs, 23 hand-ins graded, five again through Parsl
    "homework/test_homework_e2e.py",     # 280 s
    "test_editing_cells.py",             # 240 s
    "grading/test_threats.py",           # 110 s
    "homework/test_class.py",            # 100 s
    "execute/test_run_faults.py",        # 95 s
)


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).resolve().parent
    rank = {}
    for item in items:
        try:
            relative = Path(str(item.path)).resolve().relative_to(tests).as_posix()
        except ValueError:
            continue
        if any(fnmatch.fnmatch(relative, pattern) for pattern in SLOW_FILES):
            item.add_marker(pytest.mark.slow)
        rank[item.nodeid] = LONGEST_FIRST.index(relative) if relative in LONGEST_FIRST else len(LONGEST_FIRST)
    items.sort(key=lambda item: rank.get(item.nodeid, len(LONGEST_FIRST)))  # stable: each file's order kept
