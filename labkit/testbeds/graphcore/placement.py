"""Where the MNIST exercise trains (an IPU when PopTorch sees one attached, else CUDA, MPS or the CPU),
and in which precision; and how a PopTorch model gives its IPUs back."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from labkit import devices
from labkit.accelerator import AcceleratorError, Precision, describe, resolve_precision

__all__ = ["choose_device", "choose_precision", "releasing", "poptorch_says", "POPTORCH_HELP"]

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


def _release(model: Any) -> None:
    # Only a model that compiled holds IPUs: PopTorch's detachFromDevice raises poptorch.Error
    # ("Model has not been compiled or has been destroyed.") for one that never did
    # (python/_poplar_executor.py, PoplarExecutor.detachFromDevice).
    if model.isAttachedToDevice():
        model.detachFromDevice()


@contextlib.contextmanager
def releasing(model: Any) -> Iterator[Any]:
    """Detach the PopTorch ``model`` from its IPUs when the block ends, if it holds them. When the
    block raises, that error is the one raised: a failure to detach then does not replace it."""
    try:
        yield model
    except BaseException:
        with contextlib.suppress(Exception):
            _release(model)
        raise
    _release(model)


def poptorch_says(error: BaseException) -> str:
    """A poptorch.Error's message on one line ("Failed to acquire 2 IPU(s); No device found ..."),
    without the C++ file and line that ``str()`` of the error starts with."""
    message = getattr(error, "message", "") or str(error)
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())
