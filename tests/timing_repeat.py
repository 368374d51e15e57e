"""Run the timing-sensitive tests (pytest marker ``timing``) again and again on a busy machine.

    make test-flaky                                           # 20 runs, every core kept busy
    .venv/bin/python tests/timing_repeat.py --runs 5          # fewer
    .venv/bin/python tests/timing_repeat.py --runs 20 tests/serving/test_server.py   # one file's

A test that passes on an idle machine and fails on a busy one blocks a submission on CI. Each
run is a fresh ``pytest -m timing`` (module fixtures, servers included, start again), while one
busy loop per core competes for the CPU. Each run starts its own loops and ends them when it
ends (loops shared by all runs left the later runs of a long suite idle once they timed out);
should this script be killed, they stop by themselves after ``--load-s`` seconds. The table
gives each test's passes out of its runs.

Exit status: 0 when every test passed every run, else 1.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import OrderedDict
from pathlib import Path
from typing import Dict, List, Optional

ROOT = Path(__file__).resolve().parent.parent
BUSY_LOOP = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def start_load(seconds: float, processes: int) -> List[subprocess.Popen]:
    """``processes`` busy loops, each ending by itself after ``seconds``."""
    code = BUSY_LOOP.format(seconds=float(seconds))
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(processes)]


def stop_load(loops: List[subprocess.Popen]) -> None:
    for loop in loops:
        loop.terminate()
    for loop in loops:
        loop.wait()


def outcomes(junit_xml: str) -> Dict[str, str]:
    """Test id -> passed, skipped, or failed with pytest's one-line reason, from one run's JUnit XML."""
    found = OrderedDict()
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        name = "{}::{}".format(case.get("classname"), case.get("name"))
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        if failure is not None:
            reason = (failure.get("message") or "").strip()
            found[name] = "failed: " + (reason.splitlines()[0][:300] if reason else "(no message)")
        elif case.find("skipped") is not None:
            found[name] = "skipped"
        else:
            found[name] = "passed"
    return found


def marked_files(pytest_args: List[str]) -> List[str]:
    """The files that hold a test marked timing (collecting all of tests/ once, not on every run)."""
    listed = subprocess.run([sys.executable, "-m", "pytest", "-m", "timing", "--collect-only", "-q",
                             "-p", "no:cacheprovider"] + pytest_args, cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, universal_newlines=True).stdout
    return sorted({line.split("::")[0] for line in listed.splitlines() if "::" in line})


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="how many times (default 20)")
    parser.add_argument("--load-s", type=float, default=3600.0,
                        help="each run's busy loops stop by themselves after this many seconds (default 3600)")
    parser.add_argument("--load-processes", type=int, default=os.cpu_count() or 2,
                        help="busy loops (default: one per core, {})".format(os.cpu_count()))
    parser.add_argument("pytest_args", nargs="*", help="test files or ids (default: tests, -m timing)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.load_s <= 0 or args.load_processes < 0:
        parser.error("--runs must be 1 or more, --load-s above 0 and --load-processes 0 or more; got {}, {}, {}".format(
            args.runs, args.load_s, args.load_processes))
    files = marked_files(args.pytest_args or ["tests"])
    if not files:
        print("timing: no test carries the marker timing in {}".format(" ".join(args.pytest_args or ["tests"])))
        return 1
    tally: Dict[str, Dict[str, int]] = OrderedDict()
    # a plain `kill` ends the runs as Ctrl-C does: through the finally that stops the busy loops
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    loops: List[subprocess.Popen] = []
    begun = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="labkit-timing-") as scratch:
            for run in range(1, args.runs + 1):
                xml = os.path.join(scratch, "run{}.xml".format(run))
                command = [sys.executable, "-m", "pytest", "-m", "timing", "-p", "no:cacheprovider", "-q",
                           "--junitxml", xml] + files
                loops = start_load(args.load_s, args.load_processes)
                started = time.monotonic()
                status = subprocess.call(command, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
                unloaded = sum(loop.poll() is not None for loop in loops)
                stop_load(loops)
                if not os.path.exists(xml):
                    print("timing run {}: pytest exited {} without a report".format(run, status))
                    return 1
                seen = outcomes(xml)
                for name, outcome in seen.items():
                    tally.setdefault(name, {"passed": 0, "failed": 0, "skipped": 0})[outcome.split(":")[0]] += 1
                failed = ["{} ({})".format(name, outcome) for name, outcome in seen.items()
                          if outcome.startswith("failed")]
                print("timing run {}/{}: {} tests in {:.0f} s{}{}".format(
                    run, args.runs, len(seen), time.monotonic() - started,
                    " ({} busy loops ended before the run did: raise --load-s)".format(unloaded) if unloaded else "",
                    "; FAILED: " + "; ".join(failed) if failed else ""), flush=True)
    finally:
        stop_load(loops)
    print("\ntiming: {} runs with {} busy loops, {:.0f} s".format(args.runs, args.load_processes,
                                                                  time.monotonic() - begun))
    for name, counts in tally.items():
        runs = counts["passed"] + counts["failed"]
        print("{:>3}/{:<3} passed  {}{}".format(counts["passed"], runs, name,
                                                "  ({} skipped)".format(counts["skipped"]) if counts["skipped"] else ""))
    return 1 if any(counts["failed"] for counts in tally.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
