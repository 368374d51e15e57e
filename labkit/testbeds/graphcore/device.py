"""Where the MNIST exercise trains (an IPU when PopTorch sees one attached, else CUDA, MPS or the CPU),
and in which precision.

    from labkit.testbeds.graphcore.device import choose_device, choose_precision
    choose_device("auto")                # "ipu", or a torch device
    choose_precision("auto", device)     # labkit.accelerator.Precision: TF32 on an Ampere+ GPU, else fp32
"""

from __future__ import annotations

from typing import Any

from labkit import devices
from labkit.accelerator import AcceleratorError, Precision, describe, resolve_precision

__all__ = ["choose_device", "choose_precision", "POPTORCH_HELP"]

POPTORCH_HELP = (
    "PopTorch is not importable here. It ships only inside Graphcore's Poplar SDK: on a Graphcore "
    "testbed node, enable the SDK (`source <poplar_sdk>/enable`), create a virtual environment, "
    "`pip install <poplar_sdk>/poptorch-*.whl`, then `pip install -e <labkit checkout>` in it. "
    "Run the notebook as a job that owns an IPU: `srun --ipus=1 papermill notebooks/graphcore/mnist.ipynb out.ipynb`. "
    "Elsewhere use device='auto' (CUDA, Apple MPS or CPU)."
)


def _ipu_available() -> bool:
    if not devices.module_available("poptorch"):
        return False
    import poptorch

    return bool(poptorch.ipuHardwareIsAvailable())


def choose_device(requested: str) -> Any:
    """'ipu', or a torch device; see the module docstring for the order."""
    if requested == "ipu":
        if not devices.module_available("poptorch"):
            raise devices.DeviceError("device='ipu' was asked for, but " + POPTORCH_HELP)
        if not _ipu_available():
            raise devices.DeviceError(
                "device='ipu': PopTorch is installed but no IPU is attached to this process. On the "
                "Graphcore testbed, run the job under Slurm with `srun --ipus=1 papermill ...`.")
        return "ipu"
    if requested == "auto" and _ipu_available():
        return "ipu"
    return devices.torch_device(requested)


def choose_precision(requested: str, device: Any) -> Precision:
    """The precision of a run on ``device`` (the policy's, :func:`labkit.accelerator.resolve_precision`:
    this network is small, so its steps are launch-bound). An IPU runs the tutorial in fp32."""
    if device == "ipu":
        if requested not in ("auto", "fp32"):
            raise AcceleratorError("precision={!r} is not available on an IPU here: the tutorial trains in fp32; "
                                   "allowed there: 'auto', 'fp32'.".format(requested))
        return Precision("fp32", "precision={!r}: fp32 on the IPU, as the tutorial trains".format(requested))
    return resolve_precision(requested, describe(device), launch_bound=True)
