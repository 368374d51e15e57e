"""Read and check IDX files (the MNIST file format), gzip-compressed or raw.

A truncated download or a flipped bit must never reach training silently: the header's
dimensions are checked against the bytes present, and gzip's CRC against the content.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import zlib
from pathlib import Path
from typing import Tuple, Union

import numpy as np

from labkit.errors import LabkitError

__all__ = ["IdxError", "read_idx", "content_md5"]

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


class IdxError(LabkitError, ValueError):
    """An IDX file is missing, truncated or corrupted; the message names the file."""


def _read_bytes(path: Path) -> bytes:
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                return f.read()
        return path.read_bytes()
    except (EOFError, OSError, zlib.error) as exc:  # truncated gzip, bad CRC, unreadable
        raise IdxError("{}: cannot be read ({}): the file is truncated or corrupted".format(path, exc)) from None


def read_idx(path: Union[str, os.PathLike]) -> Tuple[np.ndarray, bytes]:
    """The array stored in an IDX file, and the file's uncompressed bytes."""
    path = Path(path)
    data = _read_bytes(path)
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


def content_md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()
