"""Micro-batches that fit: a measured probe with a back-off on out of memory, cached per device and
model. The loop accumulates the micro-batches' gradients (``labkit.bert.train_step``).

    micro = choose_micro_batch("auto", 1024, probe, device=device, key={"model": "bert-large", "seq": 128})
"""

from __future__ import annotations

import gc
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, TypeVar, Union

from labkit.accelerator.precision import AcceleratorError, DeviceInfo, device_info
from labkit.data.cache import cache_dir
from labkit.errors import LabkitError
from labkit.files import write_atomic

__all__ = ["MicroBatch", "choose_micro_batch", "probe_micro_batch", "micro_batch_cache_file", "is_out_of_memory",
           "fits", "NothingFits"]

T = TypeVar("T")


class NothingFits(LabkitError, MemoryError):
    """Even a micro-batch of 1 ran out of the device's memory."""

    shown_as = "NothingFits"


@dataclass(frozen=True)
class MicroBatch:
    """How a global batch is split: ``size`` samples a forward/backward, ``accumulation`` of them a step."""

    size: int
    accumulation: int
    source: str  # "asked" | "probed" | "cached" | "whole batch"
    tried: Tuple[int, ...] = ()  # sizes the probe tried, largest first (the last one fitted)

    @property
    def global_batch(self) -> int:
        return self.size * self.accumulation

    def why(self) -> str:
        """One clause for the plan's Why line."""
        split = ("micro-batch {} = the global batch".format(self.size) if self.accumulation == 1 else
                 "micro-batch {} x {} accumulated = global batch {}".format(self.size, self.accumulation,
                                                                           self.global_batch))
        failed = ", ".join(str(s) for s in self.tried[:-1])
        reasons = {"probed": "probed: {} ran out of memory".format(failed) if failed else "probed: it fits",
                   "cached": "as probed before on this device", "asked": "micro_batch_size asked"}
        return "{} ({})".format(split, reasons.get(self.source, "no probe off a GPU"))


def is_out_of_memory(exc: BaseException) -> bool:
    """True for a device or host allocation that failed: torch's OutOfMemoryError (CUDA, MPS), a
    CPU allocator's refusal (a RuntimeError from torch), a cuBLAS workspace that could not be had."""
    if isinstance(exc, MemoryError):
        return True
    import torch

    oom_types = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                                  getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)
    if oom_types and isinstance(exc, oom_types):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(sign in text for sign in (
        "out of memory", "can't allocate memory", "CUBLAS_STATUS_ALLOC_FAILED", "MPS backend out of memory"))


def _divisors_desc(n: int) -> Tuple[int, ...]:
    return tuple(d for d in range(n, 0, -1) if n % d == 0)


def fits(attempt: Callable[[], T]) -> Tuple[bool, Optional[T]]:
    """``(True, attempt())``, or ``(False, None)`` when ``attempt`` ran out of memory; any other error
    propagates. Either way, memory is released after the attempt, outside its ``except`` block: while
    an exception is being handled its traceback keeps the failed attempt's frames, and with them its
    tensors, alive (PyTorch's FAQ, "my out of memory exception handler can't allocate memory"), so
    ``empty_cache`` there could not give their blocks back."""
    try:
        result = attempt()
    except BaseException as exc:  # noqa: B902 - only out-of-memory is caught; the rest re-raised
        if not is_out_of_memory(exc):
            raise
        fitted, result = False, None
    else:
        fitted = True
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return fitted, result


def micro_batch_cache_file(key: Mapping[str, Any], info: DeviceInfo, global_batch: int):
    """Where a probed micro-batch is cached: cache_dir()/accelerator/micro-batch-<hash>.json, keyed by
    ``key`` (model, sequence length, precision, eager or compiled), the global batch, the device's name
    and memory, torch's and transformers' versions (a new release changes what a step allocates)."""
    from importlib.metadata import version

    import torch

    try:
        transformers = version("transformers")
    except Exception:  # not installed: the models probed here are plain torch
        transformers = None
    full = {"key": {str(k): key[k] for k in sorted(key)}, "global_batch": global_batch, "device": info.name,
            "memory_bytes": info.memory_bytes, "torch": torch.__version__, "transformers": transformers}
    digest = hashlib.sha256(json.dumps(full, sort_keys=True, default=str).encode()).hexdigest()[:16]
    return cache_dir() / "accelerator" / "micro-batch-{}.json".format(digest), full


#: A cached probe is taken again when this much more of the device's memory is free now than was
#: free at the probe (another process held the GPU then): small drifts keep the cached size.
MORE_FREE_SHARE = 0.05


def _cached(path, full: Dict[str, Any], global_batch: int, free: Optional[int]) -> Optional[int]:
    try:
        saved = json.loads(path.read_text())
        size = saved["micro_batch"] if saved.get("for") == json.loads(json.dumps(full, default=str)) else None
        was_free = saved.get("free_bytes")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # absent, half-written by an old labkit, or edited by hand: probe again
    ok = isinstance(size, int) and not isinstance(size, bool) and 0 < size <= global_batch and global_batch % size == 0
    if ok and free is not None:
        total = full.get("memory_bytes") or free
        ok = isinstance(was_free, int) and free <= was_free + MORE_FREE_SHARE * total
    return size if ok else None


def probe_micro_batch(global_batch: int, probe: Callable[[int], None], *, info: DeviceInfo,
                      key: Mapping[str, Any], use_cache: bool = True) -> MicroBatch:
    """The largest divisor of ``global_batch`` for which ``probe(m)`` (one real forward, backward and
    optimizer step at micro-batch m) does not run out of memory; larger ones back off, memory is
    released between tries (:func:`fits`). Cached per key and device with the memory free at the
    probe; probed again when clearly more is free now. Any other error from the probe propagates."""
    path, full = micro_batch_cache_file(key, info, global_batch)
    free = info.free_bytes  # None where unknown (a DeviceInfo built by hand): the cached size is taken
    if use_cache:
        size = _cached(path, full, global_batch, free)
        if size is not None:
            return MicroBatch(size, global_batch // size, "cached")
    tried = []
    for size in _divisors_desc(global_batch):
        tried.append(size)
        fitted, _ = fits(lambda: probe(size))
        if not fitted:
            continue
        if use_cache:
            write_atomic(path, json.dumps({"for": full, "micro_batch": size, "tried": tried, "free_bytes": free},
                                          default=str, indent=1))
        return MicroBatch(size, global_batch // size, "probed", tuple(tried))
    raise NothingFits("Even a micro-batch of 1 ran out of memory on {} (tried {}): this model does not fit "
                      "there; use a smaller model or a GPU with more memory.".format(
                          info.describe(), ", ".join(str(t) for t in tried)))


def choose_micro_batch(requested: Union[int, str], global_batch: int, probe: Callable[[int], None], *,
                       device: Any, key: Mapping[str, Any]) -> MicroBatch:
    """The micro-batch a loop uses. ``requested`` an int: checked to divide ``global_batch``.
    "auto": on CUDA, :func:`probe_micro_batch`; on a CPU or MPS no probe, the whole global batch
    (CPU numbers do not move). ``device`` is a torch device or a :class:`DeviceInfo`."""
    if isinstance(global_batch, bool) or not isinstance(global_batch, int) or global_batch < 1:
        raise AcceleratorError("global batch={!r}: allowed: a whole number of at least 1.".format(global_batch))
    if requested == "auto":
        info = device_info(device)
        if info.kind != "cuda":
            return MicroBatch(global_batch, 1, "whole batch")
        return probe_micro_batch(global_batch, probe, info=info, key=key)
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise AcceleratorError("micro_batch_size={!r}: allowed: 'auto' or a whole number dividing the global "
                               "batch {}.".format(requested, global_batch))
    if requested < 1 or global_batch % requested:
        raise AcceleratorError("micro_batch_size={} does not divide the global batch {}; allowed: 'auto' or one of "
                               "{}.".format(requested, global_batch,
                                            ", ".join(str(d) for d in sorted(_divisors_desc(global_batch)))))
    return MicroBatch(requested, global_batch // requested, "asked")
