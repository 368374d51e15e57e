"""MNIST loading: pre-staged files as they are, a locked download, checks that never let a bad
file through, and the shipped sample when there is nothing else. Real MNIST from ../shared."""

import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
import socket
import time
from pathlib import Path

import numpy as np
import pytest

from labkit.data.mnist import FILES, MnistDataError, load_mnist


@pytest.fixture(scope="module")
def real(mnist_dir):
    """The real MNIST (tests/conftest.py's ``mnist_dir``)."""
    return mnist_dir


def write_idx(path, array, gz=True):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    opener = gzip.open if gz else open
    with opener(path, "wb") as f:
        f.write(data)


def small_set(directory, n=50, gz=True, layout=""):
    folder = Path(directory) / layout
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    suffix = ".gz" if gz else ""
    for split, count in (("train", n), ("t10k", n // 2)):
        write_idx(folder / ("{}-images-idx3-ubyte{}".format(split, suffix)), rng.integers(0, 255, (count, 28, 28)), gz)
        write_idx(folder / ("{}-labels-idx1-ubyte{}".format(split, suffix)), rng.integers(0, 10, count), gz)
    return folder


def test_full_real_mnist_is_read_and_checked(real):
    data = load_mnist(real, download=False)
    assert data.source == "full" and data.comparable
    assert data.train_images.shape == (60000, 28, 28) and data.test_images.shape == (10000, 28, 28)
    assert data.train_labels.dtype == np.int64 and set(np.unique(data.test_labels)) == set(range(10))


@pytest.mark.parametrize("gz,layout", [(True, ""), (False, ""), (True, "MNIST/raw"), (False, "MNIST/raw")])
def test_pre_staged_files_are_accepted_as_they_are(tmp_path, gz, layout):
    small_set(tmp_path, gz=gz, layout=layout)
    data = load_mnist(tmp_path, download=False)
    assert data.source == "full" and len(data.train_labels) == 50 and len(data.test_labels) == 25


def test_data_dir_comes_from_the_environment(tmp_path, monkeypatch):
    small_set(tmp_path)
    monkeypatch.setenv("LABKIT_DATA_DIR", str(tmp_path))
    assert load_mnist(download=False).location == str(tmp_path)


def test_a_truncated_staged_file_is_reported_and_left_alone(tmp_path, real):
    shutil.copy(real / "train-images-idx3-ubyte.gz", tmp_path)
    for name in ("train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(real / name, tmp_path)
    victim = tmp_path / "train-images-idx3-ubyte.gz"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(MnistDataError) as err:
        load_mnist(tmp_path, download=True)
    assert str(victim) in str(err.value) and "truncated" in str(err.value)
    assert victim.read_bytes() == data[: len(data) // 2]  # a hand-staged file is never touched


def test_a_right_sized_but_corrupted_file_is_caught_by_md5(tmp_path, real):
    for name in FILES.values():
        (tmp_path / name).write_bytes(gzip.decompress((real / (name + ".gz")).read_bytes()))
    victim = tmp_path / "t10k-labels-idx1-ubyte"
    raw = bytearray(victim.read_bytes())
    raw[100] = (raw[100] + 1) % 10
    victim.write_bytes(bytes(raw))
    with pytest.raises(MnistDataError, match="MD5 mismatch"):
        load_mnist(tmp_path, download=False)


def test_header_that_promises_more_than_the_file_holds(tmp_path):
    folder = small_set(tmp_path, gz=False)
    victim = folder / "t10k-images-idx3-ubyte"
    victim.write_bytes(victim.read_bytes()[:-100])
    with pytest.raises(MnistDataError, match="truncated"):
        load_mnist(tmp_path, download=False)


def test_without_network_or_files_the_shipped_sample_runs_loudly(tmp_path):
    data = load_mnist(tmp_path / "empty", download=False)
    assert data.source == "sample" and not data.comparable
    assert len(data.train_labels) == 3000 and len(data.test_labels) == 1000
    assert "NOT comparable" in data.notes[-1]
    with pytest.raises(MnistDataError, match="could not be downloaded"):
        load_mnist(tmp_path / "empty", download=False, allow_sample=False)


def test_the_sample_is_real_mnist(real):
    sample = load_mnist(Path("/nonexistent-labkit-dir"), download=False)
    full = load_mnist(real, download=False)
    assert np.array_equal(sample.train_images, full.train_images[:3000])
    assert np.array_equal(sample.test_labels, full.test_labels[:1000])


# --- downloads, through torchvision's real code, from a mirror served on 127.0.0.1 -------------

@pytest.fixture(scope="module")
def mirror(real):
    """The four files served over HTTP on 127.0.0.1 by a separate process (python -m http.server)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                               "--directory", str(real)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.time() > deadline:
                server.kill()
                raise
            time.sleep(0.1)
    md5 = {f.name: hashlib.md5(f.read_bytes()).hexdigest() for f in real.glob("*.gz")}
    yield "http://127.0.0.1:{}/".format(port), md5
    server.terminate()
    server.wait(timeout=10)


LOADER = """
import json, sys
from torchvision.datasets import MNIST
mirror, md5, target = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
MNIST.mirrors = [mirror]
MNIST.resources = [(name, md5[name]) for name, _ in MNIST.resources]
from labkit.data import load_mnist
data = load_mnist(target)
print(json.dumps({"source": data.source, "train": int(data.train_labels.sum()), "notes": data.notes}))
"""


def load_in_process(mirror, target):
    url, md5 = mirror
    return subprocess.Popen([sys.executable, "-c", LOADER, url, json.dumps(md5), str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))


def test_eight_runs_on_a_cold_cache_download_once_and_agree(tmp_path, mirror, real):
    target = tmp_path / "cache"
    procs = [load_in_process(mirror, target) for _ in range(8)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    expected = int(load_mnist(real, download=False).train_labels.sum())
    assert all(r["source"] == "full" and r["train"] == expected for r in results)
    raw = target / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir() if not p.name.endswith(".gz")) == sorted(FILES.values())


def test_a_corrupted_download_in_the_cache_is_repaired(tmp_path, mirror):
    target = tmp_path / "cache"
    assert load_in_process(mirror, target).communicate(timeout=300)[0]
    victim = target / "MNIST" / "raw" / "train-labels-idx1-ubyte"
    victim.write_bytes(victim.read_bytes()[:5000])
    proc = load_in_process(mirror, target)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result["source"] == "full"
    assert any("Repaired the MNIST cache" in n and "truncated" in n for n in result["notes"])
    kept = [p for p in victim.parent.iterdir() if ".corrupt-" in p.name]
    assert kept, "the bad file is kept aside, not deleted"
