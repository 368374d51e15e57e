"""MNIST for the Graphcore exercise: pre-staged IDX files, a locked torchvision download, or the shipped
sample; every file checked. The order and the checks: docs/graphcore.md (Data).
"""

from __future__ import annotations

import gzip
import hashlib
import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from labkit.data.cache import data_dir as resolve_data_dir
from labkit.data.cache import locked
from labkit.errors import LabkitError

__all__ = ["MnistData", "load_mnist", "MnistDataError", "SAMPLE_DIR", "MEAN", "STD"]

#: The tutorial's normalisation (torchvision.transforms.Normalize((0.1307,), (0.3081,))).
MEAN, STD = 0.1307, 0.3081

FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
# MD5 of the uncompressed official files (gzip bytes differ between mirrors).
OFFICIAL_MD5 = {
    "train_images": "6bbc9ace898e44ae57da46a324031adb",
    "train_labels": "a25bea736e30d166cdddb491f175f624",
    "test_images": "2646ac647ad5339dbf082846283269ea",
    "test_labels": "27ae3e4e09519cfbb04c329615203637",
}
FULL_COUNTS = {"train": 60000, "test": 10000}
SAMPLE_DIR = Path(__file__).resolve().parent / "mnist_sample"


class MnistDataError(LabkitError, RuntimeError):
    """MNIST could not be loaded; the message names the file and says how to fix it."""

    shown_as = "MnistDataError"


_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxError(LabkitError, ValueError):
    """An IDX file (the MNIST file format) is missing, truncated or corrupted; the message names the file."""


def read_idx(path: Path) -> Tuple[np.ndarray, bytes]:
    """The array stored in an IDX file (gzip-compressed or raw), and the file's uncompressed bytes."""
    try:
        with gzip.open(path, "rb") if path.suffix == ".gz" else open(path, "rb") as f:
            data = f.read()
    except (EOFError, OSError, zlib.error) as exc:  # truncated gzip, bad CRC, unreadable
        raise IdxError("{}: cannot be read ({}): the file is truncated or corrupted".format(path, exc)) from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise IdxError("{}: not an IDX file (bad magic number {!r})".format(path, data[:4]))
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise IdxError("{}: truncated inside its header".format(path))
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    dtype = np.dtype(_DTYPES[data[2]])
    expected = header + int(np.prod(dims)) * dtype.itemsize
    if len(data) != expected:
        raise IdxError("{}: holds {} bytes but its header (shape {}) needs {}: the file is {}".format(
            path, len(data), tuple(dims), expected, "truncated" if len(data) < expected else "too long"))
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return array, data


@dataclass
class MnistData:
    """The four MNIST arrays (images uint8 N x 28 x 28, labels int64) and where they came from."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray
    source: str  # "full" or "sample"
    location: str
    notes: List[str] = field(default_factory=list)

    @property
    def comparable(self) -> bool:
        """True when accuracy can be compared with the course's numbers (full MNIST)."""
        return self.source == "full"

    def describe(self) -> str:
        return "MNIST ({}): {:,} training and {:,} test images from {}".format(
            "full" if self.comparable else "labkit's shipped sample",
            len(self.train_labels), len(self.test_labels), self.location)


def _find(directory: Path) -> Optional[Dict[str, Path]]:
    """The four files in ``directory`` or its torchvision layout, raw preferred over gzip."""
    for folder in (directory, directory / "MNIST" / "raw", directory / "raw"):
        found = {key: next((c for c in (folder / name, folder / (name + ".gz")) if c.is_file()), None)
                 for key, name in FILES.items()}
        if all(found.values()):
            return found
    return None


def _read_all(files: Dict[str, Path], source: str, location: str, notes: List[str]) -> MnistData:
    """The four files, checked (full-size ones of full MNIST against the official MD5), as MnistData."""
    arrays = {}
    for key, path in files.items():
        array, raw = read_idx(path)
        official = source == "full" and len(array) == FULL_COUNTS[key.split("_")[0]]
        if official and hashlib.md5(raw).hexdigest() != OFFICIAL_MD5[key]:
            raise IdxError("{}: the right size, but its content differs from the official MNIST release "
                           "(MD5 mismatch): the file is corrupted".format(path))
        arrays[key] = array
    for split in ("train", "test"):
        images, labels = arrays[split + "_images"], arrays[split + "_labels"]
        if images.ndim != 3 or images.shape[1:] != (28, 28) or labels.ndim != 1 or len(images) != len(labels):
            raise IdxError("{} / {}: shapes {} and {} are not MNIST images with one label each".format(
                files[split + "_images"], files[split + "_labels"], images.shape, labels.shape))
    return MnistData(
        train_images=np.ascontiguousarray(arrays["train_images"]),
        train_labels=arrays["train_labels"].astype(np.int64),
        test_images=np.ascontiguousarray(arrays["test_images"]),
        test_labels=arrays["test_labels"].astype(np.int64),
        source=source, location=location, notes=notes)


def _download(directory: Path) -> None:
    """torchvision's own download (mirrors, MD5 of the archives), into ``directory/MNIST/raw``."""
    import socket

    import torchvision

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(30)  # a blocked network must fail, not hang a notebook
    try:
        for train in (True, False):
            torchvision.datasets.MNIST(str(directory), train=train, download=True)
    finally:
        socket.setdefaulttimeout(previous)


def load_mnist(data_dir: Optional[Union[str, os.PathLike]] = None, download: bool = True,
               allow_sample: bool = True) -> MnistData:
    """MNIST from ``data_dir`` (else $LABKIT_DATA_DIR, else the cache), a download, or the sample."""
    directory = resolve_data_dir(data_dir, "mnist")
    notes: List[str] = []
    files = _find(directory)
    if files is not None:
        try:
            return _read_all(files, "full", str(directory), notes)
        except IdxError as exc:
            managed = all(p.parent == directory / "MNIST" / "raw" for p in files.values())
            if not (managed and download):
                raise MnistDataError(
                    "{}\nThis file was staged by hand, so labkit leaves it as it is. Replace it with a good copy "
                    "of the MNIST IDX file (gzip or raw), or point data_dir at another directory.".format(exc)) from None
            with locked(directory):
                if _find(directory) == files:  # another run may have repaired it meanwhile
                    stamp = time.strftime("%Y%m%d-%H%M%S")
                    moved = [str(path.with_name(path.name + ".corrupt-" + stamp)) for path in files.values()]
                    for path, target in zip(files.values(), moved):
                        os.replace(path, target)
                    notes.append("Repaired the MNIST cache: {}. The bad files were kept as {}.".format(exc, ", ".join(moved)))
            files = None
    if download:
        try:
            with locked(directory):
                if _find(directory) is None:
                    _download(directory)
            files = _find(directory)
            if files is not None:
                return _read_all(files, "full", str(directory), notes)
        except IdxError as exc:
            raise MnistDataError("{}\nThe download itself is damaged; delete {} and run again.".format(
                exc, directory / "MNIST")) from None
        except Exception as exc:  # no network (torchvision raises RuntimeError), a proxy, a broken mirror
            reason = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
            notes.append("Downloading MNIST into {} failed: {}".format(directory, reason[:300]))
    if not allow_sample:
        raise MnistDataError(
            "MNIST was not found in {} and could not be downloaded. Stage the four IDX files "
            "({}) there, gzip or raw, or pass data_dir.".format(directory, ", ".join(FILES.values())))
    files = _find(SAMPLE_DIR)
    if files is None:  # pragma: no cover - a broken install
        raise MnistDataError("labkit's MNIST sample is missing from {}; reinstall labkit".format(SAMPLE_DIR))
    notes.append("NOTICE: full MNIST was not found and could not be downloaded, so this run uses labkit's "
                 "shipped sample of 3,000 training and 1,000 test digits. Its accuracy is NOT comparable "
                 "with the course's numbers on the full dataset. Stage the four MNIST IDX files in a "
                 "directory and pass it as data_dir (or set LABKIT_DATA_DIR) for a comparable run.")
    return _read_all(files, "sample", str(SAMPLE_DIR), notes)
