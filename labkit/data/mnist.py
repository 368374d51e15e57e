"""MNIST for the Graphcore exercise: pre-staged IDX files, a locked download from torchvision's mirrors
(urllib, each file checked by SHA-256 before it is kept), or the shipped sample; every file checked.
The order and the checks: docs/graphcore.md (Data).
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import time
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from labkit.data.cache import data_dir as resolve_data_dir
from labkit.data.cache import locked
from labkit.errors import LabkitError
from labkit.files import produce_atomic

__all__ = ["MnistData", "load_mnist", "MnistDataError", "SAMPLE_DIR", "MEAN", "STD"]

#: The tutorial's normalisation (torchvision.transforms.Normalize((0.1307,), (0.3081,))).
MEAN, STD = 0.1307, 0.3081

FILES = {
    "train_images": "train-images-idx3-ubyte",
    "train_labels": "train-labels-idx1-ubyte",
    "test_images": "t10k-images-idx3-ubyte",
    "test_labels": "t10k-labels-idx1-ubyte",
}
# SHA-256 of the uncompressed official files: the gzip bytes differ between mirrors and recompressions,
# the IDX bytes do not. Computed from copies whose MD5s equal the official release's
# (6bbc9ace..., a25bea73..., 2646ac64..., 27ae3e4e...): docs/graphcore.md (Data).
OFFICIAL_SHA256 = {
    "train_images": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train_labels": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "test_images": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "test_labels": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
#: Where a download looks, in order (the mirrors torchvision's MNIST uses); each serves ``<name>.gz``.
MIRRORS = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
#: Seconds a mirror may stay silent: a blocked network must fail, not hang a notebook.
DOWNLOAD_TIMEOUT = 30
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


def _check(key: str, path: Path, source: str) -> np.ndarray:
    """One file's array, checked (a full-size file of full MNIST against the official SHA-256)."""
    array, raw = read_idx(path)
    official = source == "full" and len(array) == FULL_COUNTS[key.split("_")[0]]
    if official and hashlib.sha256(raw).hexdigest() != OFFICIAL_SHA256[key]:
        raise IdxError("{}: the right size, but its content differs from the official MNIST release "
                       "(SHA-256 mismatch): the file is corrupted".format(path))
    return array


def _read_all(files: Dict[str, Path], source: str, location: str, notes: List[str]) -> MnistData:
    """The four files, each checked, as MnistData."""
    arrays = {key: _check(key, path, source) for key, path in files.items()}
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


def _set_aside_bad(files: Dict[str, Path]) -> List[str]:
    """Move each file of the cache that fails its check to ``*.corrupt-<time>``, keeping the good ones
    (one truncated file must not cost the other three downloads); say what moved where, and why."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    moved = []
    for key, path in files.items():
        try:
            _check(key, path, "full")
        except IdxError as exc:
            target = path.with_name(path.name + ".corrupt-" + stamp)
            os.replace(path, target)
            moved.append("{} (kept as {})".format(exc, target.name))
    return moved


def _managed(directory: Path) -> Path:
    """The folder labkit downloads into: torchvision's layout, so a cache it filled is found as it is."""
    return directory / "MNIST" / "raw"


def _unpack(url: str, key: str, temporary: str) -> None:
    """Stream ``url`` (gzip) into ``temporary`` uncompressed; refuse it unless its SHA-256 is the official one."""
    digest = hashlib.sha256()
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response, \
            gzip.GzipFile(fileobj=response) as unpacked, open(temporary, "wb") as out:
        for chunk in iter(lambda: unpacked.read(1 << 20), b""):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != OFFICIAL_SHA256[key]:
        raise IdxError("{}: unpacked, its SHA-256 is {}, not the official MNIST release's {}".format(
            url, digest.hexdigest(), OFFICIAL_SHA256[key]))


def _download(directory: Path) -> None:
    """Each of the four files missing from ``directory/MNIST/raw``, from the first mirror that serves it
    whole and right; nothing is kept of a file that fails (truncated, refused by its hash)."""
    folder = _managed(directory)
    mirrors = list(MIRRORS)
    for key, name in FILES.items():
        if (folder / name).is_file() or (folder / (name + ".gz")).is_file():
            continue
        failures = []
        for mirror in list(mirrors):
            url = mirror + name + ".gz"
            try:
                produce_atomic(folder / name, lambda temporary: _unpack(url, key, temporary))
                break
            except IdxError as exc:  # this mirror's copy is wrong: another may be right
                failures.append(str(exc))
            except (OSError, EOFError, zlib.error, http.client.HTTPException, ValueError) as exc:
                failures.append("{}: {}".format(url, exc))
                if isinstance(exc, OSError) and not isinstance(exc, urllib.error.HTTPError):
                    mirrors.remove(mirror)  # unreachable: not worth a timeout for each file
        else:
            raise MnistDataError("no mirror served {} whole and right: {}".format(name, "; ".join(failures)))


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
            managed = all(p.parent == _managed(directory) for p in files.values())
            if not (managed and download):
                raise MnistDataError(
                    "{}\nThis file was staged by hand, so labkit leaves it as it is. Replace it with a good copy "
                    "of the MNIST IDX file (gzip or raw), or point data_dir at another directory.".format(exc)) from None
            with locked(directory):
                again = _find(directory)  # another run may have repaired it meanwhile
                moved = _set_aside_bad(again) if again is not None else []
            if moved:
                notes.append("Repaired the MNIST cache: set aside {} and kept the other files: {}.".format(
                    "this bad file" if len(moved) == 1 else "these {} bad files".format(len(moved)), "; ".join(moved)))
            files = None
    if download:
        try:
            with locked(directory):
                _download(directory)
            files = _find(directory)
            if files is not None:
                return _read_all(files, "full", str(directory), notes)
        except IdxError as exc:
            raise MnistDataError("{}\nThe download itself is damaged; delete {} and run again.".format(
                exc, directory / "MNIST")) from None
        except (MnistDataError, OSError) as exc:  # no network, a proxy, a broken mirror, a full disk
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
