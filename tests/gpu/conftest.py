"""The GPU tests: every test under tests/gpu is marked ``gpu`` and skipped, with the reason, where torch
sees no CUDA GPU (CI, this course's laptops); ``make test-gpu`` runs them on a machine that has one.

``LABKIT_GPU_TESTS_ON_CPU=1`` runs the notebook tests on the CPU instead, at the same sizes, to check
their logic where no GPU is lent (what they assert about the GPU itself is then skipped inside them).
"""

import os

import pytest


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # the lightest CI job has no torch
        return False
    return torch.cuda.is_available()


#: The device the notebook tests train on: "cuda", or "cpu" under LABKIT_GPU_TESTS_ON_CPU=1.
DEVICE = "cpu" if os.environ.get("LABKIT_GPU_TESTS_ON_CPU") == "1" else "cuda"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    skip = pytest.mark.skip(reason="needs a CUDA GPU: torch sees none here (make test-gpu on a machine with one)")
    for item in items:
        if not os.path.abspath(str(item.path)).startswith(here + os.sep):
            continue
        item.add_marker(pytest.mark.gpu)
        if not cuda_available() and DEVICE == "cuda":
            item.add_marker(skip)
