"""Whether MNIST's and the scaling study's steps ran as the accelerator policy chose: a CUDA graph on a
GPU, eager on a CPU. A capture that failed runs eager and records why (``launch_error``); that is a
failure here, printed with the capture's error, never a quiet fallback. tests/gpu's tests and
tests/gpu/device_check.sh both use it:

    python tests/gpu/launch_check.py cuda runs/mnist.ipynb runs/ipu_vs_gpu.ipynb   # exits 1 on a mismatch
"""

from __future__ import annotations

import sys
from typing import Iterable, List

#: What the policy chooses for a step of fixed shapes, by device kind.
CHOSEN = {"cuda": "cuda graph", "cpu": "eager"}


def problems(runs: Iterable, device: str) -> List[str]:
    """One line per run whose recorded launch is not the policy's choice on ``device`` ("cuda" or "cpu"),
    with the capture's error where the run recorded one; runs that record no launch are not judged."""
    expected = CHOSEN[device]
    found = []
    for run in runs:
        launch, error = run.environment.get("launch"), run.environment.get("launch_error")
        if launch is None or (launch == expected and not error):
            continue
        found.append("{}: launch {!r} where the policy chose {!r}: {}".format(
            run.exercise, launch, expected, error or "no capture error recorded"))
    return found


def main(argv: List[str]) -> int:
    from labkit import results

    if len(argv) < 2 or argv[0] not in CHOSEN:
        print("usage: launch_check.py cuda|cpu NOTEBOOK...", file=sys.stderr)
        return 2
    found = []
    for path in argv[1:]:
        try:
            runs = results.read(path).runs
        except FileNotFoundError:  # its step failed or was skipped: nothing says how its steps ran
            found.append("{}: no such notebook, so its launch is unknown".format(path))
            continue
        found += ["{}: {}".format(path, line) for line in problems(runs, argv[0])]
    for line in found:
        print(line)
    print("launch check: {} notebook(s), {}".format(len(argv) - 1, "{} mismatch(es)".format(len(found)) if found
                                                     else "every launch as the policy chose"))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
