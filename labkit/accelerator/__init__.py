"""One accelerator policy for every portable training path: precision, micro-batches, how a step is launched.

    from labkit import accelerator
    info = accelerator.describe(device)                       # DeviceInfo: kind, name, capability, memory
    precision = accelerator.resolve_precision("auto", info)   # bf16 on an Ampere+ GPU, fp32 on a CPU
    with precision.autocast(device): loss = model(x, y)
    micro = accelerator.choose_micro_batch("auto", 1024, probe, device=device, key={"model": "bert-large"})
    step = accelerator.CapturedStep(step_fn, (x, y), device)  # a CUDA graph on a GPU, eager on a CPU

On a CPU nothing changes: fp32, the whole batch, eager steps (CPU numbers and golden copies stay).
On a GPU: bf16 autocast where the GPU has it (Ampere or newer; fp32 on older ones), the largest
micro-batch a measured probe fits (cached per device, model and sequence length) with gradient
accumulation keeping the global batch, and a step captured once and replayed where shapes are fixed.
torch is imported lazily: ``import labkit.accelerator`` costs nothing where torch is absent.
"""

from __future__ import annotations

from labkit.accelerator.launch import LAUNCH_MODES, CapturedStep, measure_step_seconds
from labkit.accelerator.micro_batch import (Accumulation, MicroBatch, NothingFits, accumulate, choose_micro_batch, fits,
                                            is_out_of_memory, micro_batch_cache_file, probe_micro_batch)
from labkit.accelerator.peaks import PEAK_BF16_FLOPS, mfu, peak_flops, utilisation
from labkit.accelerator.precision import (PRECISIONS, TESTBED_PRECISION, AcceleratorError, DeviceInfo, Precision,
                                          describe, device_info, resolve_precision)

__all__ = [
    "PRECISIONS", "DeviceInfo", "describe", "device_info", "Precision", "resolve_precision", "TESTBED_PRECISION",
    "MicroBatch", "choose_micro_batch", "probe_micro_batch", "micro_batch_cache_file", "is_out_of_memory",
    "fits", "Accumulation", "accumulate", "NothingFits", "LAUNCH_MODES", "CapturedStep", "measure_step_seconds",
    "PEAK_BF16_FLOPS", "peak_flops", "mfu", "utilisation", "AcceleratorError",
]
