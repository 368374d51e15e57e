"""MNIST loading: pre-staged files as they are, a locked download, checks that never let a bad
file through, and the shipped sample when there is nothing else. Real MNIST from ../shared."""

import functools
import gzip
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from labkit.data import mnist
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


def test_a_right_sized_but_corrupted_file_is_caught_by_sha256(tmp_path, real):
    for name in FILES.values():
        (tmp_path / name).write_bytes(gzip.decompress((real / (name + ".gz")).read_bytes()))
    victim = tmp_path / "t10k-labels-idx1-ubyte"
    raw = bytearray(victim.read_bytes())
    raw[100] = (raw[100] + 1) % 10
    victim.write_bytes(bytes(raw))
    with pytest.raises(MnistDataError, match="SHA-256 mismatch"):
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


# --- downloads, through labkit's real code, from mirrors served on 127.0.0.1 ---------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def mirrors(real, tmp_path_factory):
    """Three mirrors on 127.0.0.1, a port the system picks: ``good`` serves the real files, ``wrong``
    a train-labels file with one label changed (gzip intact, content not the official one),
    ``truncated`` a train-labels.gz cut in half; their other three files are the real ones."""
    root = tmp_path_factory.mktemp("mirrors")
    for name in ("good", "wrong", "truncated"):
        (root / name).mkdir()
        for f in real.glob("*.gz"):
            (root / name / f.name).symlink_to(f)
    labels = "train-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress((real / labels).read_bytes()))
    raw[100] = (raw[100] + 1) % 10
    (root / "wrong" / labels).unlink()
    (root / "wrong" / labels).write_bytes(gzip.compress(bytes(raw)))
    (root / "truncated" / labels).unlink()
    whole = (real / labels).read_bytes()
    (root / "truncated" / labels).write_bytes(whole[: len(whole) // 2])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = "http://127.0.0.1:{}/".format(server.server_address[1])
    yield {name: base + name + "/" for name in ("good", "wrong", "truncated")}
    server.shutdown()
    server.server_close()


LOADER = """
import json, sys
from labkit.data import mnist
mnist.MIRRORS = [sys.argv[1]]
data = mnist.load_mnist(sys.argv[2])
print(json.dumps({"source": data.source, "train": int(data.train_labels.sum()), "notes": data.notes}))
"""


def load_in_process(url, target):
    return subprocess.Popen([sys.executable, "-c", LOADER, url, str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2])))


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tmp-"))


def test_eight_runs_on_a_cold_cache_download_once_and_agree(tmp_path, mirrors, real):
    target = tmp_path / "cache"
    procs = [load_in_process(mirrors["good"], target) for _ in range(8)]
    outputs = [p.communicate(timeout=300) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err[-2000:]
    results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
    expected = int(load_mnist(real, download=False).train_labels.sum())
    assert all(r["source"] == "full" and r["train"] == expected for r in results)
    raw = target / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir() if not p.name.startswith(".")) == sorted(FILES.values())
    assert leftovers(raw) == []


def test_a_download_is_the_official_release_byte_for_byte(tmp_path, mirrors, real, monkeypatch):
    monkeypatch.setattr(mnist, "MIRRORS", [mirrors["good"]])
    assert load_mnist(tmp_path, allow_sample=False).source == "full"
    for name in FILES.values():
        assert (tmp_path / "MNIST" / "raw" / name).read_bytes() == gzip.decompress((real / (name + ".gz")).read_bytes())


@pytest.mark.parametrize("mirror,why", [("wrong", "SHA-256"), ("truncated", "end-of-stream")])
def test_a_bad_file_from_a_mirror_is_refused_and_nothing_of_it_kept(tmp_path, mirrors, monkeypatch, mirror, why):
    monkeypatch.setattr(mnist, "MIRRORS", [mirrors[mirror]])
    data = load_mnist(tmp_path)
    assert data.source == "sample"
    failed = next(n for n in data.notes if n.startswith("Downloading MNIST"))
    assert "train-labels-idx1-ubyte" in failed and why in failed
    raw = tmp_path / "MNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir() if not p.name.startswith(".")) == ["train-images-idx3-ubyte"]
    assert leftovers(raw) == []
    # the next mirror serves it right: only the missing files are fetched, from there
    kept = (raw / "train-images-idx3-ubyte").stat().st_ino
    monkeypatch.setattr(mnist, "MIRRORS", [mirrors[mirror], mirrors["good"]])
    assert load_mnist(tmp_path, allow_sample=False).source == "full"
    assert (raw / "train-images-idx3-ubyte").stat().st_ino == kept


def test_without_a_mirror_the_sample_runs_and_says_why(tmp_path, monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(mnist, "MIRRORS", ["http://127.0.0.1:{}/".format(port)])
    data = load_mnist(tmp_path)
    assert data.source == "sample"
    assert any("Downloading MNIST" in n and "refused" in n.lower() for n in data.notes), data.notes


def test_one_truncated_file_in_the_cache_is_set_aside_alone(tmp_path, mirrors, real):
    target = tmp_path / "cache"
    raw = target / "MNIST" / "raw"  # the cache as a download leaves it
    raw.mkdir(parents=True)
    for name in FILES.values():
        (raw / name).write_bytes(gzip.decompress((real / (name + ".gz")).read_bytes()))
    victim = raw / "train-labels-idx1-ubyte"
    victim.write_bytes(victim.read_bytes()[:5000])
    others = {name: (raw / name).stat().st_ino for name in FILES.values() if name != victim.name}
    proc = load_in_process(mirrors["good"], target)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    kept_aside = [p for p in raw.iterdir() if ".corrupt-" in p.name]
    assert [p.name.split(".corrupt-")[0] for p in kept_aside] == [victim.name]
    assert kept_aside[0].stat().st_size == 5000  # the bad file is kept aside, not deleted
    assert {name: (raw / name).stat().st_ino for name in others} == others  # the good files stay, not fetched again
    result = json.loads(out.strip().splitlines()[-1])
    assert result["source"] == "full"
    repaired = [n for n in result["notes"] if "Repaired the MNIST cache" in n]
    assert len(repaired) == 1 and "this bad file" in repaired[0] and "truncated" in repaired[0]
    assert str(victim) in repaired[0] and "kept the other files" in repaired[0]


def test_a_full_disk_during_a_download_keeps_nothing_half_written(tmp_path, mirrors, monkeypatch):
    from tests.faults import small_disk

    monkeypatch.setattr(mnist, "MIRRORS", [mirrors["good"]])
    with small_disk(tmp_path / "disk", kib=300) as disk:
        data = load_mnist(disk)
        assert data.source == "sample"
        assert any("Downloading MNIST" in n and "No space left on device" in n for n in data.notes), data.notes
        raw = disk / "MNIST" / "raw"
        assert [p.name for p in raw.iterdir() if not p.name.startswith(".")] == []
        assert leftovers(raw) == []
