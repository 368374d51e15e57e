"""Which accelerators and vendor SDKs are present, and what a run ran on.

Nothing here imports a vendor SDK at module import: each probe imports lazily, so labkit
imports everywhere (a laptop, a JupyterHub, a testbed login node).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import platform
import sys
from typing import Any, Dict, Mapping, Optional

from labkit.errors import LabkitError

__all__ = ["module_available", "cuda_available", "mps_available", "torch_device", "environment",
           "DeviceError"]


#: A sweep worker's share of the machine, as ``labkit.sweep.task.share_env`` puts it in
#: its kernels' environment; every run records it, so it is read here, below the sweep.
SHARE_VARIABLES = {"workers": "LABKIT_SWEEP_WORKERS", "cores": "LABKIT_SWEEP_CORES", "threads": "LABKIT_SWEEP_THREADS"}


def recorded_share(environ: Mapping[str, str]) -> Optional[Dict[str, int]]:
    """The share a sweep gave this process (from its environment), or None outside a sweep."""
    try:
        return {key: int(environ[name]) for key, name in SHARE_VARIABLES.items()}
    except (KeyError, ValueError):
        return None


class DeviceError(LabkitError, RuntimeError):
    """The requested device or vendor stack is not here; the message says how to get it."""

    shown_as = "DeviceError"


def module_available(name: str) -> bool:
    """True when ``name`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def mps_available() -> bool:
    import torch

    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def torch_device(requested: str = "auto"):
    """The torch device for a portable run: for "auto" CUDA, else Apple MPS, else CPU; "cuda", "mps"
    or "cpu" asked for and absent is a :class:`DeviceError`, never a silent fallback."""
    import torch

    if requested == "auto":
        if cuda_available():
            return torch.device("cuda")
        if mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    if requested == "cuda" and not cuda_available():
        raise DeviceError("device='cuda' was asked for, but torch sees no CUDA GPU here "
                          "(torch.cuda.is_available() is False). Use device='auto' or 'cpu'.")
    if requested == "mps" and not mps_available():
        raise DeviceError("device='mps' was asked for, but Apple MPS is not available here. "
                          "Use device='auto' or 'cpu'.")
    return torch.device(requested)


def device_name(device: Any) -> str:
    """A human name for a torch device: the GPU model, or the CPU's."""
    kind = getattr(device, "type", str(device))
    if kind == "cuda":
        import torch

        return torch.cuda.get_device_name(device)
    if kind == "cpu":
        return platform.processor() or platform.machine()
    return kind


def environment(device: Any = None, extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Versions and hardware for a run record."""
    import labkit

    env: Dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "labkit": labkit.__version__,
    }
    for module in ("torch", "torchvision", "numpy", "transformers", "onnxruntime", "poptorch"):
        if module not in sys.modules and (module not in ("torch", "numpy") or not module_available(module)):
            continue
        try:
            version = getattr(importlib.import_module(module), "__version__", None)
        except Exception:  # a broken optional install must not break a run record
            continue
        if version:
            env[module] = version
    if device is not None:
        env["device"] = str(device)
        env["device_name"] = device_name(device)
    if "torch" in sys.modules:
        env["torch_threads"] = sys.modules["torch"].get_num_threads()
    part = recorded_share(os.environ)
    if part:  # a sweep worker's share: its timings are per share, not the whole machine's
        env["sweep_share"] = "{threads} of {cores} cores ({workers} workers at once)".format(**part)
    if extra:
        env.update(extra)
    return env
