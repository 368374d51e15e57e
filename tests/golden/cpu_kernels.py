"""Replay every golden notebook under several CPU kernels and thread counts (`make test-kernels`).

    make test-kernels                                       # what `make test` runs
    .venv/bin/python tests/golden/cpu_kernels.py            # the same
    .venv/bin/python tests/golden/cpu_kernels.py --list     # the passes it would run, and why
    .venv/bin/python tests/golden/cpu_kernels.py --capability default --threads 1 tests/golden/groq/bert_tiny.ipynb
    .venv/bin/python tests/golden/cpu_kernels.py --spread-log /tmp/spread.jsonl   # also log every
                                                            # number that moved (tests/golden/spread.py)

Not named kernels.py: pytest puts tests/golden on sys.path, where such a file would shadow Hugging
Face's ``kernels`` package, which transformers imports whenever it is installed.

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

``make test`` runs it with ``--after-suite``: its pytest run has just replayed every golden notebook
under the best capability with PyTorch's default thread count, so that pass is left out, and the
empty-cache passes (independent: one cache each) run side by side when their threads fit the cores.

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
from typing import IO, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
#: Values of ATEN_CPU_CAPABILITY that PyTorch accepts, as get_cpu_capability() names them.
KNOWN_CAPABILITIES = ("avx512", "avx2", "sve256", "zvector", "vsx")
THREADS = (1, 2)


def cpu_defaults(python: str = sys.executable) -> Tuple[str, int]:
    """(capability, threads) PyTorch picks on this CPU when nothing is forced, the capability lower case."""
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "OMP_NUM_THREADS")}
    out = subprocess.run([python, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability(), "
                          "torch.get_num_threads())"],
                         env=env, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    capability, threads = out.strip().rsplit(" ", 1)
    name = capability.lower().replace(" ", "_")
    return (name if name in KNOWN_CAPABILITIES else "default"), int(threads)


def best_capability(python: str = sys.executable) -> str:
    """The capability PyTorch picks on this CPU when nothing is forced, lower case."""
    return cpu_defaults(python)[0]


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


def after_suite(plan: List[Tuple[str, int, bool]], best: str, default_threads: int) -> List[Tuple[str, int, bool]]:
    """The plan less the pass ``make test``'s own pytest run has just made (best capability,
    PyTorch's default threads, the cache that run left)."""
    return [(c, t, e) for c, t, e in plan if not (c == best and t == default_threads and not e)]


def waves(plan: List[Tuple[str, int, bool]], cores: int) -> List[List[Tuple[str, int, bool]]]:
    """The plan in groups run side by side: the empty-cache passes together (each has its own
    cache) when their threads fit the cores, then each warm pass after its capability's cache is made."""
    empty = [p for p in plan if p[2]]
    rest = [p for p in plan if not p[2]]
    if len(empty) > 1 and sum(t for _, t, _ in empty) <= cores:
        return [empty] + [[p] for p in rest]
    return [[p] for p in plan]


def run_pass(python: str, env: Dict[str, str], label: str, notebooks: List[str]) -> int:
    """One ``pytest --nbval`` pass over the golden notebooks; its exit status (5 becomes 1)."""
    return finish_pass(label, start_pass(python, env, label, notebooks, output=None))


def start_pass(python: str, env: Dict[str, str], label: str, notebooks: List[str],
               output: Optional[IO[str]]) -> Tuple[subprocess.Popen, float]:
    print("test-kernels: {}".format(label), flush=True)
    command = [python, "-m", "pytest", *notebooks, "--nbval", "--nbval-sanitize-with",
               "tests/golden/sanitize.cfg", "-p", "no:cacheprovider", "-q"]
    stdout = output if output is not None else None
    process = subprocess.Popen(command, cwd=str(ROOT), env=env, stdout=stdout,
                               stderr=subprocess.STDOUT if output is not None else None)
    return process, time.perf_counter()


def finish_pass(label: str, started: Tuple[subprocess.Popen, float], output: Optional[IO[str]] = None) -> int:
    process, begun = started
    status = process.wait()
    if output is not None:  # a pass run beside another: its output whole, after it ended
        output.seek(0)
        sys.stdout.write(output.read())
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
    parser.add_argument("--after-suite", action="store_true",
                        help="leave out the pass `make test`'s pytest run has just made (best capability, "
                             "default threads, warm cache) and run the empty-cache passes side by side")
    parser.add_argument("--spread-log", help="append every number that differs from its golden value here")
    parser.add_argument("notebooks", nargs="*", help="golden notebooks to replay (default: all of tests/golden)")
    args = parser.parse_args(argv)
    python = sys.executable
    best, default_threads = cpu_defaults(python)
    plan = [(c, t, e) for c, t, e in passes(best)
            if args.capability in (None, c) and args.threads in (None, t)]
    if args.after_suite:
        plan = after_suite(plan, best, default_threads)
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
    groups = waves(plan, os.cpu_count() or 1) if args.after_suite else [[p] for p in plan]
    try:
        for group in groups:
            running = []
            for capability, threads, empty in group:
                if empty:
                    caches[capability] = tempfile.mkdtemp(prefix="labkit-kernels-{}-".format(capability))
                env = pass_environment(capability, threads, caches.get(capability))
                if args.spread_log:
                    env["LABKIT_GOLDEN_SPREAD_LOG"] = os.path.abspath(args.spread_log)
                check_capability(python, env, capability)
                label = "ATEN_CPU_CAPABILITY={} OMP_NUM_THREADS={} ({} labkit cache)".format(
                    capability, threads, "empty" if empty else "warm")
                output = tempfile.TemporaryFile("w+") if len(group) > 1 else None
                running.append((label, start_pass(python, env, label, notebooks, output), output))
            for label, handle, output in running:
                status = finish_pass(label, handle, output)
                if output is not None:
                    output.close()
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
