"""Seconds per submission for `labkit grade` with 1 and 2 workers on the realistic class.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/grade_throughput.py [--nbgrader]

Builds the 13-student class of tests/grading/classroom.py (real homework, real testbed logs),
grades it with 1 and then 2 workers (sandbox, recomputation and --reproduce included) and
prints seconds per submission and the 2-worker speed-up as a ratio against the 1-worker run
in the same process. With --nbgrader (if nbgrader is installed) it also times
`nbgrader autograde` on the same notebooks, which runs them with no sandbox and no limits.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit.grading import sandbox  # noqa: E402
from labkit.grading.batch import grade_class  # noqa: E402
from tests.grading import classroom  # noqa: E402

NBGRADER = shutil.which("nbgrader") or os.path.join(os.path.dirname(sys.executable), "nbgrader")
LIMITS = sandbox.Limits(notebook_s=60, cell_s=10, memory_bytes=2 << 30, nproc=64, fsize_bytes=16 << 20)


def time_labkit(subs: Path, out: Path, workers: int) -> float:
    started = time.perf_counter()
    grade_class(str(subs), str(classroom.RUBRIC), str(out), workers=workers, limits=LIMITS, reproduce=True)
    return time.perf_counter() - started


def time_nbgrader(subs: Path, root: Path) -> float:
    """nbgrader autograde on the same notebooks (course layout: submitted/<student>/<assignment>/)."""
    course = root / "course"
    (course / "source" / "hw").mkdir(parents=True)
    shutil.copy(str(classroom.HOMEWORK), str(course / "source" / "hw" / "ai_testbeds.ipynb"))
    env = dict(os.environ, PYTHONPATH=str(ROOT),  # nbgrader runs `alembic` from PATH
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    run = lambda *args: subprocess.run([NBGRADER] + list(args) + ["--CourseDirectory.root=" + str(course)],  # noqa: E731
                                       env=env, cwd=str(course), capture_output=True, text=True)
    made = run("generate_assignment", "hw", "--force", "--create")
    if made.returncode != 0:
        raise RuntimeError(made.stderr[-500:])
    for folder in sorted(subs.iterdir()):
        shutil.copytree(str(folder), str(course / "submitted" / folder.name / "hw"))
    started = time.perf_counter()
    graded = run("autograde", "hw", "--force", "--ExecutePreprocessor.timeout=10")
    elapsed = time.perf_counter() - started
    if graded.returncode != 0:
        print("nbgrader autograde exit status {}: {}".format(graded.returncode, graded.stderr[-300:]))
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nbgrader", action="store_true", help="also time nbgrader autograde")
    parser.add_argument("--nbgrader-only", action="store_true", help="time only nbgrader autograde")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    try:
        subs = root / "submissions"
        n = len(classroom.build_class(subs))
        if args.nbgrader_only:
            t = time_nbgrader(subs, root)
            print("nbgrader autograde     : {:6.2f} s/submission ({:.1f} s)".format(t / n, t))
            return 0
        one = time_labkit(subs, root / "out1", 1)
        two = time_labkit(subs, root / "out2", 2)
        print("isolation: {}, {} submissions".format(sandbox.best_level(), n))
        print("labkit grade, 1 worker : {:6.2f} s/submission ({:.1f} s)".format(one / n, one))
        print("labkit grade, 2 workers: {:6.2f} s/submission ({:.1f} s), speed-up x{:.2f}".format(two / n, two, one / two))
        if args.nbgrader:
            if not os.path.exists(NBGRADER):
                print("nbgrader: not installed")
            else:
                t = time_nbgrader(subs, root)
                print("nbgrader autograde     : {:6.2f} s/submission ({:.1f} s), x{:.2f} of labkit 1 worker".format(
                    t / n, t, t / one))
    finally:
        shutil.rmtree(str(root), ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
