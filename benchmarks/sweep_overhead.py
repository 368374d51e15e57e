"""What a sweep costs beyond its notebooks: labkit sweep (1 and 2 workers) vs plain papermill.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/sweep_overhead.py [N]      # default N = 8

N runs of a trivial notebook (a parameters cell with `seed`, a cell that records a Run), three ways,
in this one process, one after another on the same machine:

1. reference: N `papermill IN OUT -p seed K` commands run one after another (subprocess),
   and N `papermill.execute_notebook` calls in this process (no interpreter start-up per run);
2. `labkit.sweep.run_sweep` with --repeats N and 1 worker;
3. the same with 2 workers.

Reported: seconds per run each way, labkit's overhead per run against plain papermill
((2) - (1)) / N, and the parallel speed-up (2) / (3). Ratios, not absolute times, are what carry
over to another machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit import sweep  # noqa: E402


def trivial_notebook(folder: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    params = nbformat.v4.new_code_cell("seed = 0")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(
        "from labkit.results import Run, record\nrun = Run('bench/trivial')\nrun.add_metric('value', seed * 2)\nrecord(run)")]
    path = folder / "trivial.ipynb"
    nbformat.write(nb, str(path))
    return path


def main(n: int = 8) -> int:
    os.environ.setdefault("LABKIT_PROGRESS", "off")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    os.environ["PYTHONPATH"] = str(ROOT)
    folder = Path(tempfile.mkdtemp(prefix="labkit-bench-"))
    try:
        nb = trivial_notebook(folder)
        start = time.perf_counter()
        for k in range(n):
            subprocess.run([sys.executable, "-m", "papermill", str(nb), str(folder / "pm-{}.ipynb".format(k)),
                            "-p", "seed", str(k), "--no-progress-bar", "--log-level", "ERROR"],
                           check=True, env=env, cwd=str(folder), capture_output=True)
        plain = time.perf_counter() - start
        import papermill

        start = time.perf_counter()
        for k in range(n):
            papermill.execute_notebook(str(nb), str(folder / "api-{}.ipynb".format(k)), parameters={"seed": k},
                                       progress_bar=False, cwd=str(folder))
        in_process = time.perf_counter() - start
        timings = {}
        for workers in (1, 2):
            out = folder / "sweep-{}".format(workers)
            start = time.perf_counter()
            done = sweep.run_sweep(sweep.plan(str(nb), [], repeats=n), str(out), workers=workers, quiet=True)
            timings[workers] = time.perf_counter() - start
            assert done["failed"] == 0 and done["ran"] == n, done
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("N = {} trivial runs on {} CPU(s)".format(n, os.cpu_count()))
    print("{:<50} {:>9} {:>9}".format("", "total s", "s / run"))
    print("{:<50} {:>9.1f} {:>9.2f}".format("papermill CLI, one after another", plain, plain / n))
    print("{:<50} {:>9.1f} {:>9.2f}".format("papermill API in this process, one after another", in_process, in_process / n))
    for workers in (1, 2):
        print("{:<50} {:>9.1f} {:>9.2f}".format("labkit sweep, {} worker{}".format(workers, "s" if workers > 1 else ""),
                                              timings[workers], timings[workers] / n))
    print("labkit overhead per run vs papermill (1 worker): {:+.2f} s ({:+.0f} %)".format(
        (timings[1] - plain) / n, 100 * (timings[1] - plain) / plain))
    print("labkit overhead per run vs papermill's API in-process (1 worker): {:+.2f} s ({:+.0f} %)".format(
        (timings[1] - in_process) / n, 100 * (timings[1] - in_process) / in_process))
    print("parallel speed-up, 2 workers vs 1: {:.2f}x".format(timings[1] / timings[2]))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 8))
