"""The kernel's memory limit counts memory written, not libraries mapped (labkit.grading.sandbox.launcher).

A CUDA build of torch maps about 6 GB of shared libraries for 1 GB resident: under an
address-space cap an honest ``--reproduce`` re-run died with ``MemoryError`` on one CPU and
passed on another. The same cap on ``RLIMIT_DATA`` lets torch work and still stops a hog.
"""

import subprocess
import sys

from labkit.grading.sandbox import levels

ONE_GB = 1 << 30

USES_TORCH = """
import torch
x = torch.randn(256, 256)
print("ok", float((x @ x).sum()) == float((x @ x).sum()))
"""

HOG = """
hog = []
try:
    while True:
        hog.append(bytearray(64 << 20))
except MemoryError:
    print("MemoryError after", len(hog) * 64, "MB")
"""


def confined(code, memory_bytes, home):
    cmd = levels.LAUNCHER + ["--memory", str(memory_bytes), "--", sys.executable, "-c", code]
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                          timeout=300, env=levels.kernel_environment(str(home)))


def test_torch_imports_and_computes_under_a_two_gigabyte_limit(tmp_path):
    done = confined(USES_TORCH, 2 * ONE_GB, tmp_path)
    assert done.returncode == 0 and "ok True" in done.stdout, done.stdout[-2000:]


def test_a_memory_hog_stops_at_the_limit(tmp_path):
    done = confined(HOG, ONE_GB, tmp_path)
    assert done.returncode == 0, done.stdout[-2000:]
    reached = int(done.stdout.split("MemoryError after")[1].split()[0])
    assert 512 <= reached <= 1024, done.stdout
