"""Replay every golden notebook under several CPU kernels and thread counts (`make test-kernels`).

    make test-kernels                                   # what `make test` runs
    .venv/bin/python tests/golden/kernels.py            # the same
    .venv/bin/python tests/golden/kernels.py --list     # the passes it would run, and why
    .venv/bin/python tests/golden/kernels.py --capability default --threads 1 tests/golden/groq/bert_tiny.ipynb
    .venv/bin/python tests/golden/kernels.py --spread-log /tmp/spread.jsonl   # also log every
                                                        # number that moved (tests/golden/spread.py)

A golden copy is made on one machine and must pass on every other one. PyTorch picks its CPU
kernels by ISA at run time, and ``ATEN_CPU_CAPABILITY`` forces a lower one, so one machine can
stand in for older ones. Each pass runs ``pytest tests/golden --nbval`` (the tolerance of
tests/golden/numeric.py included) with:

- ``ATEN_CPU_CAPABILITY``: ``default`` (PyTorch's baseline kernels, with oneDNN held to SSE4.1
  and MKL to its CPU-independent path, ``MKL_CBWR=COMPATIBLE``, as on the oldest x86 CPU) and the best capability this CPU has (``avx512`` or ``avx2`` on
  x86, from ``torch.backends.cpu.get_cpu_capability()``);
- ``OMP_NUM_THREADS`` 1 and 2 (sums reduce in another order with another thread count);
- the first pass of each capability with an empty labkit cache (``LABKIT_CACHE_DIR`` and
  ``XDG_CACHE_HOME`` in a temporary directory), so the offline BERT-tiny stand-in and the ONNX
  exports are built under that kernel, and the next one with the cache it left (warm).

Exit status: 0 when every pass passed, else the first failing pass's pytest status (5, no test
collected, is reported and turned into 1).
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
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: Values of ATEN_CPU_CAPABILITY that PyTorch accepts, as get_cpu_capability() names them.
KNOWN_CAPABILITIES = ("avx512", "avx2", "sve256", "zvector", "vsx")
THREADS = (1, 2)


def best_capability(python: str = sys.executable) -> str:
    """The capability PyTorch picks on this CPU when nothing is forced, lower case."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    out = subprocess.run([python, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    name = out.strip().lower().replace(" ", "_")
    return name if name in KNOWN_CAPABILITIES else "default"


def passes(best: str) -> List[Tuple[str, int, bool]]:
    """(capability, threads, empty cache) for each pass: default always, the best one too."""
    capabilities = ["default"] + ([best] if best != "default" else [])
    return [(cap, threads, threads == THREADS[0]) for cap in capabilities for threads in THREADS]


def pass_environment(capability: str, threads: int, cache: Optional[str]) -> Dict[str, str]:
    env = dict(os.environ)
    env["ATEN_CPU_CAPABILITY"] = capability
    # oneDNN (convolutions) and MKL (matrix products, SVD) pick their own code path by CPU,
    # whatever ATEN_CPU_CAPABILITY says: hold them to their baseline too, as on an old CPU.
    baseline = {"ONEDNN_MAX_CPU_ISA": "SSE41", "MKL_CBWR": "COMPATIBLE"}
    for name, value in baseline.items():
        if capability == "default":
            env[name] = value
        else:
            env.pop(name, None)
    env["OMP_NUM_THREADS"] = str(threads)
    env["MKL_NUM_THREADS"] = str(threads)
    env.setdefault("LABKIT_PROGRESS", "text")
    if cache is not None:
        env["LABKIT_CACHE_DIR"] = os.path.join(cache, "labkit")
        env["XDG_CACHE_HOME"] = cache
    return env


def check_capability(python: str, env: Dict[str, str], capability: str) -> None:
    """Fail loudly if PyTorch ignored the forced capability (a pass would prove nothing)."""
    out = subprocess.run([python, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    if out.strip().lower().replace(" ", "_") != capability:
        raise SystemExit("ATEN_CPU_CAPABILITY={}: PyTorch runs with {} instead".format(capability, out.strip()))


def run_pass(python: str, env: Dict[str, str], label: str, notebooks: List[str]) -> int:
    """One ``pytest --nbval`` pass over the golden notebooks; its exit status (5 becomes 1)."""
    print("test-kernels: {}".format(label), flush=True)
    command = [python, "-m", "pytest", *notebooks, "--nbval", "--nbval-sanitize-with",
               "tests/golden/sanitize.cfg", "-p", "no:cacheprovider", "-q"]
    begun = time.perf_counter()
    status = subprocess.call(command, cwd=str(ROOT), env=env)
    print("test-kernels: {}: pytest exit {} in {:.0f} s".format(label, status, time.perf_counter() - begun),
          flush=True)
    if status == 5:
        print("test-kernels: {}: pytest collected no tests: 0 passed, 0 failed".format(label))
        return 1
    return status


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the passes and exit")
    parser.add_argument("--capability", help="run only the passes of this capability (default, avx2, ...)")
    parser.add_argument("--threads", type=int, help="run only the passes with this many threads")
    parser.add_argument("--spread-log", help="append every number that differs from its golden value here")
    parser.add_argument("notebooks", nargs="*", help="golden notebooks to replay (default: all of tests/golden)")
    args = parser.parse_args(argv)
    python = sys.executable
    best = best_capability(python)
    plan = [(c, t, e) for c, t, e in passes(best)
            if args.capability in (None, c) and args.threads in (None, t)]
    if not plan:
        parser.error("no pass matches --capability {} --threads {}; passes here: {}".format(
            args.capability, args.threads, passes(best)))
    print("test-kernels: best CPU capability here: {}; passes: {}".format(best, ", ".join(
        "{}/{} thread{}/{} cache".format(c, t, "s" if t > 1 else "", "empty" if e else "warm") for c, t, e in plan)))
    if args.list:
        return 0
    started = time.perf_counter()
    failed = 0
    # the golden copies only, not the evidence the homework copy reads (conftest.collect_ignore_glob)
    notebooks = args.notebooks or sorted(str(p.relative_to(ROOT)) for p in HERE.rglob("*.ipynb")
                                         if not {"runs", "evidence_2025"} & set(p.relative_to(HERE).parts))
    caches = {}
    try:
        for capability, threads, empty in plan:
            if empty:
                caches[capability] = tempfile.mkdtemp(prefix="labkit-kernels-{}-".format(capability))
            env = pass_environment(capability, threads, caches.get(capability))
            if args.spread_log:
                env["LABKIT_GOLDEN_SPREAD_LOG"] = os.path.abspath(args.spread_log)
            check_capability(python, env, capability)
            status = run_pass(python, env, "ATEN_CPU_CAPABILITY={} OMP_NUM_THREADS={} ({} labkit cache)".format(
                capability, threads, "empty" if empty else "warm"), notebooks)
            if status and not failed:
                failed = status
    finally:
        for cache in caches.values():
            shutil.rmtree(cache, ignore_errors=True)
    print("test-kernels: {} passes in {:.0f} s: {}".format(len(plan), time.perf_counter() - started,
                                                           "FAILED" if failed else "all passed"))
    return failed


if __name__ == "__main__":
    sys.exit(main())
