"""How fast labkit.logs reads a big log, against just reading its lines.

    PYTHONPATH=$PWD python benchmarks/parse_logs.py            # ~10 MB per format
    PYTHONPATH=$PWD python benchmarks/parse_logs.py --mb 50    # bigger

For each vendor format, a ~10 MB log is built by repeating the lines of a real course log
(../shared/fixtures/testbed-logs, or $LABKIT_SHARED) and written to a temporary file. It is
timed three ways in this process: the reference (open the file and split it into lines with
Python's own universal-newline reader), labkit's clean line stream (escapes removed, stripped),
and ``labkit.logs.read`` (detection plus the vendor reader). Printed: MB, wall seconds (best of
``--repeat``), MB/s, the ratio to the reference, and the CPU seconds of ``read`` and their ratio
(steadier than wall time on a busy machine). The target is well under a second per 10 MB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import labkit.logs  # noqa: E402
from labkit.logs.text import iter_lines, open_source  # noqa: E402
from tests.shared import missing_message, real_logs  # noqa: E402

# One real log per format; repeated until the file reaches the target size.
SAMPLES = {
    "graphcore": "graphcore/student-sarora39-spring2024-mnist-b8-lr3-e20-diverged.log",
    "cerebras": "cerebras/upstream-spring2024-gpt2-small-sample-output.log",
    "sambanova": "sambanova/tstabrawa-fall2024-HW7-BertLarge-16tasks-2ndlog.log",
    "groq": "groq/student-drapi222-fall2024-minilmv2-custom-input-terminal-session.log",
}


def fixtures_dir() -> Path:
    """The real testbed logs, found as the tests find them (tests/shared.py)."""
    logs = real_logs()
    if not logs.is_dir():
        sys.exit(missing_message(logs))
    return logs


def build(sample: Path, target_bytes: int, out: Path) -> int:
    data = sample.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    with open(out, "wb") as f:
        written = 0
        while written < target_bytes:
            f.write(data)
            written += len(data)
    return written


def best_of(repeat: int, fn, clock=time.perf_counter) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def reference(path: Path) -> int:
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return sum(1 for _ in f)


def clean_lines(path: Path) -> int:
    with open_source(path) as source:
        return sum(1 for _ in iter_lines(source.stream))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=10.0, help="size of each built log in MB (default 10)")
    parser.add_argument("--repeat", type=int, default=3, help="timings per measurement; the best is kept")
    args = parser.parse_args()
    base = fixtures_dir()
    print("{:<10} {:>6} {:>9} {:>8} {:>8} {:>8} {:>9} {:>6} {:>10} {:>9}".format(
        "format", "MB", "lines", "ref s", "lines s", "read s", "read MB/s", "ratio", "read cpu s", "cpu ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        for fmt, name in SAMPLES.items():
            path = Path(tmp) / "{}.log".format(fmt)
            size = build(base / name, int(args.mb * 1e6), path)
            mb = size / 1e6
            t_ref = best_of(args.repeat, lambda: reference(path))
            t_lines = best_of(args.repeat, lambda: clean_lines(path))
            report = None

            def parse():
                nonlocal report
                report = labkit.logs.read(path)

            t_read = best_of(args.repeat, parse)
            # CPU time as well: on a shared machine, wall time also counts other jobs' turns.
            c_ref = best_of(args.repeat, lambda: reference(path), time.process_time)
            c_read = best_of(args.repeat, parse, time.process_time)
            assert report is not None and report.format == fmt, (fmt, report and report.format)
            print("{:<10} {:>6.1f} {:>9} {:>8.3f} {:>8.3f} {:>8.3f} {:>9.1f} {:>6.1f} {:>10.3f} {:>9.1f}   ({} runs)".format(
                fmt, mb, reference(path), t_ref, t_lines, t_read, mb / t_read, t_read / t_ref, c_read,
                c_read / max(c_ref, 1e-9), len(report.runs)))


if __name__ == "__main__":
    main()
