"""Named bf16 peaks of NVIDIA GPUs and model FLOP utilisation (MFU) against them.

    peak_flops(info)          # (989e12, "bf16 dense peak of the NVIDIA H200, 989 TFLOP/s") or None
    mfu(model_flops_per_second, info)   # 0.41, or None off a GPU whose peak is named here
    utilisation(model_flops_per_second, info)   # ({"model_tflops": 405.2, "mfu": 0.41}, the note saying against what)

The figures are NVIDIA's datasheet dense (no sparsity) bf16 tensor-core peaks, by the name
``torch.cuda.get_device_name`` gives. A GPU not named here gets no MFU rather than a guessed one.
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from labkit.accelerator.precision import DeviceInfo

__all__ = ["PEAK_BF16_FLOPS", "peak_flops", "mfu", "utilisation"]

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
