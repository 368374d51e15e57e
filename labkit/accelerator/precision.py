"""Which precision a run trains in, from what the device is: bf16 autocast on a GPU that has it, fp32 on
a CPU; and the bf16 peak a GPU run's model FLOP utilisation (MFU) is measured against.

    info = describe(torch.device("cuda"))          # DeviceInfo("cuda", "NVIDIA H200", (9, 0), 150...e9)
    precision = resolve_precision("auto", info)    # Precision("bf16", "precision='auto': bf16 autocast on ...")
    with precision.autocast(device): loss = model(x, y)
    peak_flops(info)          # (989e12, "bf16 dense peak of the NVIDIA H200, 989 TFLOP/s") or None
    utilisation(model_flops_per_second, info)   # ({"model_tflops": 405.2, "mfu": 0.41}, the note on the peak)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, ContextManager, Dict, Iterator, Optional, Tuple

from labkit import devices
from labkit.errors import LabkitError

__all__ = ["PRECISIONS", "DeviceInfo", "describe", "device_info", "Precision", "resolve_precision",
           "TESTBED_PRECISION", "AcceleratorError", "PEAK_BF16_FLOPS", "peak_flops", "mfu", "utilisation"]

PRECISIONS = ("auto", "fp32", "tf32", "bf16")
_AMPERE = (8, 0)  # bf16 tensor cores and TF32 arrive with compute capability 8.0


class AcceleratorError(LabkitError, ValueError):
    """A precision, micro-batch or launch mode this device cannot do; names the parameter and what is allowed."""

    shown_as = "AcceleratorError"


@dataclass(frozen=True)
class DeviceInfo:
    """What the policy needs to know about a device; tests build these for devices not here."""

    kind: str  # "cuda" | "mps" | "cpu"
    name: str  # "NVIDIA H200", the CPU's model
    capability: Optional[Tuple[int, int]] = None  # CUDA compute capability
    memory_bytes: Optional[int] = None  # total device memory (CUDA); None elsewhere
    count: int = 1  # devices of this kind visible
    free_bytes: Optional[int] = None  # memory free when this was read (CUDA; other processes hold the rest)

    def describe(self) -> str:
        """'the NVIDIA H200 (compute capability 9.0, 141 GB)', 'the CPU', 'Apple MPS'."""
        if self.kind == "cuda":
            extra = []
            if self.capability:
                extra.append("compute capability {}.{}".format(*self.capability))
            if self.memory_bytes:
                extra.append("{:.0f} GB".format(self.memory_bytes / 1e9))
            return "the {}{}".format(self.name, " ({})".format(", ".join(extra)) if extra else "")
        return "Apple MPS" if self.kind == "mps" else "the CPU"  # no model name: plans read the same on any CPU


def describe(device: Any) -> DeviceInfo:
    """The :class:`DeviceInfo` of a torch device (or its name: "cuda", "cuda:1", "cpu", "mps")."""
    import torch

    device = torch.device(device) if not isinstance(device, torch.device) else device
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        return DeviceInfo("cuda", props.name, (props.major, props.minor), int(props.total_memory),
                          torch.cuda.device_count(), int(torch.cuda.mem_get_info(index)[0]))
    if device.type == "mps":
        return DeviceInfo("mps", "Apple MPS")
    return DeviceInfo("cpu", devices.device_name(device))


def device_info(device: Any) -> DeviceInfo:
    """``device`` itself when it is a :class:`DeviceInfo` (tests, plans for another machine), else :func:`describe`."""
    return device if isinstance(device, DeviceInfo) else describe(device)


@dataclass(frozen=True)
class Precision:
    """A resolved precision: ``name`` is "fp32", "tf32" or "bf16" (never "auto"), ``why`` one clause for a plan."""

    name: str
    why: str

    def autocast(self, device: Any) -> ContextManager[Any]:
        """The block a forward (and its loss) runs in: bf16 autocast; TF32 matmuls and convolutions
        (restored after); fp32 with TF32 turned off on a GPU (cuDNN allows it by default), nothing on a CPU.
        A training step holds :meth:`step` around its forward, backward and optimizer as well."""
        import torch

        kind = device.kind if isinstance(device, DeviceInfo) else torch.device(device).type
        if self.name == "bf16":
            return torch.autocast(kind, dtype=torch.bfloat16)
        if kind == "cuda":
            return _tf32(self.name == "tf32")
        return contextlib.nullcontext()

    def step(self) -> ContextManager[None]:
        """The block a whole training step runs in: TF32 allowed for matmuls and convolutions under "tf32",
        forbidden under "fp32", as PyTorch sets them under "bf16"; restored after. The backward runs
        outside the forward's :meth:`autocast` and computes about two thirds of a step's FLOPs, so the
        flags must hold there too. They are CUDA's flags: a CPU computes the same with them set or not."""
        if self.name in ("tf32", "fp32"):
            return _tf32(self.name == "tf32")
        return contextlib.nullcontext()


@contextlib.contextmanager
def _tf32(allowed: bool) -> Iterator[None]:
    import torch

    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allowed
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _supported(info: DeviceInfo) -> Tuple[str, ...]:
    if info.kind == "cuda":
        return ("fp32", "tf32", "bf16") if (info.capability or (0, 0)) >= _AMPERE else ("fp32",)
    if info.kind == "cpu":
        return ("fp32", "bf16")  # CPU autocast has bf16 (slow on most CPUs, but correct); TF32 is NVIDIA's
    return ("fp32",)  # MPS: fp32 only (its bf16 depends on the macOS version)


def resolve_precision(requested: str, info: DeviceInfo, *, launch_bound: bool = False) -> Precision:
    """``requested`` ("auto", "fp32", "tf32", "bf16") on ``info``: auto is bf16 autocast on a GPU of
    compute capability 8.0 or newer, fp32 on an older GPU, a CPU or MPS. ``launch_bound``: the
    step is a small network's, bound by kernel launches, not arithmetic (MNIST at micro-batch 8):
    auto takes TF32 there, which adds no kernels, where bf16 autocast adds a cast before each layer.
    An explicit value the device cannot do is refused with an :class:`AcceleratorError` naming what it can."""
    if requested not in PRECISIONS:
        raise AcceleratorError("precision={!r} is not a precision; allowed: {}.".format(
            requested, ", ".join(repr(p) for p in PRECISIONS)))
    supported = _supported(info)
    where = info.describe()
    if requested == "auto":
        if launch_bound and "tf32" in supported:
            return Precision("tf32", "precision='auto': TF32 on {} (a small network's step is bound by kernel "
                                     "launches; bf16 autocast would add a cast kernel before each layer)".format(where))
        if "bf16" in supported and info.kind == "cuda":
            return Precision("bf16", "precision='auto': bf16 autocast on {}".format(where))
        reason = "older than Ampere: no bf16 or TF32" if info.kind == "cuda" else "as before"
        return Precision("fp32", "precision='auto': fp32 on {}, {}".format(where, reason))
    if requested not in supported:
        raise AcceleratorError("precision={!r} is not available on {}; allowed there: {}{}.".format(
            requested, where, ", ".join(repr(p) for p in ("auto",) + supported),
            " (bf16 and TF32 need compute capability 8.0 or newer)" if info.kind == "cuda" else ""))
    what = {"fp32": "fp32", "tf32": "TF32 matmuls and convolutions", "bf16": "bf16 autocast"}[requested]
    return Precision(requested, "precision={!r}: {} on {}".format(requested, what, where))


#: What each testbed trains in, for reports that put a GPU run's precision beside the testbed's.
TESTBED_PRECISION: Dict[str, str] = {
    "cs2": "mixed precision (fp16 compute, fp32 weights; the modelzoo's default)",
    "cs3": "mixed precision (bf16 compute, fp32 weights; the modelzoo's default)",
    "sn30": "mixed precision (bf16 compute, fp32 weights)",
    "ipu": "fp32 (the tutorial's: no half precision asked for)",
    "groq": "fp16 (GroqChip computes in fp16 from an fp32 ONNX model)",
    "gpu": "what precision= resolved to (fp32 on a CPU, bf16 autocast on an Ampere or newer GPU)",
}


#: NVIDIA's datasheet dense (no sparsity) bf16 tensor-core peaks, by the name ``torch.cuda.get_device_name``
#: gives. A GPU not named here gets no MFU rather than a guessed one.
PEAK_BF16_FLOPS: Dict[str, float] = {
    "NVIDIA H100 80GB HBM3": 989e12,  # SXM5
    "NVIDIA H100 PCIe": 756e12,
    "NVIDIA H100 NVL": 835e12,
    "NVIDIA H200": 989e12,  # SXM
    "NVIDIA H200 NVL": 835e12,
    "NVIDIA GH200 480GB": 989e12,
    "NVIDIA A100-SXM4-40GB": 312e12,  # Polaris
    "NVIDIA A100-SXM4-80GB": 312e12,
    "NVIDIA A100-PCIE-40GB": 312e12,
    "NVIDIA A100 80GB PCIe": 312e12,
    "NVIDIA L40S": 362e12,
    "NVIDIA L4": 121e12,
    "NVIDIA A10": 125e12,
}


def peak_flops(info: DeviceInfo) -> Optional[Tuple[float, str]]:
    """The bf16 dense peak of ``info``'s GPU and how to say it, or None (not a GPU named here)."""
    if info.kind != "cuda" or info.name not in PEAK_BF16_FLOPS:
        return None
    flops = PEAK_BF16_FLOPS[info.name]
    return flops, "bf16 dense peak of the {}, {:.0f} TFLOP/s".format(info.name, flops / 1e12)


def mfu(model_flops_per_second: float, info: DeviceInfo) -> Optional[float]:
    """Model FLOP/s as a fraction of the device's named bf16 peak (None where no peak is named)."""
    peak = peak_flops(info)
    if peak is None or not model_flops_per_second == model_flops_per_second:  # NaN: nothing measured
        return None
    return model_flops_per_second / peak[0]


def utilisation(model_flops_per_second: float, info: DeviceInfo) -> Tuple[Dict[str, float], Optional[str]]:
    """A GPU run's model TFLOP/s and MFU, as a run records them, and the note naming the peak (None
    without MFU). Model FLOPs are the exercise's own count: 6 x parameters x tokens plus attention."""
    figures = {"model_tflops": round(model_flops_per_second / 1e12, 1)}
    share = mfu(model_flops_per_second, info)
    if share is None:
        return figures, None
    figures["mfu"] = round(share, 3)
    return figures, "MFU is model FLOP/s (6 x parameters x tokens + attention) over the {}.".format(
        peak_flops(info)[1])  # type: ignore[index]
