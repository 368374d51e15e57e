"""Seconds per submission for `labkit grade`: a class of 40, 1 and 2 local workers and Parsl.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/grade_throughput.py                 # class of 40
    PYTHONPATH=$PWD .venv/bin/python benchmarks/grade_throughput.py --repeats 3 --students 40
    PYTHONPATH=$PWD .venv/bin/python benchmarks/grade_throughput.py --classroom [--nbgrader]

Default: a generated class of 40 (tests/grading/notebooks.py) whose notebooks record portable
runs of the toy exercise, one of them about a second of computation, graded with the toy
rubric (recomputation included) by 1 local worker, 2 local workers and Parsl
(docs/parsl/local.py, 2 workers), repeats interleaved. For each: seconds per submission, the
wall time against the ideal (submissions x notebook time / workers, the notebook time being
what the cells took inside the grader's own kernel), and labkit's own time per submission
beyond executing the cells (worker start, sandbox, kernel start, recomputation, grading),
medians with their range over the repeats; and, as the reference measured in the same session,
the time the same notebook takes run plainly (nbclient, a fresh kernel, no sandbox, no grading).

--classroom-2025: the 22-student class of the 2025 homework (tests/homework/classroom_2025.py: CS-3
logs, the LLaMA sweep and inference runs against the local stand-in, every kind of broken hand-in),
graded with --reproduce by 2 local workers and by Parsl (docs/parsl/local.py, 2 workers), repeats
interleaved; prints seconds per submission (median and range) and Parsl's time as a ratio against
the local workers' in the same session. The lab runs are made once first (a few CPU-minutes), or
reused from LABKIT_TEST_LAB_2025.

--classroom: the 13-student class of tests/homework/classroom.py (real homework, real testbed logs),
grades it with 1 and then 2 workers (sandbox, recomputation and --reproduce included) and
prints seconds per submission and the 2-worker speed-up as a ratio against the 1-worker run
in the same process. With --nbgrader (if nbgrader is installed) it also times
`nbgrader autograde` on the same notebooks, which runs them with no sandbox and no limits.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labkit.grading.sandbox import levels  # noqa: E402
from labkit.grading.batch import grade_class  # noqa: E402
from tests.homework import classroom  # noqa: E402

NBGRADER = shutil.which("nbgrader") or os.path.join(os.path.dirname(sys.executable), "nbgrader")
LIMITS = levels.Limits(notebook_s=60, cell_s=10, memory_bytes=2 << 30, nproc=64, fsize_bytes=16 << 20)


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


TOY_RUBRIC = ROOT / "tests" / "grading" / "rubric_toy.yml"
MODES = (("1 local worker", "local", 1), ("2 local workers", "local", 2), ("Parsl, 2 workers", "parsl", 2))


def build_portable_class(dest: Path, students: int, steps: int) -> None:
    """``students`` notebooks: the default and a changed run, plus one longer portable run each."""
    from nbformat.v4 import new_code_cell

    from tests.grading import notebooks as N

    dest.mkdir(parents=True)
    for i in range(students):
        heavy = new_code_cell("labkit.results.record(toy.run(steps={}, rate=0.6), name='long_run')".format(steps + i))
        N.write(N.homework(extra=[heavy]), dest / "student{:02d}.ipynb".format(i))


def grade_once(subs: Path, out: Path, executor: str, workers: int) -> dict:
    limits = levels.Limits(notebook_s=120, cell_s=60, memory_bytes=2 << 30, nproc=64, fsize_bytes=16 << 20)
    os.environ["LABKIT_PARSL_WORKERS"] = str(workers)
    started = time.perf_counter()
    results = grade_class(str(subs), str(TOY_RUBRIC), str(out), workers=workers, limits=limits, executor=executor,
                          parsl_config=str(ROOT / "docs" / "parsl" / "local.py") if executor == "parsl" else None)
    wall = time.perf_counter() - started
    bad = [n for n, r in results.items() if r.get("status") != "ok" or r.get("total") != 9]
    if bad:
        raise RuntimeError("not every submission graded 9/9: {}".format(bad))
    cells = [r["cells_s"] for r in results.values()]
    overhead = [r["graded_s"] - r["cells_s"] for r in results.values()]
    # where the time goes per submission (runner.run_job records each phase)
    phases = {name: statistics.median(r["phases"][name] for r in results.values() if name in r.get("phases", {}))
              for name in ("prepare_s", "execute_s", "grade_s")}
    return {"wall": wall, "per_sub": wall / len(results), "ideal": sum(cells) / workers,
            "cells": statistics.median(cells), "overhead": statistics.median(overhead), "phases": phases}


def bare_execution_s(notebook: Path) -> float:
    """The same notebook run the plain way (nbclient, fresh unsandboxed kernel, no grading): the reference."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(notebook), as_version=4)
    started = time.perf_counter()
    NotebookClient(nb, kernel_name="python3", timeout=120, resources={"metadata": {"path": str(notebook.parent)}}).execute()
    return time.perf_counter() - started


def portable_class(students: int, repeats: int, steps: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    try:
        subs = root / "submissions"
        build_portable_class(subs, students, steps)
        runs = {label: [] for label, _e, _w in MODES}
        bare = []
        for repeat in range(repeats):  # interleaved: a noisy minute hits every mode alike
            bare += [bare_execution_s(subs / "student{:02d}.ipynb".format(i)) for i in range(3)]
            for label, executor, workers in MODES:
                m = grade_once(subs, root / "out-{}-{}-{}".format(executor, workers, repeat), executor, workers)
                runs[label].append(m)
                print("  repeat {} {:<17}: {:6.2f} s/submission, wall/ideal x{:.2f}, labkit {:.2f} s/submission "
                      "(median prepare {prepare_s:.2f} s, execute {execute_s:.2f} s, grade {grade_s:.2f} s)".format(
                          repeat + 1, label, m["per_sub"], m["wall"] / m["ideal"], m["overhead"], **m["phases"]),
                      flush=True)
        print("isolation: {}, {} submissions, {} repeats (shared 2-core machine: medians [min-max])".format(
            levels.best_level(), students, repeats))
        print("| executor | s / submission | wall / ideal | notebook (cells) s | labkit's own s / submission |")
        print("|---|---|---|---|---|")
        for label, ms in runs.items():
            def cell(key, ratio=False):
                values = [m["wall"] / m["ideal"] for m in ms] if ratio else [m[key] for m in ms]
                return "{:.2f} [{:.2f}-{:.2f}]".format(statistics.median(values), min(values), max(values))
            print("| {} | {} | x{} | {} | {} |".format(label, cell("per_sub"), cell(None, True), cell("cells"),
                                                      cell("overhead")))
        print("reference: the same notebook run plainly (nbclient, fresh kernel, no sandbox, no grading): "
              "{:.2f} s [{:.2f}-{:.2f}] over {} runs".format(statistics.median(bare), min(bare), max(bare), len(bare)))
    finally:
        shutil.rmtree(str(root), ignore_errors=True)


def classroom_2025(repeats: int) -> None:
    """The 2025 class graded by 2 local workers and by Parsl (2 workers), interleaved."""
    from tests.homework import classroom_2025 as c25

    root = Path(tempfile.mkdtemp(prefix="grade-bench-2025-"))
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    os.environ["LABKIT_PARSL_WORKERS"] = "2"
    limits = levels.Limits(notebook_s=120, cell_s=30, memory_bytes=4 << 30, nproc=64, fsize_bytes=16 << 20)
    try:
        started = time.perf_counter()
        reuse = os.environ.get("LABKIT_TEST_LAB_2025")
        lab = Path(reuse) if reuse else c25.make_lab_runs(root / "lab")
        made = time.perf_counter() - started
        subs = root / "submissions"
        n = len(c25.build_class(subs, lab))
        print("lab runs: {}".format("reused from {}".format(reuse) if reuse else "made in {:.0f} s".format(made)))
        times = {"2 local workers": [], "Parsl, 2 workers": []}
        for repeat in range(repeats):  # interleaved: a noisy minute hits both alike
            for label, executor in (("2 local workers", "local"), ("Parsl, 2 workers", "parsl")):
                out = root / "out-{}-{}".format(executor, repeat)
                t0 = time.perf_counter()
                results = grade_class(str(subs), str(c25.RUBRIC), str(out), workers=2, limits=limits, reproduce=True,
                                      executor=executor, lms="canvas",
                                      parsl_config=str(ROOT / "docs" / "parsl" / "local.py") if executor == "parsl" else None)
                wall = time.perf_counter() - t0
                times[label].append(wall)
                print("  repeat {} {:<17}: {:6.2f} s/submission ({:.0f} s, {} graded)".format(
                    repeat + 1, label, wall / n, wall, len(results)), flush=True)
        print("isolation: {}, {} submissions, {} repeat(s), --reproduce (3 LLaMA re-runs)".format(
            levels.best_level(), n, repeats))
        for label, walls in times.items():
            per = [w / n for w in walls]
            print("| {} | {:.2f} s/submission [{:.2f}-{:.2f}] |".format(label, statistics.median(per), min(per), max(per)))
        ratio = [p / l for p, l in zip(times["Parsl, 2 workers"], times["2 local workers"])]
        print("Parsl / local, same session: x{:.2f} [{:.2f}-{:.2f}]".format(statistics.median(ratio), min(ratio), max(ratio)))
    finally:
        shutil.rmtree(str(root), ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--classroom", action="store_true", help="the 13-student class of real logs instead")
    parser.add_argument("--classroom-2025", action="store_true", help="the 22-student class of the 2025 homework")
    parser.add_argument("--students", type=int, default=40, help="size of the generated class (default 40)")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    parser.add_argument("--steps", type=int, default=3_000_000, help="length of each notebook's long run")
    parser.add_argument("--nbgrader", action="store_true", help="also time nbgrader autograde")
    parser.add_argument("--nbgrader-only", action="store_true", help="time only nbgrader autograde")
    args = parser.parse_args()
    if args.classroom_2025:
        classroom_2025(args.repeats)
        return 0
    if not args.classroom and not args.nbgrader_only:
        portable_class(args.students, args.repeats, args.steps)
        return 0
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
        print("isolation: {}, {} submissions".format(levels.best_level(), n))
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
